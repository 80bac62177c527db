"""Idle means idle: a suspended job's waiting actions cause no command and arm no wake-up (issue 24, item 3).

Before, suspending a job whose action was WAITING and overdue produced a skipped input-check
command at every tick and wake-up (18 a second): the skip reset `pending` but the action stayed
due. Now the tick, the due start and the wake-up arming look only at jobs whose inputs are
checked (RUNNING, RUNNINGWITHERROR, PAUSED...); on resume the overdue action is checked at once.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from coordinators.choices import ActionStatus, JobStatus
from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.services import control, submit_coordinator
from datasets.timeline import format_datetime
from statusservice import coordinators as services
from statusservice.tick import _next_input_check
from tests.support.engine import run_pending_commands
from xcommands.choices import CommandStatus
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Commands run in process."""


def waiting_job(data: Path) -> tuple[CoordinatorJob, User]:
    """A RUNNING hourly job whose current action waits for an input that never comes, its check overdue."""
    start = (timezone.now() - timedelta(minutes=5)).replace(second=0, microsecond=0)
    xml = f"""<coordinator-app name="waits" frequency="${{coord:hours(1)}}" start="{format_datetime(start)}"
        end="{format_datetime(start + timedelta(hours=1))}" timezone="UTC" xmlns="uri:oozie:coordinator:0.4">
      <datasets><dataset name="in" frequency="${{coord:hours(1)}}" initial-instance="2020-01-01T00:00Z" timezone="UTC">
        <uri-template>file://{data}/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}</uri-template></dataset></datasets>
      <input-events><data-in name="in" dataset="in"><instance>${{coord:current(0)}}</instance></data-in></input-events>
      <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
    </coordinator-app>"""
    owner = User.objects.create_user("ann")
    job = submit_coordinator(xml, {}, owner=owner)
    run_pending_commands()
    assert job.actions.get(number=1).status == ActionStatus.WAITING
    return job, owner


def overdue(job: CoordinatorJob) -> None:
    """Make the waiting action's next check due now, as time passing would."""
    CoordinatorAction.objects.filter(job=job, status=ActionStatus.WAITING).update(
        next_check_at=timezone.now() - timedelta(seconds=1), pending=False,
    )


def queued_commands() -> int:
    return Command.objects.filter(status=CommandStatus.PENDING).count()


def test_a_suspended_jobs_overdue_action_causes_no_command_and_no_wake_up(tmp_path: Path) -> None:
    """Twenty ticks over a suspended job's overdue action: no command queued, no wake-up armed; resume checks it."""
    job, owner = waiting_job(tmp_path)
    control(job.id, "suspend", actor=owner)
    run_pending_commands()
    assert CoordinatorJob.objects.get(pk=job.id).status == JobStatus.SUSPENDED
    overdue(job)
    for _ in range(20):
        services.input_checks(timezone.now())
        assert queued_commands() == 0
        run_pending_commands()
    assert _next_input_check(timezone.now() + timedelta(minutes=1)) is None
    action = job.actions.get(number=1)
    assert action.status == ActionStatus.WAITING and not action.pending

    control(job.id, "resume", actor=owner)
    run_pending_commands()
    checks = job.actions.get(number=1).check_count
    services.input_checks(timezone.now())  # still overdue: checked at the first tick after the resume
    run_pending_commands()
    assert job.actions.get(number=1).check_count == checks + 1


def test_a_running_jobs_overdue_action_is_still_checked(tmp_path: Path) -> None:
    """The same action of a RUNNING job: the tick checks it and arms its next wake-up (the filter is on the job's status only)."""
    job, _ = waiting_job(tmp_path)
    overdue(job)
    checks = job.actions.get(number=1).check_count
    services.input_checks(timezone.now())
    run_pending_commands()
    action = job.actions.get(number=1)
    assert action.check_count == checks + 1 and action.next_check_at is not None
    assert _next_input_check(action.next_check_at + timedelta(seconds=1)) == action.next_check_at
