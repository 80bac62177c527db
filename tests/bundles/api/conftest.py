"""Fixtures of the bundle API tests: the native API's users (tokens, passwords, an ACL group, an admin)."""

from __future__ import annotations

from tests.coordinators.api.conftest import admin, ann, bob, carol

__all__ = ["admin", "ann", "bob", "carol"]
