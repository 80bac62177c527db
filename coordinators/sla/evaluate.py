"""An action's `<sla:info>` evaluated at creation (phase 2): absolute expected times, contacts, alerts.

Pure (no Django, no clock). Durations are minutes, as in Oozie (`${10 * MINUTES}`, or a plain
number); should-start and should-end count from the SLA nominal time. Without max-duration,
the expected duration is should-end minus should-start when both exist (Oozie's rule).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any

from coordinators.plan.materialize import ActionPlan
from coordinators.plan.resolve import ResolvedCoordinator
from coordinators.sla.rules import EventType, Expectations
from datasets.timeline import TimelineError, format_datetime, parse_datetime
from oozie.definitions import DefinitionError, SLAInfo
from oozie.el import ELError, Phase, evaluate, evaluate_to_string

log = logging.getLogger(__name__)

TIME_FIELDS = ("nominal-time", "should-start", "should-end", "max-duration")
# Every other field of either schema (but alert-events, parsed to a list) is text:
# evaluated when it is EL, kept as written otherwise.
TEXT_FIELDS = tuple(
    name for name in (f.name.replace("_", "-") for f in fields(SLAInfo) if f.name != "version")
    if name not in (*TIME_FIELDS, "alert-events")
)


class SLAError(ValueError):
    """An SLA block whose times or durations do not evaluate (the action is created without SLA)."""


@dataclass(frozen=True, slots=True)
class ActionSLA:
    """One action's evaluated SLA: times in UTC, the duration, alert settings and every other field as text."""

    version: str
    nominal_time: datetime
    expected_start: datetime | None
    expected_end: datetime | None
    expected_duration: timedelta | None
    alert_events: tuple[str, ...] | None  # None: the server default (SLA_ALERT_EVENTS)
    alert_contact: str
    notification_msg: str
    upstream_apps: str
    app_name: str
    text: tuple[tuple[str, str], ...]  # every text field present, by XML name

    @property
    def expectations(self) -> Expectations:
        """What the rules compare against."""
        return Expectations(self.expected_start, self.expected_end, self.expected_duration)

    def as_json(self) -> dict[str, Any]:
        """The shape stored on the action (`CoordinatorAction.sla`)."""
        return {
            "version": self.version,
            "nominal-time": self.nominal_time.isoformat(),
            "expected-start": self.expected_start.isoformat() if self.expected_start else None,
            "expected-end": self.expected_end.isoformat() if self.expected_end else None,
            "expected-duration-minutes": (
                self.expected_duration.total_seconds() / 60 if self.expected_duration is not None else None
            ),
            **dict(self.text),
            "alert-events": list(self.alert_events) if self.alert_events is not None else None,
            "app-name": self.app_name,
        }


def _minutes(raw: str | None, value: Any, name: str) -> float | None:
    if raw is None or raw.strip() == "":
        return None
    if isinstance(value, bool):
        raise SLAError(f"sla:{name} must be a number of minutes, got {value!r}")
    try:
        minutes = float(str(value).strip()) if not isinstance(value, int | float) else float(value)
    except ValueError:
        raise SLAError(f"sla:{name} must be a number of minutes (e.g. ${{10 * MINUTES}}), got {value!r}") from None
    if not math.isfinite(minutes) or minutes < 0:
        raise SLAError(f"sla:{name} must not be negative, got {value!r}")
    return minutes


def parse_alert_events(text: str | None) -> tuple[str, ...] | None:
    """`start_miss,END_MISS` -> ('START_MISS', 'END_MISS'); unknown names become END_MISS (as in Oozie)."""
    if text is None or not text.strip():
        return None
    events: list[str] = []
    for part in text.split(","):
        name = part.strip().upper()
        if not name:
            continue
        if name not in EventType.__members__:
            log.warning("SLA alert-event %r is not one of %s; using END_MISS", part.strip(), ", ".join(EventType))
            name = EventType.END_MISS.value
        if name not in events:
            events.append(name)
    return tuple(events) or None


