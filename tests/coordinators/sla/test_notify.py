"""SLA events delivered: e-mail to alert-contact filtered by alert-events, JSON to the webhook, retries."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.core import mail
from django.test import override_settings

from coordinators.choices import ActionStatus
from coordinators.models import CoordinatorAction, SLAEvent
from coordinators.sla import notify
from coordinators.sla.notify import deliver, retry_now
from coordinators.sla.service import check
from statusservice.sla import sla_checks, sla_notifications
from tests.coordinators.sla.factories import SLA_01, materialized_job

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Every test here runs commands in process."""


@dataclass
class Hook:
    """A local webhook: answers with the queued statuses (then 200), optionally slowly; records bodies."""

    url: str = ""
    statuses: list[int] = field(default_factory=list)
    delay: float = 0.0
    bodies: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)


@pytest.fixture
def hook() -> Iterator[Hook]:
    """A tiny HTTP server in a thread, the SLA webhook of the test."""
    state = Hook()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = self.rfile.read(int(self.headers["Content-Length"]))
            time.sleep(state.delay)
            status = state.statuses.pop(0) if state.statuses else 200
            if status == 200:
                state.bodies.append(json.loads(body))
                state.raw.append(body)
                state.headers.append({k.lower(): v for k, v in self.headers.items()})
            self.send_response(status)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/sla"
    yield state
    server.shutdown()
    server.server_close()


def at(action: CoordinatorAction, minutes: float) -> datetime:
    return action.nominal_time + timedelta(minutes=minutes)


def test_misses_named_in_alert_events_are_emailed_to_alert_contact() -> None:
    """alert-events start_miss,end_miss,duration_miss: those go to every alert-contact address; mets do not."""
    action = materialized_job(ago=timedelta(minutes=3)).actions.get()
    assert sla_checks() == 1  # at the real clock: START_MISS
    assert sla_notifications() == 1
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["ops@example.com", "oncall@example.com"]
    assert message.subject == f"SLA START_MISS (AppName=sla-job, JobID={action.pk})"
    assert "Expected Start Time - " in message.body and "Notification Message - hourly load" in message.body
    CoordinatorAction.objects.filter(pk=action.pk).update(
        status=ActionStatus.SUCCEEDED, started_at=at(action, 3), ended_at=at(action, 4)
    )
    sla_checks()  # DURATION_MET, END_MET: not alert events
    assert deliver() == 0 and len(mail.outbox) == 1
    assert set(SLAEvent.objects.values_list("event_type", "notify_status")) == {
        ("START_MISS", "SENT"), ("DURATION_MET", "NONE"), ("END_MET", "NONE"),
    }
    assert deliver() == 0 and len(mail.outbox) == 1  # sent once


def test_without_alert_events_only_the_default_is_emailed() -> None:
    """0.1 has no alert-events: SLA_ALERT_EVENTS (END_MISS by default) decides."""
    action = materialized_job(sla=SLA_01, version="0.1").actions.get()
    check(now=at(action, 11))  # START_MISS and END_MISS
    deliver(now=at(action, 11))
    assert [m.subject.split()[1] for m in mail.outbox] == ["END_MISS"]
    assert mail.outbox[0].to == ["ops@example.com"]


def test_alerts_of_long_past_actions_are_not_sent() -> None:
    """Catching up actions older than SLA_DISABLE_ALERTS_OLDER_THAN_HOURS records their misses silently."""
    action = materialized_job(ago=timedelta(hours=50)).actions.get()
    check(now=at(action, 11))
    assert SLAEvent.objects.filter(notify_status="NONE").count() == 2
    assert deliver(now=at(action, 11)) == 0 and mail.outbox == []


