"""Import the operation commands in every worker (their Celery tasks register on import)."""

from __future__ import annotations

from operations import commands  # noqa: F401
