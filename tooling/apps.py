"""App config of the tooling (its management commands: bench, chaos)."""

from __future__ import annotations

from django.apps import AppConfig


class ToolingConfig(AppConfig):
    """Registers the tooling so `manage.py bench` and `manage.py chaos` load."""

    name = "tooling"
    verbose_name = "Benchmarks and drills"
