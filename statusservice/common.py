"""What every periodic service shares: the batch size of a pass, queueing a command once, the tick's period."""

from __future__ import annotations

from django.conf import settings

from xcommands.base import XCommand
from xcommands.choices import CommandStatus
from xcommands.models import Command
from xcommands.queue import enqueue

#: The most rows one pass of a service takes (the next pass takes the rest).
BATCH = 2000


def queue_once(command: XCommand) -> bool:
    """Enqueue unless a command of the same name is already pending for the key; whether it was queued."""
    name = type(command).command_name
    if Command.objects.filter(key=command.job_key(), name=name, status=CommandStatus.PENDING).exists():
        return False
    enqueue(command)
    return True


def setting_seconds(name: str, default: float) -> float:
    """A period setting in seconds (a float)."""
    return float(getattr(settings, name, default))


def tick_seconds() -> float:
    """How often beat sends the tick: SERVICE_TICK_SECONDS, or a shorter service period when one is set."""
    return max(1.0, min(
        setting_seconds("SERVICE_TICK_SECONDS", 10), setting_seconds("STATUS_SERVICE_SECONDS", 10),
        setting_seconds("COMMAND_SWEEP_SECONDS", 15),
    ))
