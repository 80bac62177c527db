"""Control verbs on a coordinator job: kill, suspend, resume (spec 6.1.2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from coordinators.choices import (
    ACTION_ACTIVE,
    JOB_TERMINAL,
    ActionStatus,
    IllegalTransition,
    JobStatus,
)
from coordinators.commands.actions import CoordActionReadyXCommand
from coordinators.commands.base import JobCommand
from coordinators.commands.lifecycle import CoordMaterializeXCommand
from coordinators.models import CoordinatorJob, StatusChange, record_changes
from workflows.states import kill_workflows
from xcommands.errors import PreconditionFailed
from xcommands.queue import enqueue

SUSPEND_TARGET = {
    JobStatus.PREP: JobStatus.PREPSUSPENDED,
    JobStatus.RUNNING: JobStatus.SUSPENDED,
    JobStatus.RUNNINGWITHERROR: JobStatus.SUSPENDEDWITHERROR,
    JobStatus.PAUSED: JobStatus.SUSPENDED,
    JobStatus.PAUSEDWITHERROR: JobStatus.SUSPENDEDWITHERROR,
}
RESUME_TARGET = {
    JobStatus.PREPSUSPENDED: JobStatus.PREP,
    JobStatus.SUSPENDED: JobStatus.RUNNING,
    JobStatus.SUSPENDEDWITHERROR: JobStatus.RUNNINGWITHERROR,
}


@dataclass
class CoordKillXCommand(JobCommand):
    """Kill the job and every action not yet finished; revoke running tasks."""

    job_id: str

    def verify_precondition(self) -> None:
        """A finished job cannot be killed."""
        if self.job.status in JOB_TERMINAL:
            raise PreconditionFailed(f"job {self.job_id} is already {self.job.status}")

    def execute(self) -> dict[str, Any]:
        """KILLED job, KILLED actions, their runs KILLED and their tasks revoked."""
        now = timezone.now()
        live = self.job.actions.select_for_update().filter(
            status__in=(ActionStatus.WAITING, ActionStatus.READY, *ACTION_ACTIVE)
        )
        before = [(a.id, a.status) for a in live]
        runs = [a.external_id for a in live if a.status in ACTION_ACTIVE and a.external_id]
        killed = live.update(status=ActionStatus.KILLED, pending=False, ended_at=now, last_modified=now)
        for action_id, status in before:
            record_changes(StatusChange.Kind.ACTION, action_id, self.job_id,
                           [(status, ActionStatus.KILLED, now, f"coordinator job {self.job_id} killed")])
        kill_workflows(runs, now, reason=f"coordinator job {self.job_id} killed")
        self.job.transition_to(JobStatus.KILLED)
        self.job.pending = False
        self.job.save(update_fields=["status", "pending"])
        return {"status": self.job.status, "actions_killed": killed}


@dataclass
class CoordSuspendXCommand(JobCommand):
    """Suspend: nothing is materialized or started until resume (running tasks finish)."""

    job_id: str

    def verify_precondition(self) -> None:
        """Only PREP, RUNNING(WITHERROR) and PAUSED(WITHERROR) jobs suspend."""
        if self.job.status not in SUSPEND_TARGET:
            raise PreconditionFailed(f"job {self.job_id} is {self.job.status}; it cannot be suspended")

    def execute(self) -> dict[str, str]:
        """Move to the suspended status of the current one."""
        self.job.transition_to(SUSPEND_TARGET[JobStatus(self.job.status)])
        self.job.save(update_fields=["status"])
        return {"status": self.job.status}


@dataclass
class CoordResumeXCommand(JobCommand):
    """Resume: back to PREP/RUNNING; missed actions are materialized, ready ones start."""

    job_id: str

    def verify_precondition(self) -> None:
        """Only suspended jobs resume."""
        if self.job.status not in RESUME_TARGET:
            raise PreconditionFailed(f"job {self.job_id} is {self.job.status}; it is not suspended")

    def execute(self) -> dict[str, str]:
        """Move back and queue what the suspension held up."""
        self.job.transition_to(RESUME_TARGET[JobStatus(self.job.status)])
        self.job.save(update_fields=["status"])
        # PREPSUSPENDED -> PREP: a job submitted without start waits for its start again.
        if self.job.status != JobStatus.PREP:
            enqueue(CoordMaterializeXCommand(job_id=self.job_id))
            enqueue(CoordActionReadyXCommand(job_id=self.job_id))
        return {"status": self.job.status}


def check_verb(job: CoordinatorJob, verb: str) -> None:
    """Refuse at once (before queueing) a verb the job's status does not allow."""
    allowed = {
        "kill": lambda s: s not in JOB_TERMINAL,
        "suspend": lambda s: s in SUSPEND_TARGET,
        "resume": lambda s: s in RESUME_TARGET,
    }[verb]
    if not allowed(job.status):
        raise IllegalTransition(f"cannot {verb} coordinator job {job.id}: it is {job.status}")
