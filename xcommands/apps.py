"""App config: The command engine: durable per-key command queues, leases, retries, rollback."""

from __future__ import annotations

from django.apps import AppConfig


class XcommandsConfig(AppConfig):
    """The command engine: durable per-key command queues, leases, retries, rollback."""

    name = "xcommands"
