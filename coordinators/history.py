"""Which command changes coordinator statuses now: each coordinator command names itself when it loads.

The actor itself (a context variable, `acting_as`, `current_actor`) lives in kernel.history,
shared by every app. A command queued for a user (the `owner` of its row: the services pass
the caller) is recorded as `<command> (<user>)`; that user is looked up once, on the first
change the command records.
"""

from __future__ import annotations

from functools import partial

from kernel.history import act_as
from xcommands.choices import CommandStatus
from xcommands.models import Command


def _queued_by(name: str, key: str) -> str:
    """`<command> (<user>)` for the running command of this name and key, or the name alone."""
    # Commands of one key run one at a time: the running one of this name is this command.
    user = (
        Command.objects.filter(key=key, name=name, status=CommandStatus.RUNNING)
        .order_by("seq").values_list("owner__username", flat=True).first()
    )
    return f"{name} ({user})" if user else name


def act_as_command(name: str, key: str) -> None:
    """Name the running command until the next one is named (each names itself when it loads)."""
    act_as(name, partial(_queued_by, name, key))
