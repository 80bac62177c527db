"""App config: The command engine: durable per-key command queues, leases, retries, rollback."""

from __future__ import annotations

from django.apps import AppConfig
from django.db.backends.signals import connection_created

from xcommands.sqlite_busy import on_connection_created


class XcommandsConfig(AppConfig):
    """The command engine: durable per-key command queues, leases, retries, rollback."""

    name = "xcommands"

    def ready(self) -> None:
        """Wire the engine in every process, whatever it imported first: command tasks run `engine.process`, keyed jobs register."""
        from xcommands import base, engine, keyed  # noqa: F401, PLC0415 - models load once the app registry is ready; keyed registers

        base.run_commands_with(engine.process)

        # SQLite: wait for the write lock by polling, not by SQLite's growing sleeps (ADR 0025).
        connection_created.connect(on_connection_created, dispatch_uid="xcommands.sqlite_busy")
