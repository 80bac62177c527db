"""Rerun finished actions (DG_CoordinatorRerun): by action numbers or nominal dates, with cleanup and refresh."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import fsspec
from django.db.models import Q, QuerySet
from django.utils import timezone

from coordinators.choices import ACTION_RERUNNABLE, ActionStatus, IllegalTransition, JobStatus
from coordinators.commands.actions import CoordActionInputCheckXCommand
from coordinators.commands.base import JobCommand
from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.plan import plan_action
from coordinators.preparation import load_resolved
from coordinators.sla.service import follow_rerun
from datasets.models import AvailableInstance, uri_key
from datasets.timeline import TimelineError, format_datetime, parse_datetime
from kernel import storage
from oozie.definitions import DefinitionError
from xcommands.errors import PreconditionFailed
from xcommands.queue import enqueue

log = logging.getLogger(__name__)

#: How a job's status moves when some of its actions are rerun (PAUSED jobs keep theirs).
RERUN_JOB_TARGET = {
    JobStatus.SUSPENDED: JobStatus.RUNNING,
    JobStatus.SUSPENDEDWITHERROR: JobStatus.RUNNINGWITHERROR,
    JobStatus.SUCCEEDED: JobStatus.RUNNING,
    JobStatus.DONEWITHERROR: JobStatus.RUNNINGWITHERROR,
    JobStatus.FAILED: JobStatus.RUNNINGWITHERROR,
    JobStatus.KILLED: JobStatus.RUNNINGWITHERROR,
}
RERUN_TYPES = ("action", "date")
MAX_RERUN_ACTIONS = 10_000
MAX_ACTION_NUMBER = 2**31 - 1  # action numbers are 32-bit integers in the database


class RerunRefused(ValueError):  # noqa: N818 - reads as the outcome
    """A rerun request that cannot be carried out (bad scope, missing or unfinished actions)."""


class NothingToRerun(RerunRefused):
    """No action of the job falls in (or at) the dates named (a bundle rerun passes such coordinators over)."""


def _numbers(scope: str) -> list[tuple[int, int]]:
    """`1, 3-4, 7-40` as inclusive ranges."""
    ranges = []
    for part in (p.strip() for p in scope.split(",")):
        match = re.fullmatch(r"([0-9]+)(?:\s*-\s*([0-9]+))?", part)
        if not match:
            raise RerunRefused(f"-action {part[:40]!r}: expected a number or a range such as 3-7")
        if any(len(n) > 10 or int(n) > MAX_ACTION_NUMBER for n in match.groups() if n is not None):
            raise RerunRefused(f"-action {part[:40]!r}: action numbers go from 1 to {MAX_ACTION_NUMBER}")
        low, high = int(match.group(1)), int(match.group(2) or match.group(1))
        if low < 1 or high < low:
            raise RerunRefused(f"-action {part!r}: not a valid range of action numbers")
        ranges.append((low, high))
    return ranges


def _dates(scope: str) -> list[tuple[datetime, datetime]]:
    """`2009-01-01T01:00Z::2009-05-31T23:59Z, 2009-11-10T01:00Z` as inclusive ranges (UTC)."""
    ranges = []
    for part in (p.strip() for p in scope.split(",")):
        low_text, sep, high_text = part.partition("::")
        try:
            low = parse_datetime(low_text.strip())
            high = parse_datetime(high_text.strip()) if sep else low
        except TimelineError as exc:
            raise RerunRefused(f"-date {part!r}: {exc}") from None
        if high < low:
            raise RerunRefused(f"-date {part!r}: the range ends before it starts")
        ranges.append((low, high))
    return ranges


def select_actions(job: CoordinatorJob, rerun_type: str, scope: str, *, failed: bool = False) -> list[CoordinatorAction]:
    """The existing, finished actions a rerun names; RerunRefused naming the first that is not."""
    if rerun_type not in RERUN_TYPES:
        raise RerunRefused(f"rerun type {rerun_type!r}: use action or date")
    if not scope or not scope.strip():
        raise RerunRefused(f"-{rerun_type} is required: name the actions to rerun")
    actions: QuerySet[CoordinatorAction] = job.actions.all()
    if rerun_type == "action":
        ranges = _numbers(scope)
        if sum(high - low + 1 for low, high in ranges) > MAX_RERUN_ACTIONS:
            raise RerunRefused(f"-action names more than {MAX_RERUN_ACTIONS} actions")
        wanted = {n for low, high in ranges for n in range(low, high + 1)}
        chosen = list(actions.filter(number__in=sorted(wanted)).order_by("number"))
        absent = sorted(wanted - {a.number for a in chosen})
        if absent:
            raise RerunRefused(f"action {job.id}@{absent[0]} does not exist")
    else:
        condition = Q()
        singles = []
        for low, high in _dates(scope):
            condition |= Q(nominal_time__gte=low, nominal_time__lte=high)
            if low == high:
                singles.append(low)
        chosen = list(actions.filter(condition).order_by("number")[: MAX_RERUN_ACTIONS + 1])
        if len(chosen) > MAX_RERUN_ACTIONS:
            raise RerunRefused(f"-date names more than {MAX_RERUN_ACTIONS} actions")
        nominals = {a.nominal_time for a in chosen}
        for moment in singles:
            if moment not in nominals:
                raise NothingToRerun(f"no action of {job.id} has the nominal time {format_datetime(moment)}")
        if not chosen:
            raise NothingToRerun(f"no action of {job.id} falls in -date {scope}")
    for action in chosen:
        if action.status not in ACTION_RERUNNABLE:
            raise RerunRefused(
                f"action {action.id} is {action.status}; only TIMEDOUT, SUCCEEDED, KILLED, FAILED or IGNORED actions rerun"
            )
    if failed:
        chosen = [a for a in chosen if a.status != ActionStatus.SUCCEEDED]
    return chosen


def check_rerun_job(job: CoordinatorJob) -> None:
    """Actions of PREP or IGNORED jobs cannot be rerun (DG_CoordinatorRerun pre-conditions)."""
    if job.status in (JobStatus.PREP, JobStatus.PREPSUSPENDED, JobStatus.PREPPAUSED, JobStatus.IGNORED):
        raise IllegalTransition(f"cannot rerun actions of coordinator job {job.id}: it is {job.status}")


def clean_outputs(action: CoordinatorAction, keep: set[str]) -> list[str]:
    """Delete the action's output-event instances but those named in keep (nocleanup); the URIs removed."""
    removed = []
    for name, uris in action.data_out.items():
        if name in keep:
            continue
        for uri in uris:
            try:
                fs, path = fsspec.core.url_to_fs(storage.map_uri(uri))  # a migrated dataset: where it maps to
                if fs.exists(path):
                    fs.rm(path, recursive=True)
                    removed.append(uri)
            except (OSError, ValueError, ImportError) as exc:
                log.warning("rerun of %s: cannot remove output %s: %s", action.id, uri, exc)
            AvailableInstance.objects.filter(uri=uri).delete()  # it is no longer there
    return removed


