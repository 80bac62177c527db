"""SLA records in the database: registration at materialization, the checker, reruns.

The checker (run by celery beat, `statusservice.sla_checks`) looks only at open records
that are due (an expected time passed) or whose action started or ended since the last
look. Records are claimed with `SELECT ... FOR UPDATE SKIP LOCKED` where the database has
it, decided and written in one transaction, and each event is unique per (record, type,
run): two checkers at once never record an event twice.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from coordinators.sla.evaluate import SLAError, from_json
from coordinators.sla.models import NotifyStatus, SLAEvent, SLARegistration
from coordinators.sla.notify import email_ready
from coordinators.sla.rules import (
    TERMINAL_STATUSES,
    Decided,
    EventType,
    Expectations,
    Facts,
    SLAStatus,
    assess,
)
from kernel.locking import skip_locked

log = logging.getLogger("coordinators.sla")

BATCH = 500
ALL_EVENTS = tuple(e.value for e in EventType)


def _events_setting(name: str, default: Iterable[str]) -> frozenset[str]:
    value = getattr(settings, name, default)
    if isinstance(value, str):
        value = value.split(",")
    return frozenset(str(v).strip().upper() for v in value if str(v).strip())


def register_actions(job: Any, actions: Iterable[Any], *, now: datetime | None = None) -> int:
    """Create the SLA record of every action whose evaluated SLA is on it (idempotent); how many.

    Called by materialization in its transaction. Alerts are off for actions whose nominal
    time is older than SLA_DISABLE_ALERTS_OLDER_THAN_HOURS (a catch-up of last year's actions
    records its misses but does not e-mail hundreds of them; Oozie's rule).
    """
    now = now or timezone.now()
    older = timedelta(hours=int(settings.SLA_DISABLE_ALERTS_OLDER_THAN_HOURS))
    user = None
    rows = []
    for action in actions:
        data = action.sla
        if not data or "error" in data:
            continue
        try:
            sla = from_json(data)
        except (SLAError, ValueError, TypeError) as exc:
            log.warning("SLA of %s not tracked: %s", action.pk, exc)
            continue
        if user is None:
            user = job.owner.get_username()
        expect = sla.expectations
        first_due = [t for t in (expect.expected_start, expect.expected_end) if t is not None]
        info = dict(data)
        info["alerts-enabled"] = older.total_seconds() <= 0 or action.nominal_time >= now - older
        rows.append(
            SLARegistration(
                action=action, job=job, version=sla.version, app_name=sla.app_name or job.app_name, user=user,
                nominal_time=sla.nominal_time, expected_start=expect.expected_start, expected_end=expect.expected_end,
                expected_duration=expect.expected_duration,
                alert_events=list(sla.alert_events) if sla.alert_events is not None else None,
                alert_contact=sla.alert_contact[:1024], notification_msg=sla.notification_msg,
                upstream_apps=sla.upstream_apps[:1024], info=info, run=action.run_count,
                next_check_at=min(first_due) if first_due else None,
            )
        )
    SLARegistration.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


def follow_rerun(actions: Iterable[Any]) -> int:
    """Rerun actions open their closed SLA records again (in the caller's transaction); the checker starts them over.

    A plain conditional update, not a skip-locked claim: a checker holding the row must not
    make the rerun miss it.
    """
    count = 0
    for action in actions:
        count += SLARegistration.objects.filter(pk=action.pk).exclude(run=action.run_count).update(
            closed=False, next_check_at=timezone.now()
        )
    return count


def reopen(action_ids: Iterable[str]) -> int:
    """Track a new run of rerun actions: their records open again for the action's next run.

    Events of earlier runs stay; the new run gets its own (the checker also notices a
    changed run count on an open record by itself).
    """
    with transaction.atomic():
        records = list(skip_locked(SLARegistration.objects.filter(pk__in=list(action_ids))).select_related("action"))
        for record in records:
            _reset(record, record.action.run_count)
            record.save()
    return len(records)


def _reset(record: SLARegistration, run: int) -> None:
    record.run = run
    record.start_event = record.duration_event = record.end_event = ""
    record.actual_start = record.actual_end = None
    record.actual_duration = None
    record.sla_status = SLAStatus.NOT_STARTED.value
    record.closed = False
    due = [t for t in (record.expected_start, record.expected_end) if t is not None]
    record.next_check_at = min(due) if due else None


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z") if value is not None else None


def _millis(value: timedelta | None) -> int:
    return int(value.total_seconds() * 1000) if value is not None else -1


def payload(record: SLARegistration, event: str, occurred_at: datetime) -> dict[str, Any]:
    """The message of an event, in the field names of Oozie's SLA JSON (DG_SLAMonitoring)."""
    return {
        "id": record.action_id,
        "parentId": record.job_id,
        "appType": "COORDINATOR_ACTION",
        "msgType": "SLA",
        "appName": record.app_name,
        "user": record.user,
        "eventStatus": event,
        "eventTime": _iso(occurred_at),
        "slaStatus": record.sla_status,
        "jobStatus": record.job_status,
        "nominalTime": _iso(record.nominal_time),
        "expectedStartTime": _iso(record.expected_start),
        "actualStartTime": _iso(record.actual_start),
        "expectedEndTime": _iso(record.expected_end),
        "actualEndTime": _iso(record.actual_end),
        "expectedDuration": _millis(record.expected_duration),
        "actualDuration": _millis(record.actual_duration),
        "notificationMessage": record.notification_msg,
        "upstreamApps": record.upstream_apps,
        "alertContact": record.alert_contact,
    }


def channels_for(record: SLARegistration, event: str) -> list[str]:
    """Where an event goes: e-mail to alert-contact when its alert-events (or the default) name it,
    the webhook when one is configured and SLA_WEBHOOK_EVENTS name it."""
    channels: list[str] = []
    if not record.info.get("alerts-enabled", True):
        return channels
    email_events = (
        frozenset(record.alert_events) if record.alert_events is not None
        else _events_setting("SLA_ALERT_EVENTS", ["END_MISS"])
    )
    if record.alert_contact.strip() and event in email_events and settings.SLA_EMAIL_ENABLED:
        if email_ready():  # no mail server configured: said once in the log, the event stays in the admin
            channels.append("email")
    if settings.SLA_WEBHOOK_URL and event in _events_setting("SLA_WEBHOOK_EVENTS", ALL_EVENTS):
        channels.append("webhook")
    return channels


def _apply(record: SLARegistration, now: datetime) -> list[SLAEvent]:
    """Bring one locked record up to date with its action; the new events (not yet saved)."""
    action = record.action
    if action.run_count != record.run:
        _reset(record, action.run_count)
    facts = Facts(action.status, action.started_at, action.ended_at)
    decided = Decided(record.start_event, record.duration_event, record.end_event)
    expect = Expectations(record.expected_start, record.expected_end, record.expected_duration)
    result = assess(expect, decided, facts, now)
    record.job_status = action.status
    record.actual_start = action.started_at
    if result.closed:
        record.actual_end = action.ended_at or now
    if record.actual_start is not None and record.actual_end is not None:
        record.actual_duration = record.actual_end - record.actual_start
    for event, _ in result.events:
        setattr(record, f"{event.criterion}_event", event.value)
    record.sla_status = result.sla_status.value
    record.next_check_at = result.next_check_at
    record.closed = result.closed
    new = []
    for event, occurred_at in result.events:
        channels = channels_for(record, event.value)
        new.append(
            SLAEvent(
                registration=record, job_id=record.job_id, event_type=event.value, run=record.run,
                occurred_at=occurred_at, payload=payload(record, event.value, occurred_at),
                notify_status=NotifyStatus.PENDING if channels else NotifyStatus.NONE,
                channels=channels, next_attempt_at=now if channels else None,
            )
        )
        level = logging.WARNING if event.is_miss else logging.INFO
        log.log(
            level, "SLA %s: coordinator action %s (%s), nominal %s, expected start %s end %s duration %s, "
            "actual start %s end %s", event.value, record.action_id, record.app_name, _iso(record.nominal_time),
            _iso(record.expected_start), _iso(record.expected_end), record.expected_duration,
            _iso(record.actual_start), _iso(record.actual_end),
        )
    return new


def check(now: datetime | None = None, *, batch: int = BATCH) -> int:
    """Decide what is due on open SLA records (at most `batch`); how many records were looked at."""
    now = now or timezone.now()
    changed = (
        Q(actual_start__isnull=True, action__started_at__isnull=False)
        | Q(action__ended_at__isnull=False)
        | Q(action__status__in=sorted(TERMINAL_STATUSES))
        | ~Q(run=F("action__run_count"))
    )
    with transaction.atomic():
        records = list(
            skip_locked(SLARegistration.objects.filter(closed=False).filter(Q(next_check_at__lte=now) | changed))
            .select_related("action")
            .order_by(F("next_check_at").asc(nulls_last=True))[:batch]
        )
        events = [event for record in records for event in _apply(record, now)]
        for record in records:
            record.save()
        SLAEvent.objects.bulk_create(events, ignore_conflicts=True)
    return len(records)
