"""Quiet by default (ADR 0017): idle costs one tick per SERVICE_TICK_SECONDS and logs nothing at INFO; due work still runs on time.

The integration tests run a real celery beat and worker against a real Redis and count, with
Redis MONITOR, every message pushed onto a queue. The unit tests check the parts: the tick
runs each service once per period, wake-ups are armed at the due time of work due before the
next tick (once), Flower's name of an action's task carries the action id, the routine log
lines of the periodic tasks are dropped, and an unconfigured SLA e-mail is said once and
never retried.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from celery.signals import task_postrun
from django.conf import settings
from django.contrib.auth.models import User
from django.core import mail
from django.core.mail import EmailMessage
from django.test import override_settings
from django.utils import timezone

from coordinators.choices import ActionStatus
from coordinators.commands import CoordActionInputCheckXCommand
from coordinators.models import CoordinatorAction, CoordinatorJob, SLAEvent
from coordinators.services import submit_coordinator
from coordinators.sla import notify
from coordinators.sla.models import NotifyStatus
from coordinators.sla.notify import deliver
from coordinators.sla.service import check
from kernel.mail import EmailNotConfigured, email_configured
from project.celery import QUEUE_NAMES, app
from statusservice import tick as clock
from tests.coordinators.runtime.test_end_to_end import definition, minute
from tests.coordinators.sla.factories import SLA_01, materialized_job
from tests.statusservice.test_coordinator_services import job_with
from tests.support.processes import WorkerProcess, wait_until
from workflows.launch import RUN_TASK, dispatch, display_name
from xcommands.base import registered_command
from xcommands.choices import CommandStatus
from xcommands.models import Command

Start = Callable[..., WorkerProcess]


# --- helpers -------------------------------------------------------------------------------------


class QueuePushes:
    """Every LPUSH/RPUSH onto a Celery queue while it runs (Redis MONITOR in a thread), the tick's claims, every PUBLISH."""

    def __init__(self, url: str) -> None:
        self.client = redis.Redis.from_url(url)
        self.pushes: list[tuple[float, str, str]] = []
        self.publishes: list[str] = []
        self.claims: list[str] = []
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._listen, daemon=True)

    def _listen(self) -> None:
        with self.client.monitor() as monitor:
            self._ready.set()
            for entry in monitor.listen():
                if self._stop.is_set():
                    return
                parts = str(entry.get("command", "")).split(" ", 2)
                verb = parts[0].upper()
                if verb in {"LPUSH", "RPUSH"} and len(parts) > 1 and parts[1].split("\\x06", 1)[0] in QUEUE_NAMES:
                    self.pushes.append((time.monotonic(), parts[1], parts[2] if len(parts) > 2 else ""))
                elif verb == "SET" and len(parts) > 1 and parts[1].strip('"').startswith(clock.PREFIX):
                    self.claims.append(parts[1].strip('"'))
                elif verb == "PUBLISH":
                    self.publishes.append(parts[1] if len(parts) > 1 else "")

    def __enter__(self) -> QueuePushes:
        self._thread.start()
        assert self._ready.wait(10), "MONITOR did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.client.ping()  # one more command, so the listener sees the stop flag
        self._thread.join(10)
        self.client.close()


def task_names(pushes: list[tuple[float, str, str]]) -> list[str]:
    """The task names of pushed Celery messages (their `task` header)."""
    names = []
    for _, _, payload in pushes:
        try:
            body = json.loads(payload.strip('"').encode().decode("unicode_escape"))
            names.append(str(body["headers"]["task"]))
        except (ValueError, KeyError, TypeError):
            names.append("?")
    return names


def queued(url: str, queue: str) -> list[dict[str, Any]]:
    """The headers of the Celery messages waiting in a queue, oldest first."""
    client = redis.Redis.from_url(url)
    try:
        return [json.loads(raw)["headers"] for raw in reversed(client.lrange(queue, 0, -1))]
    finally:
        client.close()


def wakeups(url: str) -> list[dict[str, Any]]:
    """The wake-up messages waiting in the services queue."""
    return [headers for headers in queued(url, "services") if headers["task"] == clock.WAKEUP_TASK]


# --- integration: real beat, worker and Redis ----------------------------------------------------

IDLE_SECONDS = 30.0


