"""The buttons of a coordinator job's and a coordinator action's page (kernel.object_verbs).

Each verb is checked with the rule its service checks (the same function), so a button is
disabled exactly when the service would refuse; it runs `coordinators.services` as the
operator, as the API and `manage.py job` do (their permission checks, their status history).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django import forms
from django.utils import timezone

from coordinators import services
from coordinators.admin.bulk import RERUN_FAILED_STATUSES, ChangeForm, change_value
from coordinators.choices import ACTION_IGNORABLE, ACTION_RERUNNABLE, JobStatus
from coordinators.commands.change import check_change, parse_change_value
from coordinators.commands.control import RESUME_TARGET, SUSPEND_TARGET, check_verb
from coordinators.commands.ignore import check_job_ignorable
from coordinators.commands.rerun import check_rerun_job, select_actions
from coordinators.models import CoordinatorAction, CoordinatorJob
from datasets.timeline import format_datetime
from kernel.display import number_ranges
from kernel.object_verbs import REFUSALS, ObjectVerb

#: The actions a rerun's confirmation lists by name (the rest are counted).
SHOWN_ACTIONS = 20


def refusal(check: Callable[[], Any]) -> str:
    """Why the check refuses ('' when it passes): the message the service would give."""
    try:
        check()
    except REFUSALS as exc:
        return str(exc)
    return ""


def _when(value: Any) -> str:
    return format_datetime(value) if value is not None else "none"


def _job_line(job: CoordinatorJob, target: str) -> list[str]:
    return [f"coordinator job {job.pk} ({job.app_name}): {job.status} -> {target}"]


def _control(job: CoordinatorJob, user: Any, verb: str, target: str) -> ObjectVerb:
    def run(data: Mapping[str, Any]) -> str:
        services.control(job.pk, verb, actor=user)
        return f"{verb.capitalize()} of coordinator job {job.pk} queued ({job.status} -> {target})"

    return ObjectVerb(
        name=verb, label=verb.capitalize(), refused=refusal(lambda: check_verb(job, verb)),
        effect=lambda data: _job_line(job, target), run=run, danger=verb == "kill",
    )


class RerunForm(forms.Form):
    """Which actions rerun: numbers (`1,3-4`) or nominal dates (`2026-01-01T00:00Z::2026-01-02T00:00Z`)."""

    rerun_type = forms.ChoiceField(choices=[("action", "action numbers"), ("date", "nominal dates")], initial="action")
    scope = forms.CharField(max_length=2000, help_text="1,3-4 or 2026-01-01T00:00Z::2026-01-02T00:00Z")
    refresh = forms.BooleanField(required=False, help_text="read the input datasets again")
    nocleanup = forms.BooleanField(required=False, label="No cleanup", help_text="keep the outputs")
    failed = forms.BooleanField(required=False, label="Failed only", help_text="only FAILED and KILLED ones")


def _rerun_lines(actions: list[CoordinatorAction], nocleanup: bool) -> list[str]:
    lines = [f"action {a.pk} ({_when(a.nominal_time)}): {a.status} -> WAITING, then it runs again (run {a.run_count + 1})"
             for a in actions[:SHOWN_ACTIONS]]
    if len(actions) > SHOWN_ACTIONS:
        lines.append(f"... and {len(actions) - SHOWN_ACTIONS} more action(s)")
    lines.append("their outputs are kept" if nocleanup else "their outputs are deleted first")
    return lines


def _rerun(job: CoordinatorJob, user: Any) -> ObjectVerb:
    failed = sorted(job.actions.filter(status__in=RERUN_FAILED_STATUSES).values_list("number", flat=True)[:1000])

    class InitialRerunForm(RerunForm):
        """The failed, killed and timed-out actions, named."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.fields["scope"].initial = number_ranges(failed) if failed else ""

    def effect(data: Mapping[str, Any]) -> list[str]:
        actions = select_actions(job, data["rerun_type"], data["scope"], failed=data.get("failed", False))
        return _rerun_lines(actions, data.get("nocleanup", False))

    def run(data: Mapping[str, Any]) -> str:
        chosen = services.rerun_job(
            job.pk, actor=user, rerun_type=data["rerun_type"], scope=data["scope"], refresh=data.get("refresh", False),
            nocleanup=data.get("nocleanup", False), failed=data.get("failed", False),
        )
        return f"Rerun of {len(chosen)} action(s) of coordinator job {job.pk} queued"

    return ObjectVerb(name="rerun", label="Rerun actions", refused=refusal(lambda: check_rerun_job(job)),
                      form=InitialRerunForm, effect=effect, run=run)