def test_every_event_is_posted_to_the_webhook_as_json(hook: Hook) -> None:
    """SLA_WEBHOOK_URL receives met and miss events as Oozie's SLA JSON, signed when a secret is set."""
    with override_settings(SLA_WEBHOOK_URL=hook.url, SLA_WEBHOOK_SECRET="s3cret", SLA_EMAIL_ENABLED=False):
        action = materialized_job().actions.get()
        CoordinatorAction.objects.filter(pk=action.pk).update(
            status=ActionStatus.SUCCEEDED, started_at=at(action, 1), ended_at=at(action, 3)
        )
        check(now=at(action, 3.5))
        assert deliver(now=at(action, 3.5)) == 3
    assert [b["eventStatus"] for b in hook.bodies] == ["START_MET", "DURATION_MET", "END_MET"]
    body = hook.bodies[-1]
    assert (body["id"], body["parentId"], body["appType"], body["slaStatus"], body["jobStatus"]) == (
        action.pk, action.job_id, "COORDINATOR_ACTION", "MET", "SUCCEEDED",
    )
    assert (body["expectedDuration"], body["actualDuration"]) == (300000, 120000)
    assert body["nominalTime"] == action.nominal_time.isoformat().replace("+00:00", "Z")
    signature = hmac.new(b"s3cret", hook.raw[0], hashlib.sha256).hexdigest()
    assert hook.headers[0]["x-sla-signature"] == f"sha256={signature}"
    assert mail.outbox == []


def test_a_failing_webhook_is_retried_by_a_later_run_and_email_is_not_resent(hook: Hook) -> None:
    """Webhook 500: the e-mail goes, the webhook stays pending with backoff; the next due run sends it."""
    hook.statuses = [500]
    with override_settings(SLA_WEBHOOK_URL=hook.url):
        action = materialized_job().actions.get()
        check(now=at(action, 3))
        assert deliver(now=at(action, 3)) == 0
        event = SLAEvent.objects.get()
        assert (event.notify_status, event.channels, event.attempts) == ("PENDING", ["webhook"], 1)
        assert "500" in event.last_error and event.next_attempt_at is not None
        assert len(mail.outbox) == 1
        assert deliver(now=at(action, 3)) == 0  # backoff: not due yet
        assert deliver(now=event.next_attempt_at + timedelta(seconds=1)) == 1
    event.refresh_from_db()
    assert (event.notify_status, event.channels, event.attempts) == ("SENT", [], 2)
    assert [b["eventStatus"] for b in hook.bodies] == ["START_MISS"]
    assert len(mail.outbox) == 1


def test_a_hanging_webhook_does_not_block_the_run(hook: Hook) -> None:
    """A webhook slower than its timeout fails fast, and is not called again for the other events of the run."""
    hook.delay = 2.0
    with override_settings(SLA_WEBHOOK_URL=hook.url, SLA_WEBHOOK_TIMEOUT_SECONDS=0.3, SLA_EMAIL_ENABLED=False):
        action = materialized_job().actions.get()
        check(now=at(action, 11))  # START_MISS and END_MISS
        started = time.monotonic()
        assert deliver(now=at(action, 11)) == 0
        assert time.monotonic() - started < 1.5
    errors = sorted(SLAEvent.objects.values_list("last_error", flat=True))
    assert any("timed out" in e for e in errors) and any("failed earlier in this run" in e for e in errors)
    assert set(SLAEvent.objects.values_list("notify_status", flat=True)) == {"PENDING"}


def test_delivery_gives_up_after_max_attempts_and_an_operator_can_retry(hook: Hook) -> None:
    """After SLA_NOTIFY_MAX_ATTEMPTS failures the event is FAILED; retry_now queues it again."""
    hook.statuses = [503, 503]
    with override_settings(SLA_WEBHOOK_URL=hook.url, SLA_NOTIFY_MAX_ATTEMPTS=2, SLA_EMAIL_ENABLED=False):
        action = materialized_job().actions.get()
        check(now=at(action, 3))
        deliver(now=at(action, 3))
        deliver(now=at(action, 600))
        event = SLAEvent.objects.get()
        assert (event.notify_status, event.attempts) == ("FAILED", 2)
        assert retry_now([event.pk]) == 1
        assert deliver() == 1
    assert [b["eventStatus"] for b in hook.bodies] == ["START_MISS"]


def test_claimed_events_are_not_sent_twice_by_a_concurrent_run() -> None:
    """Delivery claims events for a lease: a second run meanwhile finds nothing due."""
    action = materialized_job().actions.get()
    check(now=at(action, -1) + timedelta(minutes=4))
    SLAEvent.objects.update(next_attempt_at=at(action, -10))
    calls: list[int] = []
    original = notify.SENDERS["email"]

    def slow_send(event: SLAEvent) -> None:
        calls.append(deliver())  # a second run while the first one is sending
        original(event)

    notify.SENDERS["email"] = slow_send
    try:
        assert deliver() == 1
    finally:
        notify.SENDERS["email"] = original
    assert calls == [0] and len(mail.outbox) == 1
