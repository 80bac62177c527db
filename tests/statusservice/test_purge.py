"""Purge (statusservice.purge, ADR 0035): ended jobs past their ages go with everything theirs; nothing a running job needs.

The histories are bulk-inserted (tooling.benchmarks.purge.store_history): ended coordinators with
actions, a workflow run of two nodes each, node and command tries, status changes, SLA records.
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection, connections, transaction
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from bundles.models import BundleAction, BundleJob
from coordinators.choices import ActionStatus, JobStatus, job_status_from_actions
from coordinators.commands import CoordRerunXCommand
from coordinators.models import (
    CoordinatorAction,
    CoordinatorJob,
    SLAEvent,
    SLARegistration,
    StatusChange,
)
from coordinators.services import rerun_job
from kernel.history import record_status
from kernel.models import StatusRecord, TaskTry
from statusservice import purge as purging
from statusservice import tick as clock
from statusservice.coordinators import job_statuses
from tests.statusservice.test_coordinator_services import job_with
from tests.support.engine import run_pending_commands
from tooling.benchmarks.purge import History, left_of, run_purge_bench, store_history
from workflows.models import NODE_KIND, WORKFLOW_KIND, WorkflowJob, WorkflowNode
from xcommands.queue import enqueue

NOW = timezone.now()
OLD = NOW - timedelta(days=40)  # past every default age
RECENT = NOW - timedelta(days=3)  # younger than the coordinators' 7 days
#: Row locks are PostgreSQL's; SQLite serialises writers instead (CI runs these on PostgreSQL).
ROW_LOCKS = pytest.mark.skipif(not connection.features.has_select_for_update_skip_locked,
                               reason="row locks: SQLite serialises writers instead")
MODELS = (BundleJob, BundleAction, CoordinatorJob, CoordinatorAction, WorkflowJob, WorkflowNode, SLARegistration, SLAEvent,
          StatusChange, TaskTry)


@pytest.fixture
def owner(db: None) -> User:
    return User.objects.create_user("purger")


def rows() -> dict[str, int]:
    """Every table a purge touches, counted."""
    return {model.__name__: model.objects.count() for model in MODELS}


def stored(history: History) -> int:
    """Rows of the history still there, tries and history included."""
    return left_of(history) + TaskTry.objects.filter(root_id__in=history.jobs).count() + StatusChange.objects.filter(
        job_id__in=history.jobs).count() + SLARegistration.objects.filter(job_id__in=history.jobs).count()


def standalone(pk: str, status: str, ended: datetime | None, *, parent: str | None = None) -> WorkflowJob:
    """A workflow of no coordinator (a sub-workflow when it has a parent) with one node and its try."""
    workflow = WorkflowJob.objects.create(id=pk, app_name="wf", app_path="file:///wf", status=status, created_at=OLD,
                                          ended_at=ended, parent_workflow_id=parent)
    WorkflowNode.objects.create(id=f"{pk}@a", workflow=workflow, name="a", task_name="examples.noop", queue="actions",
                                status="OK" if ended else "RUNNING", task_id="t")
    TaskTry.objects.create(kind="node", object_id=f"{pk}@a", job_id=pk, root_id=pk, status="OK", ended_at=ended or NOW)
    return workflow


def bundle(owner: User, pk: str, status: str, modified: datetime) -> BundleJob:
    made = BundleJob.objects.create(id=pk, app_name="b", definition="<bundle-app/>", owner=owner, status=status)
    BundleJob.objects.filter(pk=pk).update(last_modified=modified)
    return made


def attach(bundle_job: BundleJob, history: History) -> None:
    for job_id in history.jobs:
        BundleAction.objects.create(id=f"{bundle_job.pk}_{job_id}", bundle=bundle_job, coord_name=job_id,
                                    coord_job_id=job_id, status=CoordinatorJob.objects.get(pk=job_id).status)


def run(**kwargs: Any) -> purging.Report:
    return purging.purge(timezone.now(), **kwargs)


# --- whole jobs ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_ended_coordinator_goes_with_everything_of_its_own(owner: User) -> None:
    """Ended 40 days ago: the job, actions, runs, nodes, tries, history and SLA rows go; one ended 3 days ago stays whole."""
    old = store_history(owner, prefix="old", jobs=2, actions=5, ended=OLD)
    young = store_history(owner, prefix="young", jobs=1, actions=5, ended=RECENT)
    before = stored(young)
    report = run()
    assert stored(old) == 0
    assert stored(young) == before
    assert report.counts["coordinators"] == 2 and report.counts["coordinator_actions"] == 10
    assert report.counts["workflows"] == 10 and report.counts["workflow_nodes"] == 20
    assert report.counts["tries"] == 2 + 20  # each job's command try, each node's try
    assert report.counts["status_changes"] == 2 + 10 and report.counts["sla_registrations"] == 0


@pytest.mark.django_db
@pytest.mark.parametrize("status", ["SUSPENDED", "RUNNING", "PAUSED", "PREP"], ids=str.lower)
def test_a_job_that_has_not_ended_stays_however_old(owner: User, status: str) -> None:
    """A suspended (or running, paused, waiting to start) job untouched for 40 days is not an ended job: it stays whole."""
    history = store_history(owner, prefix=status, jobs=1, actions=3, ended=OLD, job_status=status)
    before = stored(history)
    run()
    assert stored(history) == before


@pytest.mark.django_db
def test_an_ended_job_with_a_live_action_or_run_stays(owner: User) -> None:
    """An ended job whose action is still pending, or whose run is still running, keeps everything."""
    pending = store_history(owner, prefix="pend", jobs=1, actions=3, ended=OLD)
    CoordinatorAction.objects.filter(pk=pending.actions[0]).update(pending=True)
    running = store_history(owner, prefix="run", jobs=1, actions=3, ended=OLD)
    WorkflowJob.objects.filter(pk=running.workflows[1]).update(status="RUNNING")
    sub = store_history(owner, prefix="sub", jobs=1, actions=1, ended=OLD)
    standalone("0000001-sub-W", "RUNNING", None, parent=sub.workflows[0])  # a run's sub-workflow still running
    kept = stored(pending) + stored(running) + stored(sub)
    run()
    assert stored(pending) + stored(running) + stored(sub) == kept


@pytest.mark.django_db
def test_a_bundle_goes_with_its_coordinators_only_once_all_ended(owner: User) -> None:
    """A bundle with one running coordinator keeps everything (its ended one is not taken alone); once it ended, all go."""
    done = store_history(owner, prefix="done", jobs=1, actions=2, ended=OLD, bundle_id="0000001-bun-B")
    live = store_history(owner, prefix="live", jobs=1, actions=2, ended=OLD, bundle_id="0000001-bun-B",
                         job_status="RUNNING")
    made = bundle(owner, "0000001-bun-B", "KILLED", OLD)
    attach(made, done)
    attach(made, live)
    kept = stored(done) + stored(live)
    report = run()
    assert report.counts["bundles"] == report.counts["coordinators"] == 0
    assert stored(done) + stored(live) == kept and BundleJob.objects.filter(pk=made.pk).exists()

    CoordinatorJob.objects.filter(pk__in=live.jobs).update(status=JobStatus.KILLED, last_modified=OLD)
    report = run()
    assert stored(done) + stored(live) == 0
    assert not BundleJob.objects.filter(pk=made.pk).exists() and not BundleAction.objects.exists()
    assert report.counts["bundles"] == 1 and report.counts["bundle_actions"] == 2 and report.counts["coordinators"] == 2


@pytest.mark.django_db
def test_a_bundle_younger_than_its_age_keeps_its_ended_coordinators(owner: User) -> None:
    """A coordinator of a bundle is purged with its bundle, never alone: a recent bundle keeps its 40-day-old coordinator."""
    history = store_history(owner, prefix="inb", jobs=1, actions=2, ended=OLD, bundle_id="0000002-bun-B")
    attach(bundle(owner, "0000002-bun-B", "SUCCEEDED", RECENT), history)
    before = stored(history)
    run()
    assert stored(history) == before


@pytest.mark.django_db
def test_standalone_workflows_go_with_their_sub_workflows_after_their_age() -> None:
    """Ended 40 days ago: the workflow, its sub-workflow, nodes and tries go; one ended 10 days ago or running stays."""
    standalone("0000001-old-W", "SUCCEEDED", OLD)
    standalone("0000002-old-W", "SUCCEEDED", OLD, parent="0000001-old-W")
    standalone("0000003-ten-W", "FAILED", NOW - timedelta(days=10))
    standalone("0000004-run-W", "RUNNING", None)
    standalone("0000005-old-W", "KILLED", OLD)
    standalone("0000006-old-W", "RUNNING", None, parent="0000005-old-W")  # its sub-workflow still runs
    for pk in ("0000001-old-W", "0000003-ten-W"):  # their status history (kernel.StatusRecord) goes with them
        record_status(WORKFLOW_KIND, pk, "RUNNING", "SUCCEEDED")
        record_status(NODE_KIND, f"{pk}@a", "RUNNING", "OK", parent=pk)
    report = run()
    assert sorted(WorkflowJob.objects.values_list("pk", flat=True)) == [
        "0000003-ten-W", "0000004-run-W", "0000005-old-W", "0000006-old-W"]
    assert sorted(StatusRecord.objects.values_list("object_id", flat=True)) == ["0000003-ten-W", "0000003-ten-W@a"]
    assert report.counts["status_records"] == 2
    assert report.counts["workflows"] == 2 and report.counts["workflow_nodes"] == 2 and report.counts["tries"] == 2
    assert not TaskTry.objects.filter(job_id__in=["0000001-old-W", "0000002-old-W"]).exists()


@pytest.mark.django_db
def test_an_age_of_zero_turns_its_kind_off(owner: User) -> None:
    """PURGE_COORDINATOR_DAYS=0 keeps every coordinator (and its old actions); PURGE_WORKFLOW_DAYS=0 every workflow."""
    history = store_history(owner, prefix="off", jobs=1, actions=3, ended=OLD)
    standalone("0000001-off-W", "SUCCEEDED", OLD)
    before = rows()
    with override_settings(PURGE_COORDINATOR_DAYS=0, PURGE_WORKFLOW_DAYS=0):
        report = run()
    assert rows() == before and sum(report.counts.values()) == 0
    assert stored(history)


# --- a long-running coordinator's old actions ------------------------------------------------------


def long_running(owner: User, *, actions: int, prefix: str = "long") -> History:
    history = store_history(owner, prefix=prefix, jobs=1, actions=actions, ended=OLD, job_status="RUNNING")
    return history


@pytest.mark.django_db
@override_settings(PURGE_KEEP_LAST_ACTIONS=5)
def test_a_running_coordinator_loses_its_old_ended_actions_but_keeps_its_last_n_and_recent_ones(owner: User) -> None:
    """Of 20 actions ended 40 days ago, the last 5 stay; so do recent, live and pending ones, and the job untouched."""
    history = long_running(owner, actions=20)
    job_id = history.jobs[0]
    CoordinatorAction.objects.filter(job_id=job_id, number=3).update(ended_at=RECENT)
    CoordinatorAction.objects.filter(job_id=job_id, number=4).update(status=ActionStatus.RUNNING, ended_at=None)
    CoordinatorAction.objects.filter(job_id=job_id, number=6).update(pending=True)
    modified = CoordinatorJob.objects.get(pk=job_id).last_modified
    report = run()
    left = sorted(CoordinatorAction.objects.filter(job_id=job_id).values_list("number", flat=True))
    assert left == [3, 4, 6, 16, 17, 18, 19, 20]
    assert report.counts["coordinator_actions"] == 12 and report.counts["workflows"] == 12
    assert CoordinatorJob.objects.get(pk=job_id).last_modified == modified  # the job's row was not written
    gone = [f"{job_id}@{n}" for n in (1, 2, 5, 7)]
    assert not StatusChange.objects.filter(object_id__in=gone).exists()
    assert not WorkflowJob.objects.filter(coord_action_id__in=gone).exists()
    assert not TaskTry.objects.filter(action_id__in=gone).exists()
    assert not SLARegistration.objects.filter(action_id__in=[f"{job_id}@10"]).exists()
    assert TaskTry.objects.filter(job_id=job_id, kind="command").exists()  # the job's own history stays


@pytest.mark.django_db
@override_settings(PURGE_KEEP_LAST_ACTIONS=2)
def test_old_actions_never_change_the_status_the_job_derives(owner: User) -> None:
    """The newest action of each status stays: a lone old FAILED action keeps the job's RUNNINGWITHERROR / DONEWITHERROR."""
    history = long_running(owner, actions=12)
    job_id = history.jobs[0]
    CoordinatorAction.objects.filter(job_id=job_id, number__in=[2, 3]).update(status=ActionStatus.FAILED)
    CoordinatorAction.objects.filter(job_id=job_id, number=5).update(status=ActionStatus.KILLED)

    def derived() -> tuple[str, str]:
        statuses = list(CoordinatorAction.objects.filter(job_id=job_id).values_list("status", flat=True))
        return (job_status_from_actions(statuses, materialization_done=False, current=JobStatus.RUNNING),
                job_status_from_actions(statuses, materialization_done=True, current=JobStatus.RUNNING))

    before = derived()
    run()
    assert derived() == before == (JobStatus.RUNNINGWITHERROR, JobStatus.DONEWITHERROR)
    assert sorted(CoordinatorAction.objects.filter(job_id=job_id).values_list("number", flat=True)) == [3, 5, 11, 12]