@pytest.mark.integration
def test_idle_services_send_at_most_one_task_per_ten_seconds_and_log_nothing(
    live_workers: Start, live_beat: Start, celery_to_test_redis: str
) -> None:
    """With defaults and nothing to do, beat and worker push at most one message per 10 s (the tick) and log no INFO line."""
    with override_settings(SERVICE_TICK_SECONDS=10):
        assert clock.tick_seconds() == 10
    worker = live_workers(name="w1")
    beat = live_beat()
    time.sleep(1)  # start-up lines are written
    worker_mark, beat_mark = len(worker.log()), len(beat.log())
    with QueuePushes(celery_to_test_redis) as monitor:
        time.sleep(IDLE_SECONDS)
    names = task_names(monitor.pushes)
    assert names, "no tick reached the broker in 30 s: is beat running?"
    assert set(names) == {clock.TICK_TASK}, names
    assert len(names) <= IDLE_SECONDS / 10 + 1, f"{len(names)} messages in {IDLE_SECONDS} s: {names}"
    # The ticks ran in the worker: the sweep (15 s period > 10 s tick) claimed its runs.
    assert f"{clock.PREFIX}ran:xcommands.sweep" in monitor.claims, monitor.claims
    idle_logs = worker.log()[worker_mark:] + beat.log()[beat_mark:]
    info = [line for line in idle_logs.splitlines() if "INFO" in line]
    assert not info, "idle services logged:\n" + "\n".join(info[:20])
    assert "ERROR" not in idle_logs and "Traceback" not in idle_logs, idle_logs[-3000:]


@pytest.mark.integration
def test_a_check_due_between_ticks_runs_at_its_due_time_and_flower_names_the_action(
    live_workers: Start, live_beat: Start, celery_to_test_redis: str, tmp_path: Path
) -> None:
    """With a 30 s tick, a new action is checked at once and its next check (4 s later) on time; its task is shown with its id."""
    slow_tick = {
        "SERVICE_TICK_SECONDS": "30", "STATUS_SERVICE_SECONDS": "30", "COMMAND_SWEEP_SECONDS": "30",
        "COORD_INPUT_CHECK_SECONDS": "4", "COORD_INPUT_CHECK_MAX_SECONDS": "4", "COMMAND_RING_STALE_SECONDS": "2",
    }
    worker = live_workers(name="w1", **slow_tick)
    live_beat(**slow_tick)
    time.sleep(1)  # beat's first tick is 30 s away
    data, out = tmp_path / "data", tmp_path / "out"
    with override_settings(COMMAND_RING_STALE_SECONDS=2):
        job = submit_coordinator(definition(data, out, minute(-1), minute(0)), {}, owner=User.objects.create_user("q"))
    submitted = time.monotonic()
    # Start, materialize, then the first check, woken by the materialization: no tick needed.
    wait_until(lambda: CoordinatorAction.objects.filter(job=job, check_count__gte=1).exists(), 15, "the first check")
    first_check = time.monotonic()
    assert first_check - submitted < 8
    action = CoordinatorJob.objects.get(pk=job.pk).actions.get()
    assert action.status == ActionStatus.WAITING
    flag = data / action.data_in["in"][0].rsplit("/", 1)[-1]
    flag.mkdir(parents=True)
    (flag / "_SUCCESS").write_text("")
    wait_until(lambda: CoordinatorAction.objects.get(pk=action.pk).status != ActionStatus.WAITING, 40, "the re-check")
    assert time.monotonic() - first_check < 4 + 3, "the re-check waited for a tick instead of its due time"
    wait_until(lambda: CoordinatorAction.objects.get(pk=action.pk).status == ActionStatus.SUCCEEDED, 30, "the action")
    # The worker log (and Flower, which shows the same name) names the action the task ran for.
    assert f"examples.produce {action.pk}[" in worker.log()


# --- the tick and its wake-ups -------------------------------------------------------------------


