"""Submit, start and materialize through the command engine (in process; workers are tested elsewhere)."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from coordinators.choices import ActionStatus, IllegalTransition, JobStatus
from coordinators.commands import CoordActionReadyXCommand, CoordMaterializeXCommand
from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.services import control, submit_coordinator
from datasets.timeline import format_datetime
from oozie.definitions import DefinitionError
from tests.support.engine import run_pending_commands
from xcommands.choices import CommandStatus
from xcommands.models import Command
from xcommands.queue import enqueue

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Every test here runs commands in process."""


def xml(start: str, end: str, throttle: int = 12, app_path: str = "task:examples.noop") -> str:
    return f"""<coordinator-app name="minutely" frequency="${{coord:minutes(1)}}" start="{start}" end="{end}" timezone="UTC"
        xmlns="uri:oozie:coordinator:0.4">
      <controls><throttle>{throttle}</throttle></controls>
      <datasets><dataset name="d" frequency="${{coord:minutes(1)}}" initial-instance="2000-01-01T00:00Z" timezone="UTC">
        <uri-template>file:///data/${{YEAR}}/${{MONTH}}/${{DAY}}/${{HOUR}}${{MINUTE}}</uri-template></dataset></datasets>
      <input-events><data-in name="in" dataset="d"><instance>${{coord:current(0)}}</instance></data-in></input-events>
      <action><workflow><app-path>{app_path}</app-path>
        <configuration><property><name>input</name><value>${{coord:dataIn('in')}}</value></property></configuration>
      </workflow></action>
    </coordinator-app>"""


def run_all() -> int:
    return run_pending_commands()


def minutes_ago(n: int) -> str:
    return format_datetime((timezone.now() - timedelta(minutes=n)).replace(second=0, microsecond=0))


def test_submit_start_and_catch_up_within_throttle() -> None:
    """A past job materializes at most `throttle` WAITING actions; numbers start at 1; nothing twice."""
    owner = User.objects.create_user("ann")
    job = submit_coordinator(xml(minutes_ago(30), minutes_ago(10), throttle=5), {}, owner=owner)
    assert job.status == JobStatus.PREP and job.owner == owner
    run_all()
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    actions = list(job.actions.order_by("number"))
    assert [a.number for a in actions] == [1, 2, 3, 4, 5]
    assert all(a.status == ActionStatus.WAITING for a in actions)
    assert actions[0].id == f"{job.id}@1"
    assert actions[0].run_conf["input"] == actions[0].data_in["in"][0]
    # Materializing again changes nothing while throttle is full.
    enqueue(CoordMaterializeXCommand(job_id=job.id))
    run_all()
    assert job.actions.count() == 5
    # Freeing the throttle lets the next chunk come, continuing the numbers.
    CoordinatorAction.objects.filter(job=job).update(status=ActionStatus.READY)
    enqueue(CoordMaterializeXCommand(job_id=job.id))
    run_all()
    assert [a.number for a in job.actions.order_by("number")] == list(range(1, 11))


def test_end_is_exclusive_and_materialization_finishes() -> None:
    """Start to end (exclusive) with a large throttle: exactly end-start actions, then done."""
    owner = User.objects.create_user("bob")
    job = submit_coordinator(xml(minutes_ago(20), minutes_ago(5), throttle=100), {}, owner=owner)
    run_all()
    job.refresh_from_db()
    assert job.actions.count() == 15
    assert job.done_materializing is True and job.next_materialize_at is None
    assert job.pending is False


def test_suspended_jobs_create_nothing() -> None:
    """Nothing is materialized unless the job is RUNNING (or RUNNINGWITHERROR)."""
    owner = User.objects.create_user("cy")
    job = submit_coordinator(xml(minutes_ago(20), minutes_ago(5)), {}, owner=owner)
    run_all()
    CoordinatorJob.objects.filter(pk=job.pk).update(status=JobStatus.SUSPENDED, last_action_number=0)
    CoordinatorAction.objects.filter(job=job).delete()
    skipped = enqueue(CoordMaterializeXCommand(job_id=job.id))
    run_all()
    skipped.refresh_from_db()
    assert skipped.status == CommandStatus.SKIPPED
    assert job.actions.count() == 0


@pytest.mark.parametrize(
    ("app_path", "message"),
    [("hdfs://bar:8020/usr/joe/wf", "hdfs:// storage is not available"), ("task:", "names no <celery task name>"), ("${nope}", "unresolved variable")],
)
def test_unsupported_or_unresolved_submissions_store_nothing(app_path: str, message: str) -> None:
    """A refused submission raises DefinitionError and writes no job and no command."""
    owner = User.objects.create_user("dee")
    with pytest.raises(DefinitionError, match=message):
        submit_coordinator(xml(minutes_ago(20), minutes_ago(5), app_path=app_path), {}, owner=owner)
    assert CoordinatorJob.objects.count() == 0
    assert Command.objects.count() == 0


