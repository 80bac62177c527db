"""Operator actions on queued commands, shared by the admin, the API and the CLI."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from xcommands.choices import CommandStatus, can_transition
from xcommands.engine import ring_next_head
from xcommands.errors import IllegalCommandTransition
from xcommands.models import Command
from xcommands.queue import ring_on_commit, ring_stale_after
from xcommands.sql import lock_key


def _entry(action: str, user: str) -> dict[str, str]:
    return {"outcome": action, "by": user, "at": timezone.now().isoformat(timespec="milliseconds")}


def retry_command(command_id: int, user: str = "operator") -> Command:
    """Put a PARKED command back at the head of its key with a fresh set of attempts."""
    with transaction.atomic():
        command = Command.objects.select_for_update().get(pk=command_id)
        if not can_transition(command.status, CommandStatus.PENDING) or command.status != CommandStatus.PARKED:
            raise IllegalCommandTransition(
                f"command {command_id} is {command.status}; only a PARKED command can be retried"
            )
        now = timezone.now()
        command.status = CommandStatus.PENDING
        command.attempts = 0
        command.not_before = now
        command.finished_at = None
        command.wake_at = now + ring_stale_after()
        command.history = [*command.history, _entry("retried by operator", user)]
        command.save(update_fields=["status", "attempts", "not_before", "finished_at", "wake_at", "history"])
        ring_on_commit(command)
    return command


def skip_command(command_id: int, user: str = "operator") -> Command:
    """Cancel a PARKED (or still PENDING) command so its key moves on to the next one."""
    with transaction.atomic():
        command = Command.objects.select_for_update().get(pk=command_id)
        if command.status not in (CommandStatus.PARKED, CommandStatus.PENDING) or not can_transition(
            command.status, CommandStatus.CANCELLED
        ):
            raise IllegalCommandTransition(
                f"command {command_id} is {command.status}; only PARKED or PENDING commands can be skipped"
            )
        now = timezone.now()
        lock_key(command.key)
        command.status = CommandStatus.CANCELLED
        command.finished_at = now
        command.wake_at = None
        command.history = [*command.history, _entry("skipped by operator", user)]
        command.save(update_fields=["status", "finished_at", "wake_at", "history"])
        ring_next_head(command.key, now)
    return command
