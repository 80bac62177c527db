"""Action commands: input check (and timeout), ready (policies and launch), status reports."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from coordinators.choices import (
    ACTION_ACTIVE,
    ACTION_TERMINAL,
    JOB_MATERIALIZING,
    JOB_PAUSED,
    JOB_TRANSITIONS,
    ActionStatus,
    JobStatus,
    job_status_from_actions,
    transition_path,
)
from coordinators.commands.base import ActionCommand, JobCommand
from coordinators.models import CoordinatorAction
from datasets.availability import still_missing
from xcommands.errors import PreconditionFailed
from xcommands.queue import enqueue

CHECKING_JOB_STATUSES = JOB_MATERIALIZING | JOB_PAUSED


def check_backoff(checks: int) -> timedelta:
    """Delay before the next input check: doubling from COORD_INPUT_CHECK_SECONDS up to the cap."""
    base = float(getattr(settings, "COORD_INPUT_CHECK_SECONDS", 60))
    cap = float(getattr(settings, "COORD_INPUT_CHECK_MAX_SECONDS", 600))
    return timedelta(seconds=min(cap, base * (2 ** min(checks, 20))))


@dataclass
class CoordActionInputCheckXCommand(ActionCommand):
    """WAITING -> READY when every input is available, -> TIMEDOUT past the timeout; else check later."""

    job_id: str
    number: int

    def verify_precondition(self) -> None:
        """Only waiting actions of live jobs are checked."""
        if self.action.status != ActionStatus.WAITING or self.job.status not in CHECKING_JOB_STATUSES:
            CoordinatorAction.objects.filter(pk=self.action.pk).update(pending=False)
            raise PreconditionFailed(f"action {self.action.id} is {self.action.status} (job {self.job.status})")

    def execute(self) -> dict[str, Any]:
        """Ask for the missing inputs; decide."""
        action, now = self.action, timezone.now()
        action.pending = False
        if now < action.nominal_time:  # inputs are checked from the nominal time on (Oozie)
            action.next_check_at = action.nominal_time
            action.save(update_fields=["pending", "next_check_at"])
            return {"status": action.status, "deferred_until": action.nominal_time.isoformat()}
        missing = still_missing([tuple(dep) for dep in action.missing_dependencies], now)  # type: ignore[misc]
        action.missing_dependencies = [list(dep) for dep in missing]
        action.check_count += 1
        if not missing:
            action.transition_to(ActionStatus.READY)
            action.next_check_at = None
            action.save(update_fields=["status", "pending", "missing_dependencies", "check_count", "next_check_at"])
            enqueue(CoordActionReadyXCommand(job_id=self.job_id))
            return {"status": action.status}
        if action.timeout_at is not None and now >= action.timeout_at:
            action.transition_to(ActionStatus.TIMEDOUT)
            action.next_check_at = None
            action.error_message = f"timed out waiting for {len(missing)} input(s)"
            action.save(update_fields=["status", "pending", "missing_dependencies", "check_count", "next_check_at", "error_message"])
            enqueue(CoordJobStatusXCommand(job_id=self.job_id))
            return {"status": action.status}
        delay = check_backoff(action.check_count - 1)
        action.next_check_at = now + delay
        if action.timeout_at is not None:
            action.next_check_at = min(action.next_check_at, action.timeout_at)
        action.save(update_fields=["pending", "missing_dependencies", "check_count", "next_check_at"])
        return {"status": action.status, "missing": len(missing)}


@dataclass
class CoordActionReadyXCommand(JobCommand):
    """Apply the execution policy to READY actions and launch as many as concurrency allows."""

    job_id: str


    def verify_precondition(self) -> None:
        """Nothing starts while the job is suspended or finished (a paused job only stops creating actions)."""
        if self.job.status not in JOB_MATERIALIZING | {JobStatus.PAUSED, JobStatus.PAUSEDWITHERROR}:
            raise PreconditionFailed(f"job {self.job_id} is {self.job.status}; nothing starts")

    def execute(self) -> dict[str, Any]:
        """Skip what the policy discards, then submit in policy order up to concurrency."""
        job, now = self.job, timezone.now()
        skipped = self._apply_skip_policy(now)
        running = job.actions.filter(status__in=ACTION_ACTIVE).count()
        slots = None if job.concurrency < 0 else max(0, job.concurrency - running)
        order = "-nominal_time" if job.execution in ("LIFO", "LAST_ONLY") else "nominal_time"
        ready = job.actions.select_for_update().filter(status=ActionStatus.READY).order_by(order)
        chosen = list(ready if slots is None else ready[:slots])
        for action in chosen:
            action.transition_to(ActionStatus.SUBMITTED)
            action.external_id = str(uuid.uuid4())
            action.save(update_fields=["status", "external_id"])
            transaction.on_commit(partial(launch, action.id, action.external_id, dict(action.run_conf), action.nominal_time.isoformat()))
        if skipped:
            enqueue(CoordJobStatusXCommand(job_id=self.job_id))
        return {"submitted": len(chosen), "skipped": skipped}

    def _apply_skip_policy(self, now: Any) -> int:
        job = self.job
        pending = job.actions.filter(status__in=(ActionStatus.READY, ActionStatus.WAITING))
        if job.execution == "LAST_ONLY":
            latest = job.actions.filter(status=ActionStatus.READY).order_by("-nominal_time").first()
            if latest is None:
                return 0
            doomed = pending.filter(nominal_time__lt=latest.nominal_time)
        elif job.execution == "NONE":
            doomed = pending.filter(nominal_time__lt=now - timedelta(minutes=1))
        else:
            return 0
        count = 0
        for action in doomed.select_for_update():
            action.transition_to(ActionStatus.SKIPPED)
            action.save(update_fields=["status"])
            count += 1
        return count


def launch(action_id: str, task_id: str, run_conf: dict[str, Any], nominal_time: str) -> None:
    """Send the action's Celery task (after commit); reports come back through the action-status command."""
    from project.celery import app

    app_path = str(run_conf.get("app_path", ""))
    task_name = app_path.removeprefix("task:")
    configuration = {k: v for k, v in run_conf.items() if k != "app_path"}
    app.send_task(
        task_name,
        kwargs={"configuration": configuration, "nominal_time": nominal_time},
        task_id=task_id,
        queue="actions",
        headers={"coord_action_id": action_id},
        link=app.signature("coordinators.report_action", args=(action_id, "SUCCEEDED"), queue="default"),
        link_error=app.signature("coordinators.report_action_error", args=(action_id,), queue="default"),
    )


