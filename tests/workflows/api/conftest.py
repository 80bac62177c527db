"""Fixtures of the workflow API tests: the API test users, commands and nodes run in process."""

from __future__ import annotations

from tests.coordinators.api.conftest import admin, ann, bob, carol
from tests.coordinators.runtime.conftest import in_process_engine

__all__ = ["admin", "ann", "bob", "carol", "in_process_engine"]
