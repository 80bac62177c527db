"""Ignore: FAILED, KILLED or TIMEDOUT actions, or a FAILED or KILLED job, become IGNORED (DG_CommandLineTool -ignore).

An IGNORED action no longer counts towards its job's status (a job whose other actions
succeeded ends SUCCEEDED), and an IGNORED job no longer counts towards its bundle's. Oozie's
rules (CoordActionsIgnoreXCommand, CoordChangeXCommand status=IGNORED) are checked when the
request comes in, so a caller gets a 4xx at once and nothing is queued, and again inside the
command under the job's key, where a request overtaken by another verb is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from coordinators.choices import (
    ACTION_IGNORABLE,
    JOB_IGNORABLE,
    JOB_MATERIALIZING,
    ActionStatus,
    JobStatus,
)
from coordinators.commands.actions import CoordJobStatusXCommand
from coordinators.commands.base import JobCommand
from coordinators.commands.rerun import MAX_RERUN_ACTIONS, RerunRefused, _dates, _numbers
from coordinators.models import CoordinatorAction, CoordinatorJob
from xcommands.errors import PreconditionFailed
from xcommands.queue import enqueue

IGNORE_TYPES = ("action", "date")
MAX_IGNORE_ACTIONS = MAX_RERUN_ACTIONS


class IgnoreRefused(ValueError):  # noqa: N818 - reads as the outcome
    """An ignore request that cannot be carried out: bad scope, nothing to ignore, or actions not in an ignorable state."""


def select_ignorable(job: CoordinatorJob, ignore_type: str, scope: str) -> list[CoordinatorAction]:
    """The actions `scope` names (numbers `1,3-4` or dates `A::B, C`), all FAILED, KILLED or TIMEDOUT; else IgnoreRefused.

    As in Oozie, numbers not materialized yet are passed over, a scope naming no existing
    action is refused, and one naming any action in another state is refused whole, listing
    the action numbers that are not eligible.
    """
    if ignore_type not in IGNORE_TYPES:
        raise IgnoreRefused(f"ignore type {ignore_type!r}: use action or date")
    if not scope or not scope.strip():
        raise IgnoreRefused(f"-{ignore_type} is required: name the actions to ignore")
    if job.status in (JobStatus.PREP, JobStatus.PREPSUSPENDED, JobStatus.PREPPAUSED):
        raise IgnoreRefused(f"no actions are materialized to ignore: coordinator job {job.id} is {job.status}")
    try:
        if ignore_type == "action":
            ranges = _numbers(scope)
            if sum(high - low + 1 for low, high in ranges) > MAX_IGNORE_ACTIONS:
                raise IgnoreRefused(f"-action names more than {MAX_IGNORE_ACTIONS} actions")
            wanted = sorted({n for low, high in ranges for n in range(low, high + 1)})
            chosen = list(job.actions.filter(number__in=wanted).order_by("number"))
        else:
            condition = Q()
            for low, high in _dates(scope):
                condition |= Q(nominal_time__gte=low, nominal_time__lte=high)
            chosen = list(job.actions.filter(condition).order_by("number")[: MAX_IGNORE_ACTIONS + 1])
            if len(chosen) > MAX_IGNORE_ACTIONS:
                raise IgnoreRefused(f"-date names more than {MAX_IGNORE_ACTIONS} actions")
    except RerunRefused as exc:  # the scope syntax is the rerun's: same messages, another verb
        raise IgnoreRefused(str(exc)) from None
    if not chosen:
        raise IgnoreRefused(f"no actions are eligible to ignore: no action of {job.id} matches -{ignore_type} {scope}")
    ineligible = [action for action in chosen if action.status not in ACTION_IGNORABLE]
    if ineligible:
        named = ",".join(str(action.number) for action in ineligible[:50]) + ("..." if len(ineligible) > 50 else "")
        raise IgnoreRefused(
            f"part or all actions are not eligible to ignore, check state of action number(s) [{named}] "
            "(only FAILED, KILLED or TIMEDOUT actions can be ignored)"
        )
    return chosen


def check_job_ignorable(job: CoordinatorJob) -> None:
    """Only a FAILED or KILLED job with no verb in flight may be ignored (CoordChangeXCommand); else IgnoreRefused."""
    if job.status not in JOB_IGNORABLE or job.pending:
        raise IgnoreRefused(
            f"only a FAILED or KILLED non-pending coordinator job can be changed to IGNORED; "
            f"{job.id} is {job.status}{' and pending' if job.pending else ''}"
        )


@dataclass
class CoordActionsIgnoreXCommand(JobCommand):
    """FAILED, KILLED or TIMEDOUT actions named by number or date range become IGNORED; a running job's status follows."""

    job_id: str
    ignore_type: str
    scope: str

    def verify_precondition(self) -> None:
        """Every named action must still be ignorable (a rerun may have overtaken the request)."""
        try:
            self.actions = select_ignorable(self.job, self.ignore_type, self.scope)
        except IgnoreRefused as exc:
            raise PreconditionFailed(str(exc)) from None

    def execute(self) -> dict[str, Any]:
        """IGNORED, not pending; when they ended stays as it was (ignoring is not an end)."""
        for action in self.actions:
            ended = action.ended_at
            action.transition_to(ActionStatus.IGNORED)
            action.ended_at = ended
            action.pending = False
            action.save(update_fields=["status", "pending"])
        if self.job.status in JOB_MATERIALIZING:
            # RUNNINGWITHERROR whose errors are all ignored is RUNNING again (or ends, if done).
            enqueue(CoordJobStatusXCommand(job_id=self.job_id))
        return {"ignored": [action.id for action in self.actions], "job_status": self.job.status}


@dataclass
class CoordIgnoreXCommand(JobCommand):
    """A FAILED or KILLED job becomes IGNORED: it materializes nothing more and no longer counts in its bundle."""

    job_id: str

    def verify_precondition(self) -> None:
        """The job must still be FAILED or KILLED (a `-change status=RUNNING` may have overtaken the request).

        Its pending flag was checked when the request came in; commands queued before this one
        have run by now (one at a time per job, in order), so only the status is checked again.
        """
        if self.job.status not in JOB_IGNORABLE:
            raise PreconditionFailed(f"coordinator job {self.job_id} is {self.job.status}; only FAILED or KILLED jobs are ignored")

    def execute(self) -> dict[str, str]:
        """IGNORED, not pending, done materializing (as Oozie sets it); the bundle action mirrors it on save."""
        job = self.job
        job.transition_to(JobStatus.IGNORED)
        job.pending = False
        job.done_materializing = True
        job.next_materialize_at = None
        job.save(update_fields=["status", "pending", "done_materializing", "next_materialize_at"])
        return {"status": job.status}
