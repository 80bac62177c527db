"""Bundle admin tests: a logged-in staff operator; bundles built by `make_bundle` (tests/support/bundles.py)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client


@pytest.fixture
def operator(client: Client) -> Client:
    """The test client logged in as a staff superuser (a job admin)."""
    user = User.objects.create_superuser("operator", "operator@example.com", "pw")
    client.force_login(user)
    return client
