"""Batch API tests: `ann` is the ingest's owner, with a token (bob, carol and admin: tests/support/users.py)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

from tests.support.batches import Ingest


@pytest.fixture
def ann(ingest: Ingest) -> User:
    """The ingest's owner (submits the batches), with an API token."""
    Token.objects.get_or_create(user=ingest.owner, defaults={"key": "ann-token".ljust(40, "0")})
    return ingest.owner