@pytest.mark.django_db
@override_settings(PURGE_KEEP_LAST_ACTIONS=1)
def test_a_queued_rerun_keeps_the_jobs_old_actions(owner: User) -> None:
    """While a rerun (or ignore) command is queued on the job, none of its old actions goes: it may name them."""
    history = long_running(owner, actions=6)
    job_id = history.jobs[0]
    command = enqueue(CoordRerunXCommand(job_id=job_id, rerun_type="action", scope="1-2"))
    assert run().counts["coordinator_actions"] == 0
    command.status = "SUCCEEDED"
    command.save(update_fields=["status"])
    assert run().counts["coordinator_actions"] == 5  # all but the last


# --- never a running job -------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_rerun_queued_between_selection_and_recheck_keeps_the_job(owner: User, monkeypatch: pytest.MonkeyPatch) -> None:
    """The candidates are looked at again once locked: a rerun whose command arrived meanwhile keeps its ended job whole."""
    history = store_history(owner, prefix="race", jobs=1, actions=3, ended=OLD)
    original = purging._Pass.coordinators_ended

    def rerun_arrives(self: purging._Pass, job_ids: list[str], cutoff: datetime) -> Any:
        enqueue(CoordRerunXCommand(job_id=history.jobs[0], rerun_type="action", scope="1"))
        return original(self, job_ids, cutoff)

    monkeypatch.setattr(purging._Pass, "coordinators_ended", rerun_arrives)
    before = stored(history)
    assert run().counts["coordinators"] == 0
    assert stored(history) == before


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_engine")
def test_a_rerun_of_an_ended_coordinator_in_flight_loses_nothing() -> None:
    """A real job ended long ago: its rerun queued, then running, then its actions waiting: no pass takes any of it."""
    owner = User.objects.create_user("rerunner")
    job = job_with(owner, -3, -1)
    job.actions.update(status=ActionStatus.SUCCEEDED, ended_at=OLD)
    WorkflowJob.objects.filter(coord_action__job=job).update(status="SUCCEEDED", ended_at=OLD)
    WorkflowNode.objects.filter(workflow__coord_action__job=job).update(status="OK", ended_at=OLD)
    job_statuses(timezone.now())
    run_pending_commands()
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    CoordinatorJob.objects.filter(pk=job.pk).update(last_modified=OLD)
    actions = set(job.actions.values_list("pk", flat=True))
    assert run(dry_run=True).counts["coordinators"] == 1  # ended long ago: a pass now would take it

    rerun_job(job.pk, actor=owner, rerun_type="action", scope="1")
    assert run().counts["coordinators"] == 0  # the rerun's command is queued on the job's key
    run_pending_commands()
    CoordinatorJob.objects.filter(pk=job.pk).update(last_modified=OLD)  # even when the clock says old
    assert run().counts["coordinators"] == 0  # the job runs again: not ended
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    assert set(job.actions.values_list("pk", flat=True)) == actions


