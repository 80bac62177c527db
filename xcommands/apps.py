"""App config: The command engine: durable per-key command queues, leases, retries, rollback."""

from __future__ import annotations

from django.apps import AppConfig


class XcommandsConfig(AppConfig):
    """The command engine: durable per-key command queues, leases, retries, rollback."""

    name = "xcommands"

    def ready(self) -> None:
        """Register the engine's own commands (keyed jobs) in every process, whatever it imported first."""
        from xcommands import keyed  # noqa: F401 - registration
