"""Fixtures of the Oozie Web Services API tests (users and the in-process engine shared with the native API's)."""

from __future__ import annotations

from tests.coordinators.api.conftest import admin, ann, bob, carol
from tests.coordinators.runtime.conftest import in_process_engine

__all__ = ["admin", "ann", "bob", "carol", "in_process_engine"]
