"""Fixtures of the native API tests: users, tokens, in-process command engine."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from tests.coordinators.api.factories import user
from tests.coordinators.runtime.conftest import in_process_engine, run_pending_commands

__all__ = ["in_process_engine", "run_pending_commands"]


@pytest.fixture
def ann(db: None) -> User:
    """A submitter."""
    return user("ann")


@pytest.fixture
def bob(db: None) -> User:
    """Another submitter, who has no rights on ann's jobs."""
    return user("bob")


@pytest.fixture
def carol(db: None) -> User:
    """A member of the `ops` group (named in ACLs)."""
    return user("carol", groups=("ops",))


@pytest.fixture
def admin(db: None) -> User:
    """A staff user: may act on every job."""
    return user("root", staff=True)