@dataclass
class CoordActionStatusXCommand(ActionCommand):
    """Record what the launched task reported: RUNNING, SUCCEEDED or FAILED (once each)."""

    job_id: str
    number: int
    status: str
    error: str = ""
    allowed_from: dict[str, tuple[str, ...]] = field(
        default_factory=lambda: {
            ActionStatus.RUNNING: (ActionStatus.SUBMITTED,),
            ActionStatus.SUCCEEDED: (ActionStatus.SUBMITTED, ActionStatus.RUNNING),
            ActionStatus.FAILED: (ActionStatus.SUBMITTED, ActionStatus.RUNNING),
        }
    )

    def to_params(self) -> dict[str, Any]:
        """The report, without the fixed table."""
        return {"job_id": self.job_id, "number": self.number, "status": self.status, "error": self.error}

    def verify_precondition(self) -> None:
        """Late or duplicated reports (after kill, twice) are skipped."""
        if self.action.status not in self.allowed_from.get(self.status, ()):
            raise PreconditionFailed(f"action {self.action.id} is {self.action.status}; report {self.status} ignored")

    def execute(self) -> dict[str, str]:
        """Apply the report; a finished action frees a slot and may change the job's status."""
        action = self.action
        if self.status in (ActionStatus.SUCCEEDED, ActionStatus.FAILED) and action.status == ActionStatus.SUBMITTED:
            action.transition_to(ActionStatus.RUNNING)
        action.transition_to(self.status)
        action.error_message = self.error[:4000]
        action.save(update_fields=["status", "error_message"])
        if action.status in ACTION_TERMINAL:
            enqueue(CoordActionReadyXCommand(job_id=self.job_id))
            enqueue(CoordJobStatusXCommand(job_id=self.job_id))
        return {"status": action.status}


@dataclass
class CoordJobStatusXCommand(JobCommand):
    """Derive the job's status from its actions (spec 6.1.2)."""

    job_id: str


    def verify_precondition(self) -> None:
        """Only running jobs change by their actions."""
        if self.job.status not in JOB_MATERIALIZING:
            raise PreconditionFailed(f"job {self.job_id} is {self.job.status}")

    def execute(self) -> dict[str, str]:
        """Compute and store the derived status."""
        statuses = list(self.job.actions.values_list("status", flat=True))
        target = job_status_from_actions(
            statuses, materialization_done=self.job.done_materializing, current=self.job.status
        )
        if target != self.job.status:
            # e.g. RUNNING -> RUNNINGWITHERROR -> DONEWITHERROR: the table passes through it.
            for step in transition_path(JOB_TRANSITIONS, self.job.status, target) or [target]:
                self.job.transition_to(step)
            self.job.save(update_fields=["status"])
        return {"status": self.job.status}
