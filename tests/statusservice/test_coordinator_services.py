"""Beat services for coordinators: timeouts, job status, recovery of READY actions (launches: tests/workflows)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from coordinators.choices import ActionStatus, JobStatus
from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.services import submit_coordinator
from datasets.timeline import format_datetime
from statusservice import coordinators as services
from statusservice.tasks import input_checks
from tests.support.engine import run_pending_commands
from xcommands.models import Command

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]


def minute(offset: int) -> str:
    return format_datetime((timezone.now() + timedelta(minutes=offset)).replace(second=0, microsecond=0))


def job_with(owner: User, start: int, end: int, timeout: int = -1, inputs: bool = False) -> CoordinatorJob:
    data = (
        """<datasets><dataset name="d" frequency="${coord:minutes(1)}" initial-instance="2000-01-01T00:00Z" timezone="UTC">
             <uri-template>file:///nonexistent/svc/${YEAR}${MONTH}${DAY}${HOUR}${MINUTE}</uri-template></dataset></datasets>
           <input-events><data-in name="in" dataset="d"><instance>${coord:current(0)}</instance></data-in></input-events>"""
        if inputs else ""
    )
    xml = f"""<coordinator-app name="svc" frequency="${{coord:minutes(1)}}" start="{minute(start)}" end="{minute(end)}"
        timezone="UTC" xmlns="uri:oozie:coordinator:0.4">
      <controls><timeout>{timeout}</timeout><concurrency>5</concurrency></controls>{data}
      <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
    </coordinator-app>"""
    job = submit_coordinator(xml, {}, owner=owner)
    run_pending_commands()
    input_checks()  # the beat's input check tick: due actions are checked (and started when ready)
    run_pending_commands()
    return job


def age(action: CoordinatorAction, minutes: int) -> None:
    CoordinatorAction.objects.filter(pk=action.pk).update(last_modified=timezone.now() - timedelta(minutes=minutes))


def test_timeouts_time_out_waiting_actions_past_their_timeout() -> None:
    """A WAITING action whose timeout passed is checked once more and becomes TIMEDOUT; the rest are untouched."""
    owner = User.objects.create_user("t")
    job = job_with(owner, -3, 30, timeout=10, inputs=True)
    first = job.actions.get(number=1)
    CoordinatorAction.objects.filter(pk=first.pk).update(timeout_at=timezone.now() - timedelta(seconds=1))
    assert services.timeouts(timezone.now()) == 1
    assert services.timeouts(timezone.now()) == 0  # taken: pending until its check ran
    run_pending_commands()
    first.refresh_from_db()
    assert first.status == ActionStatus.TIMEDOUT
    assert job.actions.get(number=2).status == ActionStatus.WAITING


def test_job_statuses_finish_jobs_whose_actions_are_all_done() -> None:
    """A running job done materializing with only finished actions gets its final status (once)."""
    owner = User.objects.create_user("s")
    job = job_with(owner, -3, -1)
    job.actions.update(status=ActionStatus.SUCCEEDED)
    assert services.job_statuses(timezone.now()) == 1
    assert services.job_statuses(timezone.now()) == 0  # one pending command is enough
    run_pending_commands()
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert services.job_statuses(timezone.now()) == 0


def test_ready_actions_nobody_started_are_started() -> None:
    """READY actions left behind (a lost ready command) get a ready command, once, when there is room."""
    owner = User.objects.create_user("p")
    job = job_with(owner, -2, -1)
    job.actions.update(status=ActionStatus.READY, external_id="", last_modified=timezone.now() - timedelta(minutes=10))
    before = Command.objects.count()
    assert services.stuck_ready(timezone.now()) == 1
    assert services.stuck_ready(timezone.now()) == 0
    assert Command.objects.count() == before + 1
    run_pending_commands()
    assert set(job.actions.values_list("status", flat=True)) == {ActionStatus.SUBMITTED}