@pytest.mark.django_db(transaction=True)
@ROW_LOCKS
def test_a_job_whose_row_a_command_holds_is_skipped_not_waited_for() -> None:
    """An ended job whose row another transaction locks is skipped at once (skip_locked) and taken by the next pass."""
    owner = User.objects.create_user("locker")
    history = store_history(owner, prefix="lock", jobs=2, actions=2, ended=OLD)
    locked, released = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                CoordinatorJob.objects.select_for_update().get(pk=history.jobs[0])
                locked.set()
                released.wait(30)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(10)
        report = run()
        assert report.counts["coordinators"] == 1
        assert CoordinatorJob.objects.filter(pk=history.jobs[0]).exists()
    finally:
        released.set()
        holder.join(30)
    assert run().counts["coordinators"] == 1
    assert stored(history) == 0


# --- dry run, batches, bulk ------------------------------------------------------------------------


def mixed(owner: User) -> None:
    """Some of everything: ended and live coordinators, a bundle, workflows, a long-running job's old actions."""
    store_history(owner, prefix="m1", jobs=3, actions=4, ended=OLD)
    store_history(owner, prefix="m2", jobs=1, actions=4, ended=RECENT)
    attach(bundle(owner, "0000009-mix-B", "SUCCEEDED", OLD),
           store_history(owner, prefix="m3", jobs=2, actions=3, ended=OLD, bundle_id="0000009-mix-B"))
    long_running(owner, actions=12, prefix="m4")
    standalone("0000001-mix-W", "SUCCEEDED", OLD)
    standalone("0000002-mix-W", "SUCCEEDED", OLD, parent="0000001-mix-W")
    standalone("0000003-mix-W", "RUNNING", None)


