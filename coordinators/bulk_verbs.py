"""Bulk verbs on coordinator jobs (operations.bulk): one selected job's verb, checked and carried out in place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coordinators.commands import CoordKillXCommand, CoordResumeXCommand, CoordSuspendXCommand
from coordinators.commands.control import check_verb
from coordinators.models import CoordinatorJob
from kernel.permissions import check_modify
from xcommands.base import XCommand


def act(job_id: str, verb: str, user: Any) -> None:
    """Kill, suspend or resume one coordinator for `user`, in the caller's transaction (under the job's key).

    Raises JobPermissionDenied, IllegalTransition or DoesNotExist to refuse, as the single verbs do.
    """
    job = CoordinatorJob.objects.select_for_update().get(pk=job_id)
    check_modify(user, job)
    check_verb(job, verb)
    commands: dict[str, Callable[..., XCommand]] = {
        "kill": CoordKillXCommand, "suspend": CoordSuspendXCommand, "resume": CoordResumeXCommand,
    }
    commands[verb](job_id=job_id).run()
