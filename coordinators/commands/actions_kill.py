"""Kill a range of a job's actions, by number or nominal date (DG_CommandLineTool `-kill ID -action|-date`).

The actions of the scope still live (WAITING, READY, SUBMITTED, RUNNING, SUSPENDED) become
KILLED and their runs are killed, their tasks revoked; the job goes on with the others. As
Oozie's CoordActionsKillXCommand: a finished job is refused (E1020), numbers not materialized
are passed over, and actions already ended are left out. The selection is checked when the
request comes in, so a caller gets a 4xx at once and nothing is queued, and again inside the
command under the job's key, where a request overtaken by another verb kills only what is
still live (and is skipped if nothing is).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from coordinators.choices import (
    ACTION_ACTIVE,
    ACTION_PENDING,
    JOB_MATERIALIZING,
    JOB_TERMINAL,
    ActionStatus,
    IllegalTransition,
    JobStatus,
)
from coordinators.commands.actions import (
    STARTING_JOB_STATUSES,
    CoordActionReadyXCommand,
    CoordJobStatusXCommand,
)
from coordinators.commands.base import JobCommand
from coordinators.commands.rerun import MAX_RERUN_ACTIONS, RerunRefused, _dates, _numbers
from coordinators.models import CoordinatorAction, CoordinatorJob
from workflows.states import kill_workflows
from xcommands.errors import PreconditionFailed
from xcommands.queue import enqueue

KILL_TYPES = ("action", "date")
MAX_KILL_ACTIONS = MAX_RERUN_ACTIONS
#: The actions a scoped kill reaches: not yet ended (Oozie's CoordUtils.getCoordActions(..., active=true)).
ACTION_KILLABLE = ACTION_PENDING | ACTION_ACTIVE


class KillRefused(ValueError):  # noqa: N818 - reads as the outcome
    """A scoped kill whose type or scope cannot be read (bad syntax, too many actions): nothing is queued."""


class NothingToKill(IllegalTransition):
    """A scoped kill the job's state refuses: the job has ended, or no action of the scope is still live."""


def select_killable(
    job: CoordinatorJob, kill_type: str, scope: str, *, lock: bool = False
) -> list[CoordinatorAction]:
    """The live actions `scope` names (numbers `1,3-4` or dates `A::B, C`), by number; else KillRefused or NothingToKill.

    The scope syntax and its messages are the rerun's. Numbers not materialized are passed
    over and ended actions left out; a finished job, or a scope with no live action, is
    refused. `lock`: the rows are locked (inside the command's transaction).
    """
    if kill_type not in KILL_TYPES:
        raise KillRefused(f"kill type {kill_type!r}: use action or date")
    if not scope or not scope.strip():
        raise KillRefused(f"-{kill_type} is required: name the actions to kill")
    try:
        if kill_type == "action":
            ranges = _numbers(scope)
            if sum(high - low + 1 for low, high in ranges) > MAX_KILL_ACTIONS:
                raise KillRefused(f"-action names more than {MAX_KILL_ACTIONS} actions")
            condition = Q(number__in=sorted({n for low, high in ranges for n in range(low, high + 1)}))
        else:
            condition = Q()
            for low, high in _dates(scope):
                condition |= Q(nominal_time__gte=low, nominal_time__lte=high)
    except RerunRefused as exc:  # the scope syntax is the rerun's: same messages, another verb
        raise KillRefused(str(exc)) from None
    if job.status in JOB_TERMINAL:
        raise NothingToKill(f"coordinator job {job.id} is {job.status}: its actions cannot be killed")
    live: QuerySet[CoordinatorAction] = job.actions.filter(condition, status__in=sorted(ACTION_KILLABLE))
    if lock:
        live = live.select_for_update()
    chosen = list(live.order_by("number")[: MAX_KILL_ACTIONS + 1])
    if len(chosen) > MAX_KILL_ACTIONS:
        raise KillRefused(f"-{kill_type} names more than {MAX_KILL_ACTIONS} actions")
    if not chosen:
        if job.status in (JobStatus.PREP, JobStatus.PREPSUSPENDED, JobStatus.PREPPAUSED):
            raise NothingToKill(f"no actions are materialized to kill: coordinator job {job.id} is {job.status}")
        raise NothingToKill(
            f"no action of {job.id} in -{kill_type} {scope.strip()} can be killed "
            "(only WAITING, READY, SUBMITTED, RUNNING or SUSPENDED actions are)"
        )
    return chosen


@dataclass
class CoordActionsKillXCommand(JobCommand):
    """The live actions named by number or date range become KILLED, their runs killed; the job's status follows."""

    job_id: str
    kill_type: str
    scope: str

    def verify_precondition(self) -> None:
        """The job must not have ended and some action of the scope must still be live (another verb may have run)."""
        try:
            self.actions = select_killable(self.job, self.kill_type, self.scope, lock=True)
        except (KillRefused, NothingToKill) as exc:
            raise PreconditionFailed(str(exc)) from None

    def execute(self) -> dict[str, Any]:
        """KILLED, not pending, no more input checks; runs KILLED and their tasks revoked after commit."""
        now = timezone.now()
        reason = f"killed by -kill {self.job_id} -{self.kill_type} {self.scope.strip()}"[:4000]
        runs = [action.external_id for action in self.actions if action.status in ACTION_ACTIVE and action.external_id]
        freed = any(action.status in ACTION_ACTIVE for action in self.actions)
        for action in self.actions:
            action.transition_to(ActionStatus.KILLED, reason=reason)
            action.pending = False
            action.next_check_at = None
            action.save(update_fields=["status", "pending", "next_check_at"])
        kill_workflows(runs, now, reason=reason)
        if self.job.status in JOB_MATERIALIZING:
            # RUNNING with a KILLED action is RUNNINGWITHERROR (or ends, if nothing else is left).
            enqueue(CoordJobStatusXCommand(job_id=self.job_id))
        if freed and self.job.status in STARTING_JOB_STATUSES:
            # The slots the killed runs held go to the next READY actions (concurrency).
            enqueue(CoordActionReadyXCommand(job_id=self.job_id))
        return {"killed": [action.id for action in self.actions], "runs_killed": len(runs), "job_status": self.job.status}
