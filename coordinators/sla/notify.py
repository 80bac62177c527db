"""Delivery of SLA events: e-mail to the SLA's alert-contact, and a JSON POST to SLA_WEBHOOK_URL.

Events are claimed for a lease (SLA_NOTIFY_LEASE_SECONDS) in a short transaction and sent
outside it, so a slow mail server or webhook never holds a lock, and two runs at once do
not send the same event. A failed channel is retried by a later run with backoff, up to
SLA_NOTIFY_MAX_ATTEMPTS; a webhook that fails once is not called again in the same run.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import EmailMessage
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone

from coordinators.sla.models import NotifyStatus, SLAEvent
from kernel.locking import skip_locked
from kernel.mail import email_configured

log = logging.getLogger("coordinators.sla")

BATCH = 50
FIELDS = (
    ("eventStatus", "SLA Status"), ("jobStatus", "Job Status"), ("notificationMessage", "Notification Message"),
    ("appName", "App Name"), ("appType", "App Type"), ("user", "User"), ("id", "Job ID"),
    ("parentId", "Parent Job ID"), ("upstreamApps", "Upstream Apps"), ("nominalTime", "Nominal Time"),
    ("expectedStartTime", "Expected Start Time"), ("actualStartTime", "Actual Start Time"),
    ("expectedEndTime", "Expected End Time"), ("actualEndTime", "Actual End Time"),
)


class PermanentFailure(Exception):  # noqa: N818 - reads as the condition
    """A channel that cannot succeed for this event (no valid address): not retried."""


class EmailNotConfigured(PermanentFailure):
    """No mail server is configured (EMAIL_HOST unset): the e-mail is not sent, nor retried."""


NOT_CONFIGURED_MESSAGE = (
    "SLA alerts are not e-mailed: e-mail is not configured (set EMAIL_HOST, or SLA_EMAIL_ENABLED=false "
    "to silence this); SLA events are still recorded, and POSTed to SLA_WEBHOOK_URL when set"
)
_said_not_configured = False


def email_ready() -> bool:
    """Whether SLA e-mails can go out (a mail server is configured); the first "no" of a process is logged."""
    global _said_not_configured

    if email_configured():
        return True
    if not _said_not_configured:
        _said_not_configured = True
        log.warning(NOT_CONFIGURED_MESSAGE)
    return False


def _minutes(millis: Any) -> str:
    return str(int(millis) // 60000) if isinstance(millis, int) and millis >= 0 else "-"


def email_message(event: SLAEvent) -> EmailMessage:
    """The alert e-mail of an event (Oozie's subject line and fields)."""
    data = event.payload
    addresses = []
    for address in str(data.get("alertContact", "")).split(","):
        address = address.strip()
        try:
            validate_email(address)
        except ValidationError:
            if address:
                log.warning("SLA alert for %s: skipping bad address %r", event.registration_id, address)
            continue
        addresses.append(address)
    if not addresses:
        raise PermanentFailure("no valid address in alert-contact")
    subject = f"SLA {event.event_type} (AppName={data.get('appName')}, JobID={data.get('id')})"
    lines = [f"  {label} - {data[key]}" for key, label in FIELDS if data.get(key) not in (None, "")]
    lines.append(f"  Expected Duration (in mins) - {_minutes(data.get('expectedDuration'))}")
    lines.append(f"  Actual Duration (in mins) - {_minutes(data.get('actualDuration'))}")
    base = settings.SLA_ADMIN_BASE_URL
    if base:
        lines.append(f"  Job URL - {base.rstrip('/')}/admin/coordinators/coordinatorjob/?q={data.get('parentId')}")
    from_email = settings.SLA_EMAIL_FROM or settings.DEFAULT_FROM_EMAIL
    return EmailMessage(subject, "SLA Details:\n" + "\n".join(lines) + "\n", from_email, addresses)


def send_email(event: SLAEvent) -> None:
    """Send the alert e-mail through Django's e-mail backend (EMAIL_* settings, EMAIL_TIMEOUT)."""
    if not email_ready():  # queued before the mail server went away: dropped, not retried
        raise EmailNotConfigured("e-mail is not configured (EMAIL_HOST unset)")
    email_message(event).send(fail_silently=False)


def send_webhook(event: SLAEvent) -> None:
    """POST the event's JSON to SLA_WEBHOOK_URL within SLA_WEBHOOK_TIMEOUT_SECONDS; a non-2xx answer fails."""
    url = str(settings.SLA_WEBHOOK_URL)
    if not url.startswith(("http://", "https://")):
        raise PermanentFailure(f"SLA_WEBHOOK_URL must be http(s), got {url!r}")
    body = json.dumps(event.payload, sort_keys=True).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "oozie-py-sla"}
    secret = str(settings.SLA_WEBHOOK_SECRET)
    if secret:
        headers["X-SLA-Signature"] = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")  # noqa: S310 - scheme checked
    timeout = float(settings.SLA_WEBHOOK_TIMEOUT_SECONDS)
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - scheme checked
        if not 200 <= response.status < 300:
            raise OSError(f"webhook answered {response.status}")