@pytest.mark.django_db
@override_settings(PURGE_KEEP_LAST_ACTIONS=3, PURGE_BATCH=2)
def test_a_dry_run_changes_nothing_and_counts_what_a_real_run_deletes(owner: User) -> None:
    """`purge --dry-run` leaves every table as it was; its counts per kind are exactly what the real pass then deletes."""
    mixed(owner)
    before = rows()
    dry = run(dry_run=True)
    assert rows() == before
    real = run()
    assert dry.counts == real.counts
    after = rows()
    deleted = {name: before[name] - after[name] for name in before}
    assert deleted == {
        "BundleJob": real.counts["bundles"], "BundleAction": real.counts["bundle_actions"],
        "CoordinatorJob": real.counts["coordinators"], "CoordinatorAction": real.counts["coordinator_actions"],
        "WorkflowJob": real.counts["workflows"], "WorkflowNode": real.counts["workflow_nodes"],
        "SLARegistration": real.counts["sla_registrations"], "SLAEvent": real.counts["sla_events"],
        "StatusChange": real.counts["status_changes"], "TaskTry": real.counts["tries"],
    }
    assert real.counts["bundles"] == 1 and real.counts["coordinators"] == 5 and real.counts["coordinator_actions"] > 18
    assert real.batches > 4  # two jobs per transaction
    assert run(dry_run=True).counts == dict.fromkeys(purging.KINDS, 0)  # nothing left to take


