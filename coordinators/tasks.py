"""Import the coordinator commands in every worker (their Celery tasks register on import)."""

from __future__ import annotations

from coordinators import commands  # noqa: F401
