"""App config: Coordinator jobs and actions: definitions, EL, commands, launchers, SLA."""

from __future__ import annotations

from django.apps import AppConfig


class CoordinatorsConfig(AppConfig):
    """Coordinator jobs and actions: definitions, EL, commands, launchers, SLA."""

    name = "coordinators"

    def ready(self) -> None:
        """Hear the starts and ends of the workflow runs that actions launch."""
        from coordinators import bulk_verbs, run_events  # noqa: PLC0415 - they import models, which load only once the app registry is ready (AppConfig.ready)
        from operations.bulk import register_kind  # noqa: PLC0415 - it imports operations' models, which load only once the app registry is ready (AppConfig.ready)

        run_events.register()
        register_kind("coordinator", bulk_verbs.act)