@pytest.mark.django_db
def test_deletes_are_bulk_statements_not_one_per_row(owner: User) -> None:
    """Ten times the actions per job costs the same number of statements: children go by id chunks, none one by one."""

    def statements(actions: int, prefix: str) -> int:
        store_history(owner, prefix=prefix, jobs=3, actions=actions, ended=OLD)
        with CaptureQueriesContext(connection) as queries:
            assert run().counts["coordinator_actions"] == 3 * actions
        return len(queries)

    assert statements(4, "few") == statements(40, "many")


@pytest.mark.django_db
def test_a_pass_out_of_time_stops_between_batches(owner: User) -> None:
    """A pass whose deadline has passed starts no batch and says it stopped early (the next pass takes the rest)."""
    history = store_history(owner, prefix="late", jobs=2, actions=2, ended=OLD)
    policy = purging.Policy.from_settings(timezone.now(), budget_seconds=1e-9)
    report = purging.purge(timezone.now(), policy=policy)
    assert report.stopped_early and stored(history)


# --- the service and the command -----------------------------------------------------------------


@pytest.mark.django_db
def test_the_purge_is_an_hourly_service_of_the_tick(owner: User) -> None:
    """`jobs.purge` runs hourly in the tick and returns the counts per kind."""
    service = next(s for s in clock.SERVICES if s.name == "jobs.purge")
    assert service.period() == 3600
    store_history(owner, prefix="tick", jobs=1, actions=2, ended=OLD)
    result = service.run(timezone.now())
    assert result["coordinators"] == 1 and result["coordinator_actions"] == 2