def test_the_beat_schedule_is_one_tick_no_longer_than_the_service_periods() -> None:
    """Beat sends only the tick; it comes every SERVICE_TICK_SECONDS, or sooner when a service period is shorter."""
    assert [entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()] == [clock.TICK_TASK]
    with override_settings(SERVICE_TICK_SECONDS=10, STATUS_SERVICE_SECONDS=10, COMMAND_SWEEP_SECONDS=15):
        assert clock.tick_seconds() == 10
    with override_settings(SERVICE_TICK_SECONDS=10, STATUS_SERVICE_SECONDS=1, COMMAND_SWEEP_SECONDS=15):
        assert clock.tick_seconds() == 1
    with override_settings(SERVICE_TICK_SECONDS=60, STATUS_SERVICE_SECONDS=30, COMMAND_SWEEP_SECONDS=20):
        assert clock.tick_seconds() == 20


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_engine")
def test_a_tick_runs_each_service_once_per_period(redis_url: str) -> None:
    """Two ticks in a row: services whose period is the tick's run twice; the sweep (15 s) and the purge (1 h) once."""
    with override_settings(SERVICE_TICK_SECONDS=10, STATUS_SERVICE_SECONDS=10, COMMAND_SWEEP_SECONDS=15):
        first, second = clock.run_tick(), clock.run_tick()
    assert {"xcommands.sweep", "xcommands.purge", "coordinators.input_checks", "sla.checks"} <= set(first)
    assert "failed" not in first.values()
    assert {"coordinators.input_checks", "batches.dispatch", "sla.checks", "coordinators.timeouts"} <= set(second)
    assert "xcommands.sweep" not in second and "xcommands.purge" not in second


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_engine")
def test_a_failing_service_does_not_stop_the_others(
    redis_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A service that raises is logged with its name and reported failed; the ones after it still run."""

    def broken(now: datetime) -> None:
        raise RuntimeError("boom")

    services = tuple(
        clock.Service(s.name, broken, s.period_setting, s.default_period) if s.name == "coordinators.pause_times" else s
        for s in clock.SERVICES
    )
    monkeypatch.setattr(clock, "SERVICES", services)
    results = clock.run_tick()
    assert results["coordinators.pause_times"] == "failed"
    assert "coordinators.input_checks" in results and "batches.dispatch" in results
    assert any("coordinators.pause_times failed" in r.getMessage() for r in caplog.records)


def waiting_job(owner: str) -> CoordinatorJob:
    """A running job with two WAITING actions whose inputs never come (checked once, next checks in a minute)."""
    job = job_with(User.objects.create_user(owner), -3, 30, inputs=True)
    assert job.actions.filter(status=ActionStatus.WAITING).count() >= 2
    return job


def due_in(action: CoordinatorAction, seconds: float) -> datetime:
    """Make the action's next check due in `seconds` (not pending); when that is."""
    when = timezone.now() + timedelta(seconds=seconds)
    CoordinatorAction.objects.filter(pk=action.pk).update(next_check_at=when, pending=False)
    return when


def eta_of(headers: dict[str, Any]) -> datetime | None:
    """The ETA of a message, aware."""
    return datetime.fromisoformat(headers["eta"]) if headers.get("eta") else None


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_engine")
def test_the_tick_arms_one_wakeup_at_the_due_time_of_a_check_due_before_the_next_tick(redis_url: str) -> None:
    """A check due in 3 s (tick 10 s): one input-check wake-up with that ETA; a second tick arms no second one."""
    job = waiting_job("arm")
    CoordinatorAction.objects.filter(job=job).update(next_check_at=timezone.now() + timedelta(hours=1))
    first = job.actions.order_by("number").first()
    assert first is not None
    when = due_in(first, 3)
    with override_settings(SERVICE_TICK_SECONDS=10, STATUS_SERVICE_SECONDS=10):
        clock.run_tick()
        clock.run_tick()
    armed = wakeups(redis_url)
    assert len(armed) == 1, armed
    assert "input_checks" in armed[0]["kwargsrepr"]
    eta = eta_of(armed[0])
    assert eta is not None and abs((eta - when).total_seconds()) < 0.01


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_engine")
def test_no_wakeup_for_work_due_after_the_next_tick(redis_url: str) -> None:
    """Checks due in a minute (tick 10 s): the tick sends nothing; the next ticks will see them."""
    job = waiting_job("later")
    CoordinatorAction.objects.filter(job=job).update(next_check_at=timezone.now() + timedelta(seconds=60), pending=False)
    with override_settings(SERVICE_TICK_SECONDS=10, STATUS_SERVICE_SECONDS=10):
        clock.run_tick()
    assert wakeups(redis_url) == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_engine")
def test_a_wakeup_queues_the_due_checks_and_arms_the_next_no_sooner_than_its_spacing(redis_url: str) -> None:
    """The wake-up queues the check of the due action; the next one, due in 0.2 s, is woken 2 s later (the spacing)."""
    job = waiting_job("run")
    first, second = job.actions.order_by("number")[:2]
    due_in(first, -1)
    due_in(second, 0.2)
    Command.objects.filter(status=CommandStatus.PENDING).delete()
    started = timezone.now()
    # The per-job command path: the due start (ADR 0026, tests/coordinators/runtime/test_due_start.py)
    # would decide the action in the wake-up itself; what is tested here is the queueing and the spacing.
    with override_settings(COORD_INPUT_TICK_SECONDS=2, SERVICE_TICK_SECONDS=10, STATUS_SERVICE_SECONDS=10,
                           COORD_DUE_START=False):
        clock.run_wakeup("input_checks", "0")
    checks = Command.objects.filter(name=CoordActionInputCheckXCommand.command_name, status=CommandStatus.PENDING)
    assert checks.count() == 1
    assert CoordinatorAction.objects.get(pk=first.pk).pending
    assert not CoordinatorAction.objects.get(pk=second.pk).pending
    armed = wakeups(redis_url)
    assert len(armed) == 1
    eta = eta_of(armed[0])
    assert eta is not None and eta >= started + timedelta(seconds=2)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_engine")
def test_a_materialization_wakes_the_checks_of_its_new_actions_at_once(redis_url: str) -> None:
    """After a materialize task (the worker's task_postrun), due checks get a wake-up now; after other commands nothing."""
    job = waiting_job("new")
    CoordinatorAction.objects.filter(job=job).update(next_check_at=timezone.now() + timedelta(hours=1))
    first = job.actions.order_by("number").first()
    assert first is not None
    due_in(first, -5)
    start_task = registered_command("coordinators.CoordStartXCommand").celery_task
    task_postrun.send(sender=start_task, task_id="t1", task=start_task, args=(), kwargs={}, retval=None, state="SUCCESS")
    assert wakeups(redis_url) == []
    materialize = registered_command("coordinators.CoordMaterializeXCommand").celery_task
    task_postrun.send(sender=materialize, task_id="t2", task=materialize, args=(), kwargs={}, retval=None, state="SUCCESS")
    armed = wakeups(redis_url)
    assert len(armed) == 1 and not armed[0].get("eta")


@pytest.mark.django_db(transaction=True)
def test_wakeups_are_off_without_a_redis_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    """A broker that is not Redis: nothing is armed (the tick alone bounds the delay), and nothing fails."""
    monkeypatch.setattr(app.conf, "broker_url", "memory://")
    assert clock.arm(clock.WAKEUPS["input_checks"], timezone.now()) is None


# --- Flower names the action; quiet logs; SLA e-mail not configured ------------------------------


def test_an_action_task_is_shown_with_its_action_id(celery_to_test_redis: str) -> None:
    """The workflow node's message runs workflows.run but is shown (shadow) as `<task> <coordinator action id>`."""
    kwargs = {"node": "0000007-261123-W@task", "attempt": 1, "parent": "0000003-261123-C@12", "task": "examples.produce"}
    assert dispatch("00000000-0000-0000-0000-000000000001", "actions", kwargs)
    (headers,) = queued(celery_to_test_redis, "actions")
    assert headers["task"] == RUN_TASK
    assert headers["shadow"] == "examples.produce 0000003-261123-C@12"
    assert display_name({**kwargs, "parent": ""}) == "examples.produce 0000007-261123-W@task"


@pytest.mark.parametrize(
    ("logger", "level", "message", "args", "kept"),
    [
        ("celery.beat", logging.INFO, "Scheduler: Sending due task %s (%s)", ("services-tick", "statusservice.tick"), False),
        ("celery.worker.strategy", logging.INFO, "Task %(name)s[%(id)s] received", {"name": "statusservice.tick", "id": "1"}, False),
        ("celery.app.trace", logging.INFO, "Task %(name)s[%(id)s] succeeded", {"name": "statusservice.wakeup", "id": "2"}, False),
        ("celery.app.trace", logging.INFO, "Task %(name)s[%(id)s] succeeded", {"name": "examples.produce X@1", "id": "3"}, True),
        ("celery.app.trace", logging.ERROR, "Task %(name)s[%(id)s] raised", {"name": "statusservice.tick", "id": "4"}, True),
        ("celery.beat", logging.INFO, "beat: Starting...", (), True),
    ],
    ids=["beat-sends-tick", "worker-receives-tick", "wakeup-succeeds", "real-task", "tick-fails", "beat-starts"],
)
def test_routine_lines_of_the_periodic_tasks_are_dropped(
    caplog: pytest.LogCaptureFixture, logger: str, level: int, message: str, args: Any, kept: bool
) -> None:
    """Beat's and the worker's INFO lines about the tick and wake-ups are dropped; other tasks and failures are kept."""
    caplog.set_level(logging.INFO, logger=logger)
    logging.getLogger(logger).log(level, message, *([args] if isinstance(args, dict) else args))
    assert bool([r for r in caplog.records if r.name == logger]) is kept


def test_log_periodic_tasks_keeps_the_routine_lines(caplog: pytest.LogCaptureFixture) -> None:
    """LOG_PERIODIC_TASKS=true: the tick's lines are logged again."""
    caplog.set_level(logging.INFO, logger="celery.beat")
    with override_settings(LOG_PERIODIC_TASKS=True):
        logging.getLogger("celery.beat").info("Scheduler: Sending due task %s (%s)", "services-tick", "statusservice.tick")
    assert len(caplog.records) == 1


NOT_CONFIGURED = "kernel.mail.NotConfiguredBackend"


@pytest.fixture
def fresh_notice(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process has not said yet that e-mail is not configured."""
    monkeypatch.setattr(notify, "_said_not_configured", False)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_engine", "fresh_notice")
def test_an_unconfigured_sla_email_is_said_once_and_never_tried(caplog: pytest.LogCaptureFixture) -> None:
    """No EMAIL_HOST: SLA misses are recorded without an e-mail channel, nothing is sent or retried, one warning in all."""
    with override_settings(EMAIL_BACKEND=NOT_CONFIGURED):
        for name in ("a", "b"):
            action = materialized_job(name=f"sla-{name}", sla=SLA_01, version="0.1").actions.get()
            check(now=action.nominal_time + timedelta(minutes=11))  # START_MISS, END_MISS (e-mailed by default)
        assert deliver() == 0
    assert SLAEvent.objects.filter(event_type="END_MISS").count() == 2
    assert set(SLAEvent.objects.values_list("notify_status", flat=True)) == {NotifyStatus.NONE}
    assert mail.outbox == []
    notices = [r for r in caplog.records if "not configured" in r.getMessage()]
    assert len(notices) == 1 and notices[0].levelno == logging.WARNING


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_engine", "fresh_notice")
def test_a_pending_email_is_dropped_not_retried_once_email_is_unconfigured(caplog: pytest.LogCaptureFixture) -> None:
    """An e-mail queued while a mail server was configured, delivered after it was removed: FAILED, 'not configured', no retry."""
    action = materialized_job(sla=SLA_01, version="0.1").actions.get()
    check(now=action.nominal_time + timedelta(minutes=11))
    event = SLAEvent.objects.get(event_type="END_MISS")
    assert event.channels == ["email"]
    with override_settings(EMAIL_BACKEND=NOT_CONFIGURED):
        deliver(now=action.nominal_time + timedelta(minutes=12))
    event.refresh_from_db()
    assert event.notify_status == NotifyStatus.FAILED
    assert "not configured" in event.last_error and event.next_attempt_at is None
    assert len([r for r in caplog.records if "not configured" in r.getMessage()]) == 1


def test_the_unconfigured_backend_refuses_clearly() -> None:
    """Without EMAIL_HOST any e-mail (a batch report too) fails at once naming EMAIL_HOST, never trying localhost:25."""
    with override_settings(EMAIL_BACKEND=NOT_CONFIGURED):
        assert not email_configured()
        with pytest.raises(EmailNotConfigured, match="EMAIL_HOST"):
            EmailMessage("s", "b", "a@example.com", ["b@example.com"]).send()
        assert EmailMessage("s", "b", "a@example.com", ["b@example.com"]).send(fail_silently=True) == 0
    with override_settings(EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend", EMAIL_HOST="mail.example.com"):
        assert email_configured()
