"""App config: The command engine: durable per-key command queues, leases, retries, rollback."""

from __future__ import annotations

from django.apps import AppConfig


class XcommandsConfig(AppConfig):
    """The command engine: durable per-key command queues, leases, retries, rollback."""

    name = "xcommands"

    def ready(self) -> None:
        """Register the engine's own commands (keyed jobs) in every process, whatever it imported first."""
        from django.db.backends.signals import connection_created

        from xcommands import keyed  # noqa: F401 - registration
        from xcommands.sqlite_busy import on_connection_created

        # SQLite: wait for the write lock by polling, not by SQLite's growing sleeps (ADR 0025).
        connection_created.connect(on_connection_created, dispatch_uid="xcommands.sqlite_busy")