@pytest.fixture
def out() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    yield io.StringIO(), io.StringIO()


@pytest.mark.django_db
def test_the_command_says_per_kind_what_would_go_and_then_deletes_it(owner: User, out: tuple[io.StringIO, io.StringIO]) -> None:
    """`manage.py purge --dry-run` prints a line per kind and changes nothing; `purge --json` deletes the same."""
    mixed(owner)
    before = rows()
    stdout, stderr = out
    call_command("purge", "--dry-run", stdout=stdout, stderr=stderr)
    assert rows() == before
    lines = {line.rsplit(None, 4)[0].strip(): int(line.split()[-4]) for line in stdout.getvalue().splitlines()}
    assert set(lines) == {kind.replace("_", " ") for kind in purging.KINDS}
    assert "would be deleted" in stdout.getvalue()
    real = io.StringIO()
    call_command("purge", "--json", stdout=real, stderr=stderr)
    figures = json.loads(real.getvalue())
    assert figures["dry_run"] is False
    assert {kind.replace("_", " "): figures[kind] for kind in purging.KINDS} == lines
    assert lines["coordinators"] == 5  # three standalone ones ended long ago, and the bundle's two


@pytest.mark.django_db
@pytest.mark.parametrize("args", [["--batch", "0"], ["--workflow-days", "-1"], ["--keep-last-actions", "-3"]],
                         ids=["batch-0", "negative-days", "negative-keep"])
def test_the_command_refuses_bad_values_and_changes_nothing(owner: User, args: list[str]) -> None:
    """A batch under 1 or a negative age is a clear error, and nothing is deleted."""
    store_history(owner, prefix="bad", jobs=1, actions=1, ended=OLD)
    before = rows()
    with pytest.raises(CommandError, match="must be"):
        call_command("purge", *args, stdout=io.StringIO(), stderr=io.StringIO())
    assert rows() == before


@pytest.mark.django_db
def test_the_commands_ages_override_the_settings_for_one_pass(owner: User) -> None:
    """`--coordinator-days 2` takes a coordinator ended 3 days ago; `--coordinator-days 0` none."""
    history = store_history(owner, prefix="days", jobs=1, actions=1, ended=RECENT)
    call_command("purge", "--coordinator-days", "0", stdout=io.StringIO(), stderr=io.StringIO())
    assert stored(history)
    call_command("purge", "--coordinator-days", "2", stdout=io.StringIO(), stderr=io.StringIO())
    assert stored(history) == 0


