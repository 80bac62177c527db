"""App config: Batches: submissions expanding into jobs that walk a staged pipeline."""

from __future__ import annotations

from django.apps import AppConfig


class BatchesConfig(AppConfig):
    """Batches: submissions expanding into jobs that walk a staged pipeline."""

    name = "batches"

    def ready(self) -> None:
        """Register the batch operation type and the commands."""
        from batches import commands, operation  # noqa: F401, PLC0415 - registration; they import the models, which load only once the app registry is ready (AppConfig.ready)
