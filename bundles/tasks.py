"""Import the bundle commands in every worker (their Celery tasks register on import)."""

from __future__ import annotations

from bundles import commands  # noqa: F401
