"""Change (endtime, concurrency, pausetime, status) and pause: DG_CommandLineTool "Changing ... of a Coordinator Job".

The rules are checked twice: when the request comes in (so a caller gets a 4xx at once and
nothing is queued) and again inside the command under the job's key (the job may have
moved in between; then the command is skipped with the reason logged).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from coordinators.choices import (
    ACTION_PENDING,
    JOB_TERMINAL,
    IllegalTransition,
    JobStatus,
)
from coordinators.commands.actions import CoordActionReadyXCommand, CoordJobStatusXCommand
from coordinators.commands.base import JobCommand
from coordinators.commands.lifecycle import (
    CoordMaterializeXCommand,
    CoordStartXCommand,
    recompute_progress,
)
from coordinators.models import CoordinatorJob
from datasets.timeline import TimelineError, format_datetime, parse_datetime
from xcommands.errors import PreconditionFailed
from xcommands.queue import enqueue

CHANGE_OPTIONS = ("endtime", "concurrency", "pausetime", "status")
MAX_CONCURRENCY = 2**31 - 1  # the column is a 32-bit integer on PostgreSQL

PAUSE_TARGET = {
    JobStatus.PREP: JobStatus.PREPPAUSED,
    JobStatus.RUNNING: JobStatus.PAUSED,
    JobStatus.RUNNINGWITHERROR: JobStatus.PAUSEDWITHERROR,
}
UNPAUSE_TARGET = {paused: running for running, paused in PAUSE_TARGET.items()}
REVIVE_ON_NEW_END = {JobStatus.SUCCEEDED: JobStatus.RUNNING, JobStatus.DONEWITHERROR: JobStatus.RUNNINGWITHERROR}


class ChangeRefused(ValueError):  # noqa: N818 - reads as the outcome
    """A change value the job cannot take (bad syntax, bad value, or the job's state forbids it)."""


def parse_change_value(value: str) -> dict[str, str]:
    """`endtime=2011-12-01T05:00Z;concurrency=100;pausetime=` as a dict; repeated or unknown names refused."""
    options: dict[str, str] = {}
    for part in value.split(";"):
        if not part.strip():
            continue
        name, sep, raw = part.partition("=")
        name = name.strip().lower()
        if not sep:
            raise ChangeRefused(f"{part.strip()!r}: expected name=value (endtime, concurrency, pausetime or status)")
        if name not in CHANGE_OPTIONS:
            raise ChangeRefused(f"{name!r}: can only change {'|'.join(CHANGE_OPTIONS)}")
        if name in options:
            raise ChangeRefused(f"{name!r} is given more than once")
        if name != "pausetime" and not raw.strip():
            raise ChangeRefused(f"value of {name} cannot be empty")
        options[name] = raw.strip()
    if not options:
        raise ChangeRefused("nothing to change: give endtime=, concurrency=, pausetime= or status=")
    if "status" in options and len(options) > 1:
        raise ChangeRefused("status cannot be changed together with endtime, concurrency or pausetime")
    return options


def _when(name: str, raw: str) -> datetime:
    try:
        return parse_datetime(raw)
    except TimelineError as exc:
        raise ChangeRefused(f"{name}={raw}: {exc}") from None


def check_change(job: CoordinatorJob, options: dict[str, str], now: datetime) -> dict[str, Any]:
    """Validate a change against the job as it is now; the typed values to apply, or ChangeRefused."""
    if "status" in options:
        if options["status"].upper() != JobStatus.RUNNING:
            raise ChangeRefused(f"status={options['status']}: only status=RUNNING can be set")
        if job.status not in (JobStatus.FAILED, JobStatus.KILLED, JobStatus.IGNORED):
            raise IllegalTransition(
                f"cannot change coordinator job {job.id} to RUNNING: it is {job.status} "
                "(only FAILED, KILLED or IGNORED jobs)"
            )
        return {"status": JobStatus.RUNNING}
    if job.status in (JobStatus.KILLED, JobStatus.IGNORED):
        raise IllegalTransition(f"cannot change coordinator job {job.id}: it is {job.status}")
    values: dict[str, Any] = {}
    if "concurrency" in options:
        raw = options["concurrency"]
        if not re.fullmatch(r"[+-]?[0-9]+", raw):
            raise ChangeRefused(f"concurrency={raw[:40]}: must be an integer")
        if len(raw) > 12 or not -1 <= int(raw) <= MAX_CONCURRENCY:
            raise ChangeRefused(f"concurrency={raw[:40]}: must be between -1 (unlimited) and {MAX_CONCURRENCY}")
        values["concurrency"] = int(raw)
    cut: datetime | None = None
    if "endtime" in options:
        end = _when("endtime", options["endtime"])
        if end < job.start_time and job.last_action_number > 0:
            raise ChangeRefused(
                f"endtime={format_datetime(end)} is before the job's start {format_datetime(job.start_time)} "
                "and actions exist"
            )
        values["end_time"] = end
        cut = end
    if "pausetime" in options:
        if options["pausetime"] == "":
            values["pause_time"] = None
        else:
            pause = _when("pausetime", options["pausetime"])
            if pause < now.replace(second=0, microsecond=0):
                raise ChangeRefused(f"pausetime={format_datetime(pause)} must not be in the past")
            values["pause_time"] = pause
            cut = pause if cut is None else min(cut, pause)
    if cut is not None:
        beyond = job.actions.filter(nominal_time__gte=cut)
        blocking = beyond.exclude(status__in=ACTION_PENDING).order_by("number").first()
        if blocking is not None:
            raise ChangeRefused(
                f"action {blocking.number} ({format_datetime(blocking.nominal_time)}) is {blocking.status}, "
                f"after the new time {format_datetime(cut)}; only WAITING or READY actions can be revoked"
            )
        values["revoke_from"] = cut
    return values


@dataclass
class CoordChangeXCommand(JobCommand):
    """Apply a change: new end, concurrency or pause time (revoking look-ahead actions past it), or status RUNNING."""

    job_id: str
    value: str

    def verify_precondition(self) -> None:
        """The change must still be valid for the job as it is now."""
        try:
            self.values = check_change(self.job, parse_change_value(self.value), timezone.now())
        except (ChangeRefused, IllegalTransition) as exc:
            raise PreconditionFailed(str(exc)) from None

    def execute(self) -> dict[str, Any]:
        """Store the new values and bring materialization and status in line."""
        job, values = self.job, self.values
        fields = ["pending"]
        job.pending = False
        if values.get("status") == JobStatus.RUNNING:
            job.transition_to(JobStatus.RUNNING)
            fields.append("status")
        if "concurrency" in values:
            job.concurrency = values["concurrency"]
            fields.append("concurrency")
        if "end_time" in values:
            job.end_time = values["end_time"]
            fields.append("end_time")
        if "pause_time" in values:
            job.pause_time = values["pause_time"]
            fields.append("pause_time")
        revoked = 0
        if "revoke_from" in values:
            doomed = job.actions.filter(nominal_time__gte=values["revoke_from"], status__in=ACTION_PENDING)
            revoked, _ = doomed.delete()
        recompute_progress(job)
        fields += ["last_action_number", "done_materializing", "next_materialize_at"]
        if job.status in REVIVE_ON_NEW_END and not job.done_materializing:
            job.transition_to(REVIVE_ON_NEW_END[JobStatus(job.status)])
            fields.append("status")
        if job.status in UNPAUSE_TARGET and (job.pause_time is None or job.pause_time > timezone.now()):
            job.transition_to(UNPAUSE_TARGET[JobStatus(job.status)])
            fields.append("status")
        job.save(update_fields=fields)
        if job.status not in JOB_TERMINAL:
            enqueue(CoordMaterializeXCommand(job_id=job.id))
            enqueue(CoordActionReadyXCommand(job_id=job.id))
            enqueue(CoordJobStatusXCommand(job_id=job.id))
        return {"status": job.status, "revoked": revoked, "changed": sorted(k for k in values if k != "revoke_from")}


@dataclass
class CoordPauseXCommand(JobCommand):
    """Pause time reached: PREP/RUNNING/RUNNINGWITHERROR -> PREPPAUSED/PAUSED/PAUSEDWITHERROR; reset: back again."""

    job_id: str

    def verify_precondition(self) -> None:
        """Only a job whose pause state disagrees with its pause time changes."""
        now = timezone.now()
        due = self.job.pause_time is not None and self.job.pause_time <= now
        if not (due and self.job.status in PAUSE_TARGET) and not (not due and self.job.status in UNPAUSE_TARGET):
            raise PreconditionFailed(f"job {self.job_id} is {self.job.status}; pause time {self.job.pause_time}")

    def execute(self) -> dict[str, str]:
        """Pause or unpause; after unpausing, materialize what the pause held back."""
        job = self.job
        if job.status in PAUSE_TARGET:
            job.transition_to(PAUSE_TARGET[JobStatus(job.status)])
        else:
            job.transition_to(UNPAUSE_TARGET[JobStatus(job.status)])
            if job.status == JobStatus.PREP:
                job.pending = True
                enqueue(CoordStartXCommand(job_id=job.id))
            else:
                enqueue(CoordMaterializeXCommand(job_id=job.id))
                enqueue(CoordActionReadyXCommand(job_id=job.id))
        job.save(update_fields=["status", "pending"])
        return {"status": job.status}
