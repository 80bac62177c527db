"""SLA records in the database: registered at materialization, decided by the checker exactly once."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection
from django.utils import timezone

import coordinators.preparation
from coordinators.choices import ActionStatus
from coordinators.models import CoordinatorAction, CoordinatorJob, SLAEvent, SLARegistration
from coordinators.services import control, rerun_job, submit_coordinator
from coordinators.sla.service import check, reopen
from oozie.definitions import DefinitionError
from project.celery import route_task
from statusservice.sla import sla_checks
from statusservice.tick import SERVICES
from tests.coordinators.sla.factories import SLA_01, materialized_job, sla_xml
from tests.support.engine import run_pending_commands

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Every test here runs commands in process."""


def events(action: CoordinatorAction) -> list[tuple[str, int]]:
    return list(SLAEvent.objects.filter(registration_id=action.pk).order_by("id").values_list("event_type", "run"))


def at(action: CoordinatorAction, minutes: float) -> datetime:
    return action.nominal_time + timedelta(minutes=minutes)


def test_materialization_stores_the_evaluated_sla_and_registers_it() -> None:
    """Each action carries its evaluated SLA; its record holds expected start, end and duration, due at the start."""
    job = materialized_job()
    action = job.actions.get()
    assert action.sla is not None and action.sla["version"] == "0.2"
    assert action.sla["expected-end"] == at(action, 10).isoformat()
    record = SLARegistration.objects.get(pk=action.pk)
    assert (record.expected_start, record.expected_end, record.expected_duration) == (
        at(action, 2), at(action, 10), timedelta(minutes=5),
    )
    assert record.alert_events == ["START_MISS", "END_MISS", "DURATION_MISS"]
    assert record.alert_contact == "ops@example.com, oncall@example.com"
    assert record.notification_msg.startswith("hourly load ")
    assert (record.user, record.app_name, record.job_id, record.run) == ("ann", "sla-job", job.id, 0)
    assert record.next_check_at == at(action, 2) and not record.closed
    assert record.sla_status == "NOT_STARTED"


def test_sla_0_1_is_registered_with_every_field() -> None:
    """0.1: app-name overrides the job's; contacts kept; the duration is should-end minus should-start."""
    job = materialized_job(sla=SLA_01, version="0.1")
    record = SLARegistration.objects.get(job=job)
    assert (record.version, record.app_name, record.expected_duration) == ("0.1", "legacy-load", timedelta(minutes=8))
    assert record.info["dev-contact"] == "dev@example.com" and record.info["se-contact"] == "se@example.com"
    assert record.alert_events is None  # the server default (SLA_ALERT_EVENTS) decides what is e-mailed


def test_each_miss_is_recorded_once_however_often_the_checker_runs() -> None:
    """START_MISS at the start deadline, DURATION_MISS while running too long, END_MISS at the end deadline; once each."""
    action = materialized_job().actions.get()
    assert check(now=at(action, 1)) == 0  # nothing is due yet
    for _ in range(2):
        check(now=at(action, 3))
    assert events(action) == [("START_MISS", 0)]
    CoordinatorAction.objects.filter(pk=action.pk).update(status=ActionStatus.RUNNING, started_at=at(action, 4))
    check(now=at(action, 4.5))
    record = SLARegistration.objects.get(pk=action.pk)
    assert (record.sla_status, record.actual_start, record.next_check_at) == ("IN_PROCESS", at(action, 4), at(action, 9))
    for _ in range(2):
        check(now=at(action, 9.5))
        check(now=at(action, 10.5))
    assert events(action) == [("START_MISS", 0), ("DURATION_MISS", 0), ("END_MISS", 0)]
    CoordinatorAction.objects.filter(pk=action.pk).update(status=ActionStatus.SUCCEEDED, ended_at=at(action, 12))
    check(now=at(action, 12.5))
    check(now=at(action, 30))
    record.refresh_from_db()
    assert record.closed and record.sla_status == "MISS" and record.next_check_at is None
    assert (record.actual_end, record.actual_duration) == (at(action, 12), timedelta(minutes=8))
    assert record.event_status == "START_MISS,DURATION_MISS,END_MISS"
    assert len(events(action)) == 3


def test_an_action_in_time_meets_every_criterion_at_its_end() -> None:
    """Started before should-start, done within max-duration and before should-end: the three met events."""
    action = materialized_job().actions.get()
    CoordinatorAction.objects.filter(pk=action.pk).update(
        status=ActionStatus.SUCCEEDED, started_at=at(action, 1), ended_at=at(action, 3)
    )
    check(now=at(action, 3.5))
    assert events(action) == [("START_MET", 0), ("DURATION_MET", 0), ("END_MET", 0)]
    assert SLARegistration.objects.get(pk=action.pk).sla_status == "MET"


def test_a_failed_action_misses_its_end_when_it_ends() -> None:
    """FAILED before the end deadline is END_MISS at once (Oozie: a failed job misses its SLA)."""
    action = materialized_job().actions.get()
    CoordinatorAction.objects.filter(pk=action.pk).update(
        status=ActionStatus.FAILED, started_at=at(action, 1), ended_at=at(action, 2)
    )
    check(now=at(action, 2.5))
    assert events(action) == [("START_MET", 0), ("DURATION_MET", 0), ("END_MISS", 0)]