def test_suspend_holds_materialization_and_resume_catches_up() -> None:
    """Suspended: no new actions; resumed: the missed ones are created (spec 6.1.2)."""
    owner = User.objects.create_user("eve")
    job = submit_coordinator(xml(minutes_ago(10), minutes_ago(-60), throttle=100), {}, owner=owner)
    run_all()
    created_before = job.actions.count()
    assert created_before >= 10
    control(job.id, "suspend", actor=owner)
    run_all()
    job.refresh_from_db()
    assert job.status == JobStatus.SUSPENDED
    # Time passes while suspended: pretend a further batch is due, materialization is refused.
    CoordinatorJob.objects.filter(pk=job.pk).update(last_action_number=created_before - 3)
    CoordinatorAction.objects.filter(job=job, number__gt=created_before - 3).delete()
    enqueue(CoordMaterializeXCommand(job_id=job.id))
    run_all()
    assert job.actions.count() == created_before - 3
    control(job.id, "resume", actor=owner)
    run_all()
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    assert job.actions.count() >= created_before  # the missed ones are back


def test_kill_kills_live_actions_and_refuses_twice() -> None:
    """Kill moves the job and every unfinished action to KILLED; a second kill is refused at once."""
    owner = User.objects.create_user("fay")
    job = submit_coordinator(xml(minutes_ago(5), minutes_ago(-60)), {}, owner=owner)
    run_all()
    first = job.actions.get(number=1)
    first.status = ActionStatus.SUCCEEDED
    first.save()
    control(job.id, "kill", actor=owner)
    run_all()
    job.refresh_from_db()
    assert job.status == JobStatus.KILLED
    statuses = set(job.actions.exclude(number=1).values_list("status", flat=True))
    assert statuses == {ActionStatus.KILLED}
    assert job.actions.get(number=1).status == ActionStatus.SUCCEEDED  # finished work is kept
    with pytest.raises(IllegalTransition, match="it is KILLED"):
        control(job.id, "kill", actor=owner)
    with pytest.raises(IllegalTransition, match="cannot resume"):
        control(job.id, "resume", actor=owner)


@pytest.mark.parametrize(
    ("execution", "expected_started", "expected_skipped"),
    [
        pytest.param("FIFO", [1], [], id="fifo-oldest-first"),
        pytest.param("LIFO", [4], [], id="lifo-newest-first"),
        pytest.param("LAST_ONLY", [4], [1, 2, 3], id="last-only-skips-older"),
    ],
)
def test_execution_order_on_a_backlog(execution: str, expected_started: list[int], expected_skipped: list[int]) -> None:
    """Concurrency 1 on four READY actions: FIFO starts the oldest, LIFO the newest, LAST_ONLY skips the rest."""
    owner = User.objects.create_user(f"u-{execution.lower()}")
    text = xml(minutes_ago(4), minutes_ago(0), throttle=100).replace(
        "<controls>", f"<controls><concurrency>1</concurrency><execution>{execution}</execution>"
    )
    job = submit_coordinator(text, {}, owner=owner)
    run_all()
    assert job.actions.count() == 4
    CoordinatorAction.objects.filter(job=job).update(status=ActionStatus.READY)
    with mock.patch("workflows.launch.dispatch") as launched:
        enqueue(CoordActionReadyXCommand(job_id=job.id))
        run_all()
    started = sorted(job.actions.filter(status=ActionStatus.SUBMITTED).values_list("number", flat=True))
    skipped = sorted(job.actions.filter(status=ActionStatus.SKIPPED).values_list("number", flat=True))
    assert (started, skipped) == (expected_started, expected_skipped)
    assert launched.call_count == 1


def test_includes_over_disallowed_protocols_are_refused() -> None:
    """A submitted <include> over http is refused (COORD_INCLUDE_PROTOCOLS), and nothing is stored."""
    owner = User.objects.create_user("gus")
    text = xml(minutes_ago(20), minutes_ago(5)).replace(
        "<datasets>", "<datasets><include>http://127.0.0.1:9/datasets.xml</include>"
    )
    with pytest.raises(DefinitionError, match="protocol 'http' is not allowed"):
        submit_coordinator(text, {}, owner=owner)
    assert CoordinatorJob.objects.count() == 0
