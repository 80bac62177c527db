"""App config: Periodic services driven by celery beat: triggers, status, recovery."""

from __future__ import annotations

from django.apps import AppConfig


class StatusserviceConfig(AppConfig):
    """Periodic services driven by celery beat: triggers, status, recovery."""

    name = "statusservice"

    def ready(self) -> None:
        """Register the task modules Celery's autodiscovery (which imports `tasks`) does not find."""
        from statusservice import sla  # noqa: F401, PLC0415 - it imports the SLA models (coordinators.sla), which load only once the app registry is ready (AppConfig.ready)
