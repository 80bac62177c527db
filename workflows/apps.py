"""App config: workflow jobs, the runs that coordinator actions launch."""

from __future__ import annotations

from django.apps import AppConfig
from django.core import checks


class WorkflowsConfig(AppConfig):
    """Workflow jobs: each launch of an action, its nodes, their leases and outcomes."""

    name = "workflows"

    def ready(self) -> None:
        """Renew the leases of running nodes from each worker's heartbeat thread; check the site action types."""
        from workflows import leases  # noqa: PLC0415 - leases imports the models, which load only once the app registry is ready (AppConfig.ready)
        from workflows.actions import site  # noqa: PLC0415 - loaded with the app, like leases: the check reads the settings

        leases.register()
        checks.register(site.check_registrations)
