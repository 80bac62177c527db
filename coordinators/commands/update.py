"""Update a coordinator's definition and properties (DG_CommandLineTool "Updating coordinator definition and properties").

The definition is read again from the job's application path (or the one a new configuration
names), validated and resolved as a submission is (`prepare_coordinator`: hardened XML, XSD,
EL, launchers, storable values) and must keep the job's name, frequency, start, end and time
zone (Oozie's CoordUpdateXCommand refuses changing them). What an update changes applies to
actions materialized from then on; existing actions keep what they were created with.

The request is checked at once (a caller gets the diff or a 4xx, nothing queued on refusal);
the validated values travel in the command, which applies them under the job's key only if
the job is still what the diff was computed against (a fingerprint), so an update never
lands on a job that changed in between.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape

from coordinators.choices import JOB_TERMINAL, ActionStatus, JobStatus
from coordinators.commands.actions import CoordActionReadyXCommand
from coordinators.commands.base import JobCommand
from coordinators.models import CoordinatorJob
from datasets.timeline import format_datetime
from oozie.properties import BUNDLE_ID, COORD_APP_PATH, USER_NAME
from xcommands.errors import PreconditionFailed
from xcommands.queue import enqueue

#: Jobs that have finished processing cannot be updated (CoordUpdateXCommand.verifyPrecondition).
NOT_UPDATABLE = frozenset({JobStatus.SUCCEEDED, JobStatus.DONEWITHERROR})
#: What an update writes: the definition and what follows from it or from the configuration.
UPDATED_FIELDS = (
    "definition", "includes", "configuration", "acl", "app_path", "timeout", "concurrency", "execution", "throttle",
)
RULE = "******************************************\n"


class UpdateRefused(ValueError):  # noqa: N818 - reads as the outcome
    """An update the job cannot take: finished job, nothing to read, or a change Oozie forbids (name, times, frequency)."""


def fingerprint(job: CoordinatorJob) -> str:
    """What an update was computed against: definition, includes, configuration and the fields it may not change."""
    state = {
        "definition": job.definition, "includes": job.includes, "configuration": job.configuration,
        "app_path": job.app_path, "name": job.app_name, "frequency": job.frequency, "unit": job.time_unit,
        "timezone": job.timezone, "start": job.start_time.isoformat(), "end": job.end_time.isoformat(),
    }
    return hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()


def check_updatable(job: CoordinatorJob) -> None:
    """UpdateRefused for a job that has finished processing."""
    if job.status in NOT_UPDATABLE:
        raise UpdateRefused(f"Can't update coord job. Job has finished processing ({job.id} is {job.status})")


def update_configuration(job: CoordinatorJob, new: Mapping[str, str] | None) -> dict[str, str]:
    """The configuration the update resolves with: the job's own, or the new one with the job's app path and bundle id.

    As in Oozie: a new configuration replaces the old one whole; without
    `oozie.coord.application.path` it keeps the job's; `oozie.bundle.id` is the bundle's to set;
    `user.name` is always the job's owner's (an update never changes whose job it is).
    """
    if not new:
        return dict(job.configuration)
    configuration = dict(new)
    for kept in (BUNDLE_ID,):
        if kept in job.configuration:
            configuration[kept] = job.configuration[kept]
        else:
            configuration.pop(kept, None)
    if not configuration.get(COORD_APP_PATH, "").strip() and job.configuration.get(COORD_APP_PATH):
        configuration[COORD_APP_PATH] = job.configuration[COORD_APP_PATH]
    # Oozie's clients send the caller's name (an ACL member's, an admin's): it is replaced, not refused.
    configuration[USER_NAME] = job.owner.get_username()
    return configuration


def application_source(job: CoordinatorJob, configuration: Mapping[str, str]) -> str:
    """Where the definition is read again: the app path property if absolute, else the job's application directory."""
    path = configuration.get(COORD_APP_PATH, "").strip()
    if path and ("://" in path or os.path.isabs(path)):
        return path
    if job.app_path:
        # A relative property (a CLI submission, relative to its properties file) named a file
        # in the directory stored with the job.
        name = path.rstrip("/").rsplit("/", 1)[-1] if path.endswith(".xml") else ""
        return f"{job.app_path.rstrip('/')}/{name}" if name else job.app_path
    raise UpdateRefused(
        f"coordinator job {job.id} was submitted without an application path: give a configuration naming "
        f"{COORD_APP_PATH}"
    )


def _frequency_key(frequency: Any) -> tuple[Any, ...]:
    """Frequencies compared as Oozie compares them: minutes and hours both in minutes (60 == coord:hours(1))."""
    unit = frequency.unit.value
    if unit == "HOUR":
        return ("MINUTE", frequency.amount * 60, None)
    return (unit, frequency.amount, frequency.cron)


