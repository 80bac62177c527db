"""The buttons of a bundle's page (kernel.object_verbs): start, suspend, resume, change, kill, through `bundles.services`.

Each is disabled with the reason the service would give when the bundle's status refuses it;
each runs the service the API and `manage.py job` call, as the operator.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms
from django.utils import timezone

from bundles import services
from bundles.choices import RESUME_TARGET, SUSPEND_TARGET, BundleStatus
from bundles.commands.change import check_bundle_change
from bundles.commands.control import check_verb
from bundles.models import BundleJob
from datasets.timeline import format_datetime
from kernel.object_verbs import REFUSALS, ObjectVerb


def _refusal(bundle: BundleJob, verb: str) -> str:
    try:
        check_verb(bundle.status, verb, bundle.pk)
    except REFUSALS as exc:
        return str(exc)
    return ""


def _when(value: Any) -> str:
    return format_datetime(value) if value is not None else "none"


class BundleChangeForm(forms.Form):
    """Oozie's bundle `-change`: end time and pause time (set or cleared)."""

    endtime = forms.CharField(required=False, max_length=40, label="End time", help_text="UTC: 2026-12-01T05:00Z")
    pausetime = forms.CharField(required=False, max_length=40, label="Pause time", help_text="2026-12-01T05:00Z")
    clear_pausetime = forms.BooleanField(required=False, label="Clear the pause time")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("pausetime") and data.get("clear_pausetime"):
            raise forms.ValidationError("Set a pause time or clear it, not both.")
        if not (data.get("endtime") or data.get("pausetime") or data.get("clear_pausetime")):
            raise forms.ValidationError("Nothing to change: give an end time or a pause time.")
        return data


def change_value(data: Mapping[str, Any]) -> str:
    """`endtime=...;pausetime=...` for the filled fields."""
    parts = [f"endtime={data['endtime'].strip()}"] if data.get("endtime") else []
    if data.get("pausetime"):
        parts.append(f"pausetime={data['pausetime'].strip()}")
    elif data.get("clear_pausetime"):
        parts.append("pausetime=")
    return ";".join(parts)


def bundle_verbs(bundle: BundleJob, user: Any) -> list[ObjectVerb]:
    """The bundle's verbs, as its status allows them."""
    status = BundleStatus(bundle.status)

    def line(target: str) -> list[str]:
        return [f"bundle job {bundle.pk} ({bundle.app_name}): {bundle.status} -> {target}"]

    def control(verb: str, target: str) -> ObjectVerb:
        def run(data: Mapping[str, Any]) -> str:
            services.control_bundle(bundle.pk, verb, actor=user)
            return f"{verb.capitalize()} of bundle job {bundle.pk} queued ({bundle.status} -> {target})"

        return ObjectVerb(name=verb, label=verb.capitalize(), refused=_refusal(bundle, verb),
                          effect=lambda data: [*line(target), f"and its coordinator jobs ({verb})"],
                          run=run, danger=verb == "kill")

    def start(data: Mapping[str, Any]) -> str:
        services.start_bundle(bundle.pk, actor=user)
        return f"Start of bundle job {bundle.pk} queued (PREP -> RUNNING)"

    def change_effect(data: Mapping[str, Any]) -> list[str]:
        value = change_value(data)
        values = check_bundle_change(bundle, value, timezone.now())
        lines = [f"bundle job {bundle.pk} ({bundle.app_name}), {bundle.status}:"]
        if "end_time" in values:
            lines.append(f"end time: {_when(bundle.end_time)} -> {_when(values['end_time'])}")
        if "pause_time" in values:
            lines.append(f"pause time: {_when(bundle.pause_time)} -> {_when(values['pause_time'])}")
        return [*lines, f"(as -change {value})"]

    def change(data: Mapping[str, Any]) -> str:
        value = change_value(data)
        services.change_bundle(bundle.pk, value, actor=user)
        return f"Change {value} of bundle job {bundle.pk} queued"

    not_prep = "" if status == BundleStatus.PREP and not bundle.pending else (
        f"cannot start bundle job {bundle.pk}: it is {bundle.status}")
    killed = f"cannot change bundle job {bundle.pk}: it is KILLED" if status == BundleStatus.KILLED else ""
    return [
        ObjectVerb(name="start", label="Start", refused=not_prep, effect=lambda data: line("RUNNING"), run=start),
        control("suspend", str(SUSPEND_TARGET.get(status, "SUSPENDED"))),
        control("resume", str(RESUME_TARGET.get(status, "RUNNING"))),
        ObjectVerb(name="change", label="Change end / pause time", refused=killed, form=BundleChangeForm,
                   effect=change_effect, run=change),
        control("kill", "KILLED"),
    ]