def evaluate_sla(
    info: SLAInfo,
    coordinator: ResolvedCoordinator,
    *,
    nominal: datetime,
    now: datetime,
    data_in: Mapping[str, list[str]] | None = None,
    data_out: Mapping[str, list[str]] | None = None,
    deferred_in: tuple[str, ...] = (),
) -> ActionSLA:
    """Evaluate an SLA block for the action at `nominal`, created at `now`; SLAError when it cannot be."""
    ctx = coordinator.context(
        Phase.CREATION, nominal=nominal, actual=now, data_in=dict(data_in or {}), data_out=dict(data_out or {}),
        deferred_in=deferred_in,
    )
    try:
        nominal_text = evaluate_to_string(info.nominal_time, ctx).strip() if info.nominal_time else ""
        sla_nominal = parse_datetime(nominal_text) if nominal_text else nominal
        minutes = {
            name: _minutes(info.get(name), evaluate(info.get(name) or "", ctx), name)
            for name in ("should-start", "should-end", "max-duration")
        }
    except (ELError, TimelineError) as exc:
        raise SLAError(f"sla:info: {exc}") from None
    start, end, duration = minutes["should-start"], minutes["should-end"], minutes["max-duration"]
    expected_start = sla_nominal + timedelta(minutes=start) if start is not None else None
    expected_end = sla_nominal + timedelta(minutes=end) if end is not None else None
    if duration is not None and duration > 0:
        expected_duration: timedelta | None = timedelta(minutes=duration)
    elif duration is None and expected_start is not None and expected_end is not None:
        expected_duration = expected_end - expected_start
    else:
        expected_duration = None
    text: dict[str, str] = {}
    for name in (*TEXT_FIELDS, "alert-events"):
        raw = info.get(name)
        if raw is None:
            continue
        try:
            text[name] = evaluate_to_string(raw, ctx).strip()
        except ELError:
            # 0.1's alert-frequency is written as ${24 * LAST_HOUR} in the spec's own example:
            # informational text, kept as written rather than refusing the action.
            text[name] = raw.strip()
    alert_events = parse_alert_events(text.pop("alert-events", None))
    app_name = text.pop("app-name", "") or coordinator.name
    return ActionSLA(
        version=info.version,
        nominal_time=sla_nominal,
        expected_start=expected_start,
        expected_end=expected_end,
        expected_duration=expected_duration,
        alert_events=alert_events,
        alert_contact=text.get("alert-contact", ""),
        notification_msg=text.get("notification-msg", ""),
        upstream_apps=text.get("upstream-apps", ""),
        app_name=app_name,
        text=tuple(sorted(text.items())),
    )


def action_sla(
    coordinator: ResolvedCoordinator,
    *,
    nominal: datetime,
    now: datetime,
    data_in: Mapping[str, list[str]] | None = None,
    data_out: Mapping[str, list[str]] | None = None,
    deferred_in: tuple[str, ...] = (),
) -> dict[str, Any] | None:
    """What materialization stores on an action: the evaluated SLA, {'error': ...} if it failed, None without SLA."""
    info = coordinator.app.sla
    if info is None:
        return None
    try:
        return evaluate_sla(
            info, coordinator, nominal=nominal, now=now, data_in=data_in, data_out=data_out, deferred_in=deferred_in
        ).as_json()
    except SLAError as exc:
        log.warning("SLA of %s at %s not tracked: %s", coordinator.name, format_datetime(nominal), exc)
        return {"version": info.version, "error": str(exc)}


def from_json(data: Mapping[str, Any]) -> ActionSLA:
    """The ActionSLA back from `as_json()` (what registration reads off the action)."""

    def when(key: str) -> datetime | None:
        value = data.get(key)
        return datetime.fromisoformat(value) if value else None

    minutes = data.get("expected-duration-minutes")
    events = data.get("alert-events")
    known = {"version", "nominal-time", "expected-start", "expected-end", "expected-duration-minutes", "alert-events", "app-name"}
    text = {k: str(v) for k, v in data.items() if k not in known}
    nominal = when("nominal-time")
    if nominal is None:
        raise SLAError("stored SLA has no nominal-time")
    return ActionSLA(
        version=str(data.get("version", "")),
        nominal_time=nominal,
        expected_start=when("expected-start"),
        expected_end=when("expected-end"),
        expected_duration=timedelta(minutes=float(minutes)) if minutes is not None else None,
        alert_events=tuple(events) if events is not None else None,
        alert_contact=text.get("alert-contact", ""),
        notification_msg=text.get("notification-msg", ""),
        upstream_apps=text.get("upstream-apps", ""),
        app_name=str(data.get("app-name", "")),
        text=tuple(sorted(text.items())),
    )


def plan_sla(coordinator: ResolvedCoordinator, plan: ActionPlan, now: datetime) -> dict[str, Any] | None:
    """`action_sla` for a materialized plan (its nominal time and resolved events)."""
    if coordinator.app.sla is None:
        return None
    return action_sla(
        coordinator, nominal=plan.nominal_time, now=now, data_in=plan.data_in, data_out=plan.data_out,
        deferred_in=plan.deferred,
    )


def validate_sla(coordinator: ResolvedCoordinator, *, now: datetime) -> None:
    """Refuse at submission an SLA block that would not evaluate for the first action (DefinitionError).

    For submit and dry-run: a negative or non-numeric should-end is the submitter's error,
    better reported at once than as untracked actions later.
    """
    info = coordinator.app.sla
    if info is None:
        return
    try:
        evaluate_sla(info, coordinator, nominal=coordinator.start, now=now)
    except SLAError as exc:
        raise DefinitionError(str(exc), source=coordinator.app.source, element="sla:info") from None