def test_killed_through_the_command_is_seen_by_the_beat_task() -> None:
    """Killing the job ends its actions (ended_at); the beat task, at the real clock, records END_MISS."""
    job = materialized_job()
    control(job.id, "kill", actor=job.owner)
    run_pending_commands()
    action = job.actions.get()
    assert action.status == ActionStatus.KILLED and action.ended_at is not None
    assert sla_checks() == 1
    assert ("END_MISS", 0) in events(action)
    assert sla_checks() == 0  # closed: never looked at again


def test_two_checkers_at_once_record_each_event_once() -> None:
    """Two checker runs at the same moment (two threads, two connections): every event exactly once."""
    job = materialized_job(actions=12, ago=timedelta(minutes=60))
    assert job.actions.count() == 12
    now = job.actions.order_by("-nominal_time").first().nominal_time + timedelta(minutes=11)  # type: ignore[union-attr]
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            barrier.wait()
            check(now=now)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors
    counts = SLAEvent.objects.values_list("event_type", flat=True)
    assert sorted(set(counts)) == ["END_MISS", "START_MISS"]
    assert len(counts) == 24


def test_a_rerun_is_tracked_as_a_new_run() -> None:
    """After a rerun, the record opens again: the new run gets its own events, the old ones stay."""
    action = materialized_job().actions.get()
    CoordinatorAction.objects.filter(pk=action.pk).update(
        status=ActionStatus.FAILED, started_at=at(action, 1), ended_at=at(action, 2)
    )
    check(now=at(action, 2.5))
    action.refresh_from_db()
    action.transition_to(ActionStatus.WAITING)
    action.run_count += 1
    action.save(update_fields=["status", "run_count"])
    assert reopen([action.pk]) == 1
    record = SLARegistration.objects.get(pk=action.pk)
    assert (record.run, record.closed, record.sla_status, record.event_status) == (1, False, "NOT_STARTED", "")
    check(now=at(action, 11))
    assert events(action)[3:] == [("START_MISS", 1), ("END_MISS", 1)]


def test_a_rerun_through_the_service_reopens_the_record() -> None:
    """services.rerun_job -> CoordRerunXCommand: the closed record opens and the new run is tracked anew."""
    job = materialized_job()
    action = job.actions.get()
    CoordinatorAction.objects.filter(pk=action.pk).update(
        status=ActionStatus.FAILED, started_at=at(action, 1), ended_at=at(action, 2)
    )
    check(now=at(action, 2.5))
    assert SLARegistration.objects.get(pk=action.pk).closed
    rerun_job(job.id, actor=job.owner, rerun_type="action", scope="1", nocleanup=True)
    run_pending_commands()
    action.refresh_from_db()
    assert action.run_count == 1
    record = SLARegistration.objects.get(pk=action.pk)
    assert not record.closed and record.run == 0  # reopened; the checker starts it over
    check(now=at(action, 11))
    record.refresh_from_db()
    assert record.run == 1
    assert ("END_MISS", 1) in events(action) and ("END_MISS", 0) in events(action)


def test_an_open_record_notices_a_rerun_by_itself() -> None:
    """Without reopen(), an open record whose action's run count moved starts over for the new run."""
    action = materialized_job().actions.get()
    check(now=at(action, 3))
    CoordinatorAction.objects.filter(pk=action.pk).update(run_count=1)
    check(now=at(action, 3))
    assert events(action) == [("START_MISS", 0), ("START_MISS", 1)]


def test_actions_without_sla_have_no_record() -> None:
    """A coordinator without sla:info: actions store no SLA and nothing is registered."""
    job = materialized_job(sla="")
    assert job.actions.get().sla is None
    assert not SLARegistration.objects.filter(job=job).exists()


def test_an_sla_that_does_not_evaluate_does_not_stop_materialization(monkeypatch: pytest.MonkeyPatch) -> None:
    """A negative should-end: the action is created with the error on it, and nothing is tracked.

    Submission refuses such a block (validate_sla); materialization must still survive one
    (a job stored before the check, or a value that only goes wrong for a later action).
    """
    monkeypatch.setattr(coordinators.preparation, "validate_sla", lambda resolved, now: None)
    job = materialized_job(sla="<sla:nominal-time>${coord:nominalTime()}</sla:nominal-time><sla:should-end>${-1 * HOURS}</sla:should-end>")
    action = job.actions.get()
    assert action.sla is not None and "must not be negative" in action.sla["error"]
    assert not SLARegistration.objects.filter(job=job).exists()


def test_the_beat_schedule_runs_the_sla_services() -> None:
    """celery beat's tick runs the checker and the delivery (ADR 0017), on the services queue."""
    tasks = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert tasks == {"statusservice.tick"}
    assert {"sla.checks", "sla.notifications"} <= {service.name for service in SERVICES}
    assert route_task("statusservice.tick", (), {}, {}) == {"queue": "services"}
    assert route_task("statusservice.sla_notifications", (), {}, {}) == {"queue": "services"}


def test_submission_refuses_an_sla_block_that_does_not_evaluate() -> None:
    """A negative should-end is the submitter's error: a DefinitionError naming sla:info, and nothing is stored."""
    start = timezone.now().replace(second=0, microsecond=0)
    bad = "<sla:nominal-time>${coord:nominalTime()}</sla:nominal-time><sla:should-end>${-1 * HOURS}</sla:should-end>"
    with pytest.raises(DefinitionError, match="sla:info"):
        submit_coordinator(sla_xml(start, start + timedelta(hours=1), bad), {}, owner=User.objects.create_user("neg"))
    assert CoordinatorJob.objects.count() == 0
