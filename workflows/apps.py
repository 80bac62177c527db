"""App config: workflow jobs, the runs that coordinator actions launch."""

from __future__ import annotations

from django.apps import AppConfig


class WorkflowsConfig(AppConfig):
    """Workflow jobs: each launch of an action, its nodes, their leases and outcomes."""

    name = "workflows"

    def ready(self) -> None:
        """Renew the leases of running nodes from each worker's heartbeat thread."""
        from workflows import leases  # noqa: PLC0415 - leases imports the models, which load only once the app registry is ready (AppConfig.ready)

        leases.register()
