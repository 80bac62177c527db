"""Due start (ADR 0026): the due actions of many jobs checked and started in one transaction, as their commands would."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from coordinators.choices import ActionStatus
from coordinators.commands.actions import CoordJobStatusXCommand
from coordinators.due_start import ACTOR, DUE_START_TASK, fan_out, look_ahead, precheck, start_due
from coordinators.models import CoordinatorJob, StatusChange
from coordinators.services import submit_coordinator
from datasets.models import AvailableInstance
from datasets.timeline import format_datetime
from statusservice import coordinators as coordinator_services
from statusservice import coordinators as services
from statusservice import tick as clock
from tests.support.engine import run_pending_commands
from tests.support.locks import row_locked
from workflows.models import WorkflowJob, WorkflowNode
from xcommands.models import Command
from xcommands.queue import enqueue

pytestmark = pytest.mark.django_db(transaction=True)

INPUT_CHECK = "coordinators.CoordActionInputCheckXCommand"


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Commands run in process; doorbells and run messages go to the private Redis."""


@pytest.fixture(autouse=True)
def _whole_minute_ahead() -> None:
    """Start well inside a minute: the tests write the inputs of the last minutes, then make jobs of the last
    minutes, and a minute turning between the two shifts the jobs' actions past the inputs (seen under load)."""
    now = timezone.now()
    second = now.second + now.microsecond / 1e6
    if second >= 50:
        time.sleep(60.5 - second)


def minute(offset: int) -> Any:
    return (timezone.now() + timedelta(minutes=offset)).replace(second=0, microsecond=0)


def job(name: str, data: Path, *, actions: int = 3, concurrency: int = 1, execution: str = "FIFO",
        timeout: int = -1, extra: str = "") -> CoordinatorJob:
    """A minute job whose `actions` nominal times have all come, reading its minute's directory under data."""
    xml = f"""<coordinator-app name="{name}" frequency="${{coord:minutes(1)}}" start="{format_datetime(minute(-actions))}"
        end="{format_datetime(minute(0))}" timezone="UTC" xmlns="uri:oozie:coordinator:0.5">
      <controls><timeout>{timeout}</timeout><concurrency>{concurrency}</concurrency><execution>{execution}</execution></controls>
      <datasets><dataset name="in" frequency="${{coord:minutes(1)}}" initial-instance="2020-01-01T00:00Z" timezone="UTC">
        <uri-template>file://{data}/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}${{MINUTE}}</uri-template></dataset></datasets>
      <input-events><data-in name="in" dataset="in"><instance>${{coord:current(0)}}</instance></data-in></input-events>
      {extra}
      <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
    </coordinator-app>"""
    return submit_coordinator(xml, {}, owner=User.objects.get_or_create(username="due")[0])


def write_inputs(data: Path, minutes: int) -> None:
    """The done-flags of the last `minutes` minutes."""
    for offset in range(-minutes, 0):
        folder = data / minute(offset).strftime("%Y%m%d%H%M")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "_SUCCESS").write_text("")


def materialized(*jobs: CoordinatorJob) -> None:
    """Run the materialize commands; the actions wait with their check due."""
    run_pending_commands()
    for one in jobs:
        assert one.actions.filter(status=ActionStatus.WAITING).count() == one.actions.count() > 0


def statuses(one: CoordinatorJob) -> list[str]:
    return list(one.actions.order_by("number").values_list("status", flat=True))


def queued_checks() -> int:
    return Command.objects.filter(name=INPUT_CHECK).count()


def test_many_jobs_start_in_one_pass_without_a_command_each(tmp_path: Path) -> None:
    """Every job's oldest action is SUBMITTED with a run sent; no input-check command was queued."""
    write_inputs(tmp_path, 3)
    jobs = [job(f"due-{n}", tmp_path) for n in range(12)]
    materialized(*jobs)
    report = start_due(timezone.now())
    assert report.checked == 36 and report.submitted == 12 and report.ready == 24 and report.jobs == 12
    assert queued_checks() == 0
    for one in jobs:
        assert statuses(one) == [ActionStatus.SUBMITTED, ActionStatus.READY, ActionStatus.READY]
        first = one.actions.get(number=1)
        run = WorkflowJob.objects.get(pk=first.external_id)
        assert run.coord_action_id == first.id and run.nominal_time == first.nominal_time
        assert WorkflowNode.objects.filter(workflow=run, task_name="examples.noop").count() == 1
        assert first.missing_dependencies == [] and first.check_count == 1
        assert first.ready_at is not None and first.submitted_at is not None and not first.pending
        history = list(StatusChange.objects.filter(object_id=first.id).order_by("id").values_list("from_status", "to_status", "by"))
        assert history[-2:] == [(ActionStatus.WAITING, ActionStatus.READY, ACTOR), (ActionStatus.READY, ActionStatus.SUBMITTED, ACTOR)]


