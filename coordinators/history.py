"""Who is changing statuses now: the command (or worker) that status changes are recorded as done by.

The command engine runs one command at a time per thread; `JobCommand.load_state` names the
command here, and code outside commands (a worker's report) wraps its work in `acting_as(...)`.
A context variable, so threads never see each other's name. A command queued for a user (the
`owner` of its row: the services pass the caller) is recorded as `<command> (<user>)`; that
user is looked up once, on the first change the command records.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from xcommands.choices import CommandStatus
from xcommands.models import Command


@dataclass
class Actor:
    """A name, and for a command its key (to find who queued it), resolved once."""

    name: str
    key: str = ""
    resolved: str | None = None


_actor: ContextVar[Actor | None] = ContextVar("coordinators_status_actor", default=None)


def current_actor() -> str:
    """The name status changes are recorded under now ('' when nobody said)."""
    actor = _actor.get()
    if actor is None:
        return ""
    if actor.resolved is None:
        actor.resolved = actor.name
        if actor.key:
            # Commands of one key run one at a time: the running one of this name is this command.
            user = (
                Command.objects.filter(key=actor.key, name=actor.name, status=CommandStatus.RUNNING)
                .order_by("seq").values_list("owner__username", flat=True).first()
            )
            if user:
                actor.resolved = f"{actor.name} ({user})"
    return actor.resolved


def act_as_command(name: str, key: str) -> None:
    """Name the running command until the next one is named (each names itself when it loads)."""
    _actor.set(Actor(name, key))


@contextmanager
def acting_as(name: str) -> Iterator[None]:
    """Name the actor for the block, then restore the previous one."""
    token = _actor.set(Actor(name))
    try:
        yield
    finally:
        _actor.reset(token)
