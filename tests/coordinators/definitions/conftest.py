"""The definitions tests are pure: they run without pytest-django (`-p no:django`)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _fast_password_hashing() -> None:
    """Override the project-wide autouse fixture that needs pytest-django's `settings`."""
