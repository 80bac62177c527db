"""Import the operation commands in every worker (their Celery tasks register on import)."""

from __future__ import annotations

from operations import bulk, commands  # noqa: F401 - commands and the bulk-verb types register on import