@dataclass
class CoordRerunXCommand(JobCommand):
    """Put finished actions back to WAITING (cleaning their outputs unless told not to) and revive the job."""

    job_id: str
    rerun_type: str
    scope: str
    refresh: bool = False
    nocleanup: bool = False
    failed: bool = False

    def verify_precondition(self) -> None:
        """The job and every named action must still allow the rerun."""
        try:
            check_rerun_job(self.job)
            self.actions = select_actions(self.job, self.rerun_type, self.scope, failed=self.failed)
        except (RerunRefused, IllegalTransition) as exc:
            raise PreconditionFailed(str(exc)) from None

    def execute(self) -> dict[str, Any]:
        """Clean, reset, requeue; the job leaves SUSPENDED or its finished status."""
        job, now = self.job, timezone.now()
        # An action that FAILED when it was created has no plan to run again: it is planned anew (issue 16).
        unplanned = {a.number for a in self.actions if "app_path" not in a.run_conf}
        resolved = load_resolved(job) if self.refresh or not self.nocleanup or unplanned else None
        keep = (
            {event.name for event in resolved.app.output_events if event.nocleanup} if resolved is not None else set()
        )
        flags = (
            {event.name: resolved.datasets[event.dataset].done_flag for event in resolved.app.input_events}
            if resolved is not None else {}
        )
        removed: list[str] = []
        rerun: list[CoordinatorAction] = []
        for action in self.actions:
            if not self.nocleanup:
                removed += clean_outputs(action, keep)
            if (self.refresh or action.number in unplanned) and resolved is not None:
                try:
                    plan = plan_action(resolved, action.number, now=now, nominal=action.nominal_time)
                except DefinitionError as exc:
                    if action.number not in unplanned:
                        raise
                    # Still impossible (a reversed range, a start out of phase): it stays FAILED, never runs.
                    action.error_message = str(exc)[:4000]
                    action.save(update_fields=["error_message"])
                    continue
                action.data_in = plan.data_in
                action.run_conf = {"app_path": plan.app_path, **plan.configuration}
                deps = [[uri, flags[name]] for name, uris in plan.data_in.items() for uri in uris]
                self._forget_availability(deps)
                action.missing_dependencies = deps
            action.transition_to(ActionStatus.WAITING)
            action.run_count += 1
            action.external_id = ""
            action.error_message = ""
            action.check_count = 0
            action.next_check_at = now
            action.timeout_at = None if job.timeout < 0 else now + timedelta(minutes=job.timeout)
            action.pending = True
            action.save(update_fields=[
                "status", "run_count", "external_id", "error_message", "check_count", "next_check_at",
                "timeout_at", "pending", "data_in", "run_conf", "missing_dependencies",
            ])
            rerun.append(action)
        self.actions = rerun
        follow_rerun(self.actions)
        enqueue(CoordActionInputCheckXCommand(job_id=job.id, numbers=[a.number for a in self.actions]))
        if job.status in RERUN_JOB_TARGET:
            job.transition_to(RERUN_JOB_TARGET[JobStatus(job.status)])
        job.pending = False
        job.save(update_fields=["status", "pending"])
        return {
            "status": job.status,
            "actions": [{"id": a.id, "nominal_time": format_datetime(a.nominal_time)} for a in self.actions],
            "outputs_removed": removed,
        }

    @staticmethod
    def _forget_availability(deps: list[list[str]]) -> None:
        """-refresh: every dependency is checked on storage again, not taken from stored answers."""
        keys = [uri_key(uri, flag) for uri, flag in deps if not uri.startswith("${")]
        if keys:
            AvailableInstance.objects.filter(key__in=keys).delete()