def test_each_chunk_reads_the_jobs_after_the_last_one_taken(tmp_path: Path) -> None:
    """Chunks of 2 over 5 jobs: each reads from the id after the previous chunk's last, never the done jobs again."""
    write_inputs(tmp_path, 1)
    jobs = sorted((job(f"keyset-{n}", tmp_path, actions=1) for n in range(5)), key=lambda one: one.pk)
    materialized(*jobs)
    with override_settings(COORD_DUE_START_CHUNK=2), CaptureQueriesContext(connection) as queries:
        report = start_due(timezone.now())
    assert report.submitted == 5 and report.jobs == 5 and report.after == jobs[-1].pk
    reads = [q["sql"] for q in queries.captured_queries
             if q["sql"].startswith('SELECT') and 'FROM "coordinators_coordinatorjob"' in q["sql"] and "LIMIT 2" in q["sql"]]
    assert len(reads) == 4, reads  # three chunks of 2, 2 and 1 jobs, then one that finds none
    for read, after in zip(reads, ["", jobs[1].pk, jobs[3].pk, jobs[4].pk], strict=True):
        assert f'"coordinators_coordinatorjob"."id" > \'{after}\'' in read, read


@pytest.mark.parametrize(("execution", "first"), [("FIFO", 1), ("LIFO", 3)])
def test_the_execution_order_and_concurrency_hold(tmp_path: Path, execution: str, first: int) -> None:
    """FIFO starts the oldest, LIFO the newest, up to concurrency; the others stay READY."""
    write_inputs(tmp_path, 3)
    one = job("order", tmp_path, execution=execution)
    materialized(one)
    start_due(timezone.now())
    assert list(one.actions.filter(status=ActionStatus.SUBMITTED).values_list("number", flat=True)) == [first]
    assert one.actions.filter(status=ActionStatus.READY).count() == 2


def test_running_actions_count_against_concurrency(tmp_path: Path) -> None:
    """A job whose slot is taken starts nothing: its ready actions wait for the slot."""
    write_inputs(tmp_path, 3)
    one = job("busy-slot", tmp_path)
    materialized(one)
    one.actions.filter(number=1).update(status=ActionStatus.RUNNING, next_check_at=None)
    start_due(timezone.now())
    assert statuses(one) == [ActionStatus.RUNNING, ActionStatus.READY, ActionStatus.READY]


def test_missing_inputs_back_off_and_time_out_as_the_command_does(tmp_path: Path) -> None:
    """Missing: checked again later, the missing list kept; past its timeout: TIMEDOUT and the job's status derived."""
    write_inputs(tmp_path, 1)  # only the newest minute exists
    one = job("missing", tmp_path, concurrency=3)
    materialized(one)
    one.actions.filter(number=1).update(timeout_at=timezone.now() - timedelta(seconds=1))
    before = timezone.now()
    report = start_due(timezone.now())
    assert report.timedout == 1 and report.waiting == 1 and report.submitted == 1
    assert statuses(one) == [ActionStatus.TIMEDOUT, ActionStatus.WAITING, ActionStatus.SUBMITTED]
    waiting = one.actions.get(number=2)
    assert waiting.check_count == 1 and len(waiting.missing_dependencies) == 1 and not waiting.pending
    assert waiting.next_check_at is not None and waiting.next_check_at > before
    timed_out = one.actions.get(number=1)
    assert timed_out.error_message == "timed out waiting for 1 input(s)" and timed_out.ended_at is not None
    assert Command.objects.filter(key=one.id, name="coordinators.CoordJobStatusXCommand").count() == 1
    run_pending_commands()
    one.refresh_from_db()
    assert one.status == "RUNNINGWITHERROR"


def test_a_job_with_a_queued_command_is_left_to_its_commands(tmp_path: Path) -> None:
    """Per-key FIFO: what was queued first runs first, so the job's due actions go through an input-check command."""
    write_inputs(tmp_path, 3)
    queued, free = job("queued", tmp_path), job("free", tmp_path)
    materialized(queued, free)
    enqueue(CoordJobStatusXCommand(job_id=queued.id))
    services.input_checks(timezone.now())
    assert statuses(free)[0] == ActionStatus.SUBMITTED
    assert statuses(queued) == [ActionStatus.WAITING] * 3
    assert queued.actions.filter(pending=True).count() == 3
    assert list(Command.objects.filter(name=INPUT_CHECK).values_list("key", flat=True)) == [queued.id]
    run_pending_commands()
    assert statuses(queued) == [ActionStatus.SUBMITTED, ActionStatus.READY, ActionStatus.READY]
    assert StatusChange.objects.get(object_id=f"{queued.id}@1", to_status=ActionStatus.SUBMITTED).by == INPUT_CHECK


