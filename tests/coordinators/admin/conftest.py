"""Admin tests: a logged-in staff operator (commands run in process: tests/support/engine.py)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client


@pytest.fixture
def operator(client: Client) -> Client:
    """The test client logged in as a staff superuser."""
    user = User.objects.create_superuser("operator", "operator@example.com", "pw")
    client.force_login(user)
    return client