def check_unchanged(job: CoordinatorJob, old: Any, new: Any) -> None:
    """UpdateRefused naming the first of name, frequency, start, end, time zone that the new definition changes.

    `old` and `new` are resolved definitions (ResolvedCoordinator); the end compared with is
    the job's own, which `-change endtime` may have moved.
    """
    if new.name != job.app_name:
        raise UpdateRefused(f"Coord name can't be changed. Old name = {job.app_name} new name = {new.name}")
    if _frequency_key(new.frequency) != _frequency_key(old.frequency):
        raise UpdateRefused(f"Frequency can't be changed. Old frequency = {old.frequency} new frequency = {new.frequency}")
    if new.start != job.start_time:
        raise UpdateRefused(
            f"Start time can't be changed. Old start time = {format_datetime(job.start_time)} "
            f"new start time = {format_datetime(new.start)}"
        )
    if new.end != job.end_time:
        raise UpdateRefused(
            f"End time can't be changed. Old end time = {format_datetime(job.end_time)} "
            f"new end time = {format_datetime(new.end)} (use -change endtime=...)"
        )
    if str(new.tz) != str(old.tz):
        raise UpdateRefused(f"TimeZone can't be changed. Old timeZone = {old.tz} new timeZone = {new.tz}")


def _inputs(resolved: Any) -> tuple[Any, ...]:
    """The input events and their datasets: what phase 3 (coord:latest/future at start) resolves against."""
    return tuple((event, resolved.datasets.get(event.dataset)) for event in resolved.app.input_events)


def check_waiting_inputs(job: CoordinatorJob, old: Any, new: Any) -> None:
    """UpdateRefused when WAITING actions still resolve coord:latest/future and the update changes their input events.

    Those actions resolve at start against the job's definition as it is then; Oozie keeps
    each action's own resolved XML, here the definition is the job's, so such an update waits.
    """
    if _inputs(old) == _inputs(new):
        return

    waiting = job.actions.filter(status=ActionStatus.WAITING).values_list("number", "missing_dependencies")
    pending = [number for number, deps in waiting if any(str(dep[0]).startswith("${") for dep in deps)]
    if pending:
        raise UpdateRefused(
            f"{len(pending)} WAITING action(s) (first: {min(pending)}) still resolve coord:latest/coord:future "
            "against the input events this update changes; update once they have started"
        )


def configuration_xml(configuration: Mapping[str, str]) -> str:
    """A configuration as Oozie prints one in an update's diff: Hadoop XML, one property per block, sorted by name."""
    lines = ["<configuration>"]
    for name in sorted(configuration):
        lines += [
            "  <property>",
            f"    <name>{escape(name)}</name>",
            f"    <value>{escape(str(configuration[name]))}</value>",
            "  </property>",
        ]
    lines.append("</configuration>")
    return "\n".join(lines) + "\n"


def unified(old: str, new: str) -> str:
    """Hunks of a unified diff (3 lines of context, no file header), as jgit's DiffFormatter prints them."""
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    out = []
    for line in list(difflib.unified_diff(old_lines, new_lines, n=3))[2:]:
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def update_diff(old_definition: str, new_definition: str, old_conf: Mapping[str, str] | None,
                new_conf: Mapping[str, str] | None) -> str:
    """Oozie's update answer: the definition's changes, then the configuration's (or that none was requested)."""
    text = "**********Job definition changes**********\n"
    text += unified(old_definition, new_definition)
    text += RULE
    text += "**********Job conf changes****************\n"
    if new_conf is None or old_conf is None:
        text += "No conf update requested\n"
    else:
        text += unified(configuration_xml(old_conf), configuration_xml(new_conf))
    return text + RULE


@dataclass
class CoordUpdateXCommand(JobCommand):
    """Replace the definition and configuration of a job with validated ones, if the job is still as checked."""

    job_id: str
    expected: str  # fingerprint() of the job the update was checked against
    values: dict[str, Any] = field(default_factory=dict)  # UPDATED_FIELDS as validated

    def verify_precondition(self) -> None:
        """Not finished, and nothing changed since the request was checked."""
        try:
            check_updatable(self.job)
        except UpdateRefused as exc:
            raise PreconditionFailed(str(exc)) from None
        if fingerprint(self.job) != self.expected:
            raise PreconditionFailed(f"coordinator job {self.job_id} changed after the update was checked; submit it again")
        unknown = set(self.values) - set(UPDATED_FIELDS)
        if unknown:
            raise PreconditionFailed(f"fields {sorted(unknown)} are not updatable")

    def execute(self) -> dict[str, Any]:
        """Store the new values; a running job applies a higher concurrency at once."""
        job = self.job
        raised = self.values.get("concurrency", job.concurrency) != job.concurrency
        for name, value in self.values.items():
            setattr(job, name, value)
        job.save(update_fields=sorted(self.values))
        if raised and job.status not in JOB_TERMINAL:
            enqueue(CoordActionReadyXCommand(job_id=job.id))
        return {"updated": sorted(self.values), "status": job.status}
