"""App config: resilient operations."""

from __future__ import annotations

from django.apps import AppConfig


class OperationsConfig(AppConfig):
    """Operations split into partition jobs on the command engine, completed exactly once."""

    name = "operations"