@pytest.mark.parametrize("kind", ["LAST_ONLY", "NONE", "input-logic", "suspended"])
def test_jobs_the_fast_path_does_not_understand_keep_the_command_path(tmp_path: Path, kind: str) -> None:
    """LAST_ONLY and NONE skip by the clock, input logic needs the resolved job, a suspended job checks nothing."""
    write_inputs(tmp_path, 3)
    extra = '<input-logic><data-in dataset="in"/></input-logic>' if kind == "input-logic" else ""
    one = job(kind.lower(), tmp_path, execution=kind if kind in ("LAST_ONLY", "NONE") else "FIFO", extra=extra)
    materialized(one)
    if kind == "suspended":
        CoordinatorJob.objects.filter(pk=one.pk).update(status="SUSPENDED")
    report = start_due(timezone.now())
    assert report.checked == 0
    assert statuses(one) == [ActionStatus.WAITING] * 3


def test_off_by_setting_every_job_goes_through_its_command(tmp_path: Path) -> None:
    """COORD_DUE_START=false: one input-check command per job, as before."""
    write_inputs(tmp_path, 3)
    jobs = [job(f"off-{n}", tmp_path) for n in range(3)]
    materialized(*jobs)
    with override_settings(COORD_DUE_START=False):
        services.input_checks(timezone.now())
    assert queued_checks() == 3
    assert all(statuses(one) == [ActionStatus.WAITING] * 3 for one in jobs)


def test_the_outcome_is_the_command_paths_outcome(tmp_path: Path) -> None:
    """Same jobs, same storage: the fast path and the per-job commands leave the actions in the same states."""
    write_inputs(tmp_path / "a", 2)
    write_inputs(tmp_path / "b", 2)
    outcomes = []
    for fast, data in ((True, tmp_path / "a"), (False, tmp_path / "b")):
        jobs = [job(f"same-{fast}-{n}", data, concurrency=n, execution=("FIFO", "LIFO")[n % 2], actions=4)
                for n in range(1, 4)]
        materialized(*jobs)
        with override_settings(COORD_DUE_START=fast):
            services.input_checks(timezone.now())
            run_pending_commands()
        outcomes.append([
            list(one.actions.order_by("number").values_list("status", "check_count", "missing_dependencies"))
            for one in jobs
        ])
    normalized = [[[(s, c, len(m)) for s, c, m in rows] for rows in outcome] for outcome in outcomes]
    assert normalized[0] == normalized[1]
    assert sum(row[0] == ActionStatus.SUBMITTED for rows in normalized[0] for row in rows) == 1 + 2 + 2