@pytest.mark.django_db
def test_the_benchmark_counts_and_deletes_the_same_rows() -> None:
    """`bench purge` stores ended coordinators with their history, and its dry run and pass agree on every row."""
    lines: list[str] = []
    figures = run_purge_bench(3, 4, lines.append)
    assert figures["deleted_coordinators"] == 3 and figures["deleted_coordinator_actions"] == 12
    assert figures["deleted_workflow_nodes"] == 24 and figures["rows_deleted"] == sum(
        figures[f"deleted_{kind}"] for kind in purging.KINDS)
    assert lines and lines[0].startswith("storing 3 ended coordinators")


@pytest.mark.django_db
@override_settings(PURGE_BATCH=1)
def test_the_command_reports_progress_batch_by_batch(owner: User, monkeypatch: pytest.MonkeyPatch) -> None:
    """A long run says on stderr, as it goes, which phase and batch it is at and what went so far."""
    monkeypatch.setattr("statusservice.management.commands.purge.PROGRESS_SECONDS", 0)
    store_history(owner, prefix="prog", jobs=3, actions=1, ended=OLD)
    stderr = io.StringIO()
    call_command("purge", stdout=io.StringIO(), stderr=stderr)
    lines = stderr.getvalue().splitlines()
    assert lines[:3] == [f"coordinators: batch {n}; gone: {n} coordinators, {n} coordinator actions, {n} workflows, "
                         f"{2 * n} workflow nodes, {2 * n} status changes, {3 * n} tries" for n in (1, 2, 3)]


@pytest.mark.django_db(transaction=True)
@ROW_LOCKS
@override_settings(PURGE_KEEP_LAST_ACTIONS=2)
def test_a_pass_never_holds_the_row_of_a_running_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside the pass's transactions (a bundle's, old actions'), another connection still locks the running job at once."""
    owner = User.objects.create_user("nolock")
    running = store_history(owner, prefix="nl", jobs=1, actions=6, ended=OLD, bundle_id="0000003-bun-B",
                            job_status="RUNNING")
    attach(bundle(owner, "0000003-bun-B", "KILLED", OLD), running)
    job_id = running.jobs[0]
    checked: list[str] = []

    def lockable_elsewhere(where: str) -> None:
        def take() -> None:
            try:
                with transaction.atomic():
                    CoordinatorJob.objects.select_for_update(nowait=True).get(pk=job_id)
                checked.append(where)
            finally:
                connections.close_all()

        thread = threading.Thread(target=take)
        thread.start()
        thread.join(30)

    ended, drop = purging._Pass.coordinators_ended, purging._Pass.drop_actions

    def ended_hook(self: purging._Pass, ids: list[str], cutoff: datetime) -> Any:
        lockable_elsewhere("bundles")
        return ended(self, ids, cutoff)

    def drop_hook(self: purging._Pass, ids: list[str], tree: Any) -> None:
        lockable_elsewhere("old actions")
        drop(self, ids, tree)

    monkeypatch.setattr(purging._Pass, "coordinators_ended", ended_hook)
    monkeypatch.setattr(purging._Pass, "drop_actions", drop_hook)
    report = run()
    assert checked == ["bundles", "old actions"]  # a lock held by the pass would have raised (nowait)
    assert report.counts["bundles"] == 0 and report.counts["coordinator_actions"] == 4  # 1-4 of 6: the last 2 stay


@pytest.mark.django_db
@override_settings(PURGE_KEEP_LAST_ACTIONS=1)
def test_old_actions_stay_when_their_purge_is_off(owner: User) -> None:
    """PURGE_OLD_COORD_ACTIONS=false keeps a running job's old actions; on, all but its last go."""
    history = long_running(owner, actions=4, prefix="sw")
    with override_settings(PURGE_OLD_COORD_ACTIONS=False):
        assert run().counts["coordinator_actions"] == 0
    assert CoordinatorAction.objects.filter(job_id=history.jobs[0]).count() == 4
    assert run().counts["coordinator_actions"] == 3