def _change(job: CoordinatorJob, user: Any) -> ObjectVerb:
    def effect(data: Mapping[str, Any]) -> list[str]:
        value = change_value(data)
        values = check_change(job, parse_change_value(value), timezone.now())
        lines = [f"coordinator job {job.pk} ({job.app_name}), {job.status}:"]
        if "end_time" in values:
            lines.append(f"end time: {_when(job.end_time)} -> {_when(values['end_time'])}")
        if "concurrency" in values:
            lines.append(f"concurrency: {job.concurrency} -> {values['concurrency']}")
        if "pause_time" in values:
            lines.append(f"pause time: {_when(job.pause_time)} -> {_when(values['pause_time'])}")
        return [*lines, f"(as -change {value})"]

    def run(data: Mapping[str, Any]) -> str:
        value = change_value(data)
        services.change_job(job.pk, value, actor=user)
        return f"Change {value} of coordinator job {job.pk} queued"

    refused = (f"cannot change coordinator job {job.pk}: it is {job.status}"
               if job.status in (JobStatus.KILLED, JobStatus.IGNORED) else "")
    return ObjectVerb(name="change", label="Change end / pause time, concurrency", refused=refused, form=ChangeForm,
                      effect=effect, run=run)


def job_verbs(job: CoordinatorJob, user: Any) -> list[ObjectVerb]:
    """Kill, suspend, resume, start, ignore, change and rerun, as the job's status allows them."""

    def start(data: Mapping[str, Any]) -> str:
        services.start_job(job.pk, actor=user)
        return f"Start of coordinator job {job.pk} queued (PREP -> RUNNING)"

    def ignore(data: Mapping[str, Any]) -> str:
        services.ignore_job(job.pk, actor=user)
        return f"Ignore of coordinator job {job.pk} queued ({job.status} -> IGNORED)"

    not_prep = (f"cannot start coordinator job {job.pk}: it is {job.status}{' and pending' if job.pending else ''}"
                if job.status != JobStatus.PREP or job.pending else "")
    return [
        ObjectVerb(name="start", label="Start", refused=not_prep, effect=lambda data: _job_line(job, "RUNNING"),
                   run=start),
        _control(job, user, "suspend", str(SUSPEND_TARGET.get(JobStatus(job.status), "SUSPENDED"))),
        _control(job, user, "resume", str(RESUME_TARGET.get(JobStatus(job.status), "RUNNING"))),
        _change(job, user),
        _rerun(job, user),
        ObjectVerb(name="ignore", label="Ignore", refused=refusal(lambda: check_job_ignorable(job)),
                   effect=lambda data: [*_job_line(job, "IGNORED"), "its bundle stops counting it"], run=ignore),
        _control(job, user, "kill", "KILLED"),
    ]


def action_verbs(action: CoordinatorAction, user: Any) -> list[ObjectVerb]:
    """Rerun (an ended action) and ignore (a FAILED, KILLED or TIMEDOUT one), through the job's services."""
    job = action.job
    scope = str(action.number)

    def rerun_refused() -> None:
        check_rerun_job(job)
        if action.status not in ACTION_RERUNNABLE:
            raise ValueError(f"action {action.pk} is {action.status}: only ended actions rerun")

    def rerun(data: Mapping[str, Any]) -> str:
        services.rerun_job(job.pk, actor=user, rerun_type="action", scope=scope)
        return f"Rerun of action {action.pk} queued ({action.status} -> WAITING)"

    def ignore(data: Mapping[str, Any]) -> str:
        services.ignore_actions(job.pk, actor=user, ignore_type="action", scope=scope)
        return f"Ignore of action {action.pk} queued ({action.status} -> IGNORED)"

    not_ignorable = "" if action.status in ACTION_IGNORABLE else (
        f"action {action.pk} is {action.status}: only FAILED, KILLED or TIMEDOUT actions are ignored")
    return [
        ObjectVerb(name="rerun", label="Rerun", refused=refusal(rerun_refused), run=rerun,
                   effect=lambda data: _rerun_lines([action], False)),
        ObjectVerb(name="ignore", label="Ignore", refused=not_ignorable, run=ignore,
                   effect=lambda data: [f"action {action.pk}: {action.status} -> IGNORED",
                                        f"coordinator job {job.pk} stops counting it"]),
    ]