def test_a_job_whose_row_is_locked_is_skipped_not_waited_for(tmp_path: Path) -> None:
    """A command holding the job row (as every job command does): the pass takes the others, the held job gets its command."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL (SQLite has one writer at a time)")
    write_inputs(tmp_path, 3)
    held, free = job("held", tmp_path), job("other", tmp_path)
    materialized(held, free)
    with row_locked(CoordinatorJob.objects.filter(pk=held.pk)):
        services.input_checks(timezone.now())
    assert statuses(free)[0] == ActionStatus.SUBMITTED
    assert statuses(held) == [ActionStatus.WAITING] * 3
    assert list(Command.objects.filter(name=INPUT_CHECK).values_list("key", flat=True)) == [held.id]
    run_pending_commands()
    assert statuses(held)[0] == ActionStatus.SUBMITTED


def test_two_passes_at_once_share_the_jobs_and_start_each_action_once(tmp_path: Path) -> None:
    """COORD_DUE_START_PARALLEL: passes on two connections take disjoint chunks; nothing is started twice or left over."""
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers: PostgreSQL")
    write_inputs(tmp_path, 2)
    jobs = [job(f"par-{n}", tmp_path, actions=2, concurrency=2) for n in range(16)]
    materialized(*jobs)
    reports: list[Any] = []
    errors: list[BaseException] = []
    go = threading.Barrier(2)

    def one_pass() -> None:
        try:
            go.wait(10)
            reports.append(start_due(timezone.now()))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    with override_settings(COORD_DUE_START_CHUNK=2):
        threads = [threading.Thread(target=one_pass) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert not errors
    assert sum(r.submitted for r in reports) == 32 and sum(r.jobs for r in reports) == 16
    assert not any(r.left_to_commands for r in reports)
    assert all(statuses(one) == [ActionStatus.SUBMITTED] * 2 for one in jobs)
    assert WorkflowJob.objects.filter(
        coord_action_id__in=[f"{one.id}@{n}" for one in jobs for n in (1, 2)]).count() == 32
    assert StatusChange.objects.filter(to_status=ActionStatus.SUBMITTED, by=ACTOR).count() == 32


def test_a_crowded_moment_sends_helpers(tmp_path: Path, redis_url: str) -> None:
    """More due jobs than one chunk: up to COORD_DUE_START_PARALLEL - 1 helper messages go to the services queue."""
    write_inputs(tmp_path, 1)
    jobs = [job(f"crowd-{n}", tmp_path, actions=1) for n in range(5)]
    materialized(*jobs)
    client = redis.Redis.from_url(redis_url)
    client.delete("services")
    with override_settings(COORD_DUE_START_CHUNK=2, COORD_DUE_START_PARALLEL=3):
        assert fan_out(timezone.now()) == 2  # 5 jobs, chunks of 2: three chunks, two helpers beside this pass
    with override_settings(COORD_DUE_START_CHUNK=2, COORD_DUE_START_PARALLEL=1):
        assert fan_out(timezone.now()) == 0
    with override_settings(COORD_DUE_START_CHUNK=10, COORD_DUE_START_PARALLEL=3):
        assert fan_out(timezone.now()) == 0  # one chunk holds them all
    messages = [json.loads(raw) for raw in client.lrange("services", 0, -1)]
    assert [m["headers"]["task"] for m in messages] == [DUE_START_TASK] * 2


def test_the_precheck_records_available_inputs_before_any_job_is_locked(tmp_path: Path) -> None:
    """Shared inputs are asked once, up front, in their own transaction: the chunks then insert nothing."""
    write_inputs(tmp_path, 2)  # the last two minutes exist, the third does not
    jobs = [job(f"pre-{n}", tmp_path) for n in range(3)]  # all three read the same three minutes
    materialized(*jobs)
    assert precheck(timezone.now()) == 3  # three distinct inputs for nine due actions
    recorded = set(AvailableInstance.objects.values_list("uri", flat=True))
    assert recorded == {f"file://{tmp_path}/{minute(offset).strftime('%Y%m%d%H%M')}" for offset in (-2, -1)}
    assert all(statuses(one) == [ActionStatus.WAITING] * 3 for one in jobs)  # nothing decided yet


def test_the_tick_records_the_inputs_of_actions_due_before_the_next_tick(tmp_path: Path) -> None:
    """Look-ahead: inputs of actions not yet due are asked about once, recorded if there, nothing decided early."""
    soon = minute(1)  # the next minute: due within the look-ahead window below
    xml = f"""<coordinator-app name="ahead" frequency="${{coord:minutes(1)}}" start="{format_datetime(soon)}"
        end="{format_datetime(soon + timedelta(minutes=2))}" timezone="UTC" xmlns="uri:oozie:coordinator:0.5">
      <datasets><dataset name="in" frequency="${{coord:minutes(1)}}" initial-instance="2020-01-01T00:00Z" timezone="UTC">
        <uri-template>file://{tmp_path}/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}${{MINUTE}}</uri-template></dataset></datasets>
      <input-events><data-in name="in" dataset="in"><instance>${{coord:current(0)}}</instance></data-in></input-events>
      <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
    </coordinator-app>"""
    one = submit_coordinator(xml, {}, owner=User.objects.get_or_create(username="ahead")[0])
    run_pending_commands()
    assert one.actions.count() == 2
    folder = tmp_path / soon.strftime("%Y%m%d%H%M")
    folder.mkdir()
    (folder / "_SUCCESS").write_text("")
    now = timezone.now()
    assert look_ahead(now, now + timedelta(seconds=1)) == 0  # nothing falls due within a second
    assert look_ahead(now, now + timedelta(minutes=3)) == 2  # both minutes
    assert list(AvailableInstance.objects.values_list("uri", flat=True)) == [f"file://{folder}"]
    assert statuses(one) == [ActionStatus.WAITING] * 2
    assert all(a.check_count == 0 and len(a.missing_dependencies) == 1 for a in one.actions.all())
    with override_settings(COORD_DUE_START=False):
        assert look_ahead(now, now + timedelta(minutes=3)) == 0
    # The tick runs it for the next tick's window.
    assert "coordinators.look_ahead" in {service.name for service in clock.SERVICES}
    assert coordinator_services.look_ahead(timezone.now()) >= 0