SENDERS: dict[str, Callable[[SLAEvent], None]] = {"email": send_email, "webhook": send_webhook}


def _backoff(attempts: int) -> timedelta:
    base = int(settings.SLA_NOTIFY_RETRY_SECONDS)
    ceiling = int(settings.SLA_NOTIFY_RETRY_MAX_SECONDS)
    return timedelta(seconds=min(ceiling, base * 2 ** max(0, attempts - 1)))


def deliver(now: datetime | None = None, *, batch: int = BATCH) -> int:
    """Send pending SLA events whose attempt is due (at most `batch`); how many were fully sent."""
    now = now or timezone.now()
    lease = timedelta(seconds=int(settings.SLA_NOTIFY_LEASE_SECONDS))
    with transaction.atomic():
        events = list(
            skip_locked(SLAEvent.objects.filter(notify_status=NotifyStatus.PENDING, next_attempt_at__lte=now))
            .order_by("next_attempt_at")[:batch]
        )
        SLAEvent.objects.filter(pk__in=[e.pk for e in events]).update(next_attempt_at=now + lease)
    max_attempts = int(settings.SLA_NOTIFY_MAX_ATTEMPTS)
    down: set[str] = set()
    sent = 0
    for event in events:
        remaining, errors = [], []
        for channel in event.channels:
            sender = SENDERS.get(channel)
            if sender is None:
                errors.append(f"{channel}: unknown channel")
                continue
            if channel in down:
                remaining.append(channel)
                errors.append(f"{channel}: not tried, it failed earlier in this run")
                continue
            try:
                sender(event)
            except EmailNotConfigured as exc:
                errors.append(f"{channel}: {exc}")  # logged once by email_ready, not per event
            except PermanentFailure as exc:
                errors.append(f"{channel}: {exc}")
                log.error("SLA %s for %s: %s not sent: %s", event.event_type, event.registration_id, channel, exc)
            except Exception as exc:  # any transport error: retried by a later run
                remaining.append(channel)
                errors.append(f"{channel}: {exc}")
                down.add(channel)
                log.warning("SLA %s for %s: %s failed (retried later): %s", event.event_type, event.registration_id, channel, exc)
        attempts = event.attempts + 1
        if not remaining:
            status = NotifyStatus.FAILED if errors else NotifyStatus.SENT
            sent += not errors
        elif attempts >= max_attempts:
            status = NotifyStatus.FAILED
            log.error("SLA %s for %s: giving up on %s after %d attempts", event.event_type, event.registration_id, remaining, attempts)
        else:
            status = NotifyStatus.PENDING
        SLAEvent.objects.filter(pk=event.pk).update(
            notify_status=status, channels=remaining, attempts=attempts, last_error="\n".join(errors),
            next_attempt_at=now + _backoff(attempts) if status == NotifyStatus.PENDING else None,
            sent_at=timezone.now() if status == NotifyStatus.SENT else None,
        )
    return sent


def retry_now(event_ids: list[int]) -> int:
    """Queue failed or pending events for delivery at the next run (the admin's retry); how many."""
    with transaction.atomic():
        return SLAEvent.objects.filter(pk__in=event_ids).exclude(channels=[]).exclude(
            notify_status=NotifyStatus.SENT
        ).update(notify_status=NotifyStatus.PENDING, next_attempt_at=timezone.now(), attempts=0)
