"""Change a bundle's end or pause time, and send the change to every coordinator (DG_CommandLineTool)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from bundles.choices import BundleStatus
from bundles.commands.base import BundleCommand, send_to_coordinators
from bundles.models import BundleJob
from coordinators.choices import IllegalTransition, JobStatus
from coordinators.commands import CoordChangeXCommand
from coordinators.commands.change import ChangeRefused, parse_change_value
from datasets.timeline import TimelineError, format_datetime, parse_datetime
from xcommands.errors import PreconditionFailed

BUNDLE_CHANGE_OPTIONS = ("endtime", "pausetime")


PAUSE_FINISHED = frozenset({BundleStatus.SUCCEEDED, BundleStatus.FAILED, BundleStatus.DONEWITHERROR})


def check_bundle_change(bundle: BundleJob, value: str, now: datetime) -> dict[str, datetime | None]:
    """The new end and pause times a `-change` value sets (ChangeRefused or IllegalTransition if not)."""
    options = parse_change_value(value)
    unknown = sorted(set(options) - set(BUNDLE_CHANGE_OPTIONS))
    if unknown:
        raise ChangeRefused(f"{unknown[0]!r}: a bundle can only change {'|'.join(BUNDLE_CHANGE_OPTIONS)}")
    if bundle.status == BundleStatus.KILLED:
        raise IllegalTransition(f"cannot change bundle job {bundle.id}: it is KILLED")
    if "pausetime" in options and bundle.status in PAUSE_FINISHED:
        # Oozie's BundleJobChangeXCommand: a finished bundle keeps its pause time (it has nothing left to pause).
        raise IllegalTransition(f"cannot change the pause time of bundle job {bundle.id}: it is {bundle.status}")
    values: dict[str, datetime | None] = {}
    for name, field in (("endtime", "end_time"), ("pausetime", "pause_time")):
        if name not in options:
            continue
        raw = options[name]
        if name == "pausetime" and raw == "":
            values[field] = None
            continue
        try:
            when = parse_datetime(raw)
        except TimelineError as exc:
            raise ChangeRefused(f"{name}={raw[:40]}: {exc}") from None
        if name == "endtime" and bundle.kick_off_time is not None and when < bundle.kick_off_time:
            raise ChangeRefused(
                f"endtime={format_datetime(when)} is before the bundle's kick-off time {format_datetime(bundle.kick_off_time)}"
            )
        if name == "pausetime" and when < now.replace(second=0, microsecond=0):
            raise ChangeRefused(f"pausetime={format_datetime(when)} must not be in the past")
        values[field] = when
    return values


@dataclass
class BundleChangeXCommand(BundleCommand):
    """Store the new end and pause times and queue the same change on every live coordinator."""

    bundle_id: str
    value: str

    def verify_precondition(self) -> None:
        """Checked again under the key: the bundle may have been killed meanwhile."""
        try:
            self.values = check_bundle_change(self.bundle, self.value, timezone.now())
        except (ChangeRefused, IllegalTransition) as exc:
            raise PreconditionFailed(str(exc)) from None

    def execute(self) -> dict[str, Any]:
        """Each coordinator checks the change against its own actions (a refusal there is logged, skipped)."""
        for field, when in self.values.items():
            setattr(self.bundle, field, when)
        value = ";".join(
            f"{'endtime' if field == 'end_time' else 'pausetime'}={format_datetime(when) if when else ''}"
            for field, when in self.values.items()
        )
        sent = send_to_coordinators(
            self.actions(), lambda coord_id: CoordChangeXCommand(job_id=coord_id, value=value),
            when=lambda action: action.status not in (JobStatus.KILLED, JobStatus.IGNORED),
        )
        self.bundle.pending = bool(sent) or self.bundle.pending
        self.bundle.save(update_fields=["end_time", "pause_time", "pending"])
        return {"value": value, "coordinators": sent}
