"""A run's end settles its coordinator action in the run's own transaction (ADR 0027), or falls back to the command."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from coordinators.choices import ActionStatus
from coordinators.models import CoordinatorAction, StatusChange
from coordinators.services import submit_coordinator
from kernel.capture import capturing
from kernel.history import acting_as
from kernel.models import StatusRecord, TaskTry
from statusservice.tasks import input_checks
from tests.support.coordinator_apps import coordinator_xml
from tests.support.engine import run_pending_commands
from tests.support.locks import row_locked
from tests.support.workflow_nodes import node_of
from workflows import runner
from workflows.choices import NodeStatus, WorkflowStatus
from workflows.models import WorkflowJob, WorkflowNode
from workflows.recovery import recover
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)

Launch = Callable[..., CoordinatorAction]
STATUS_COMMAND = "coordinators.CoordActionStatusXCommand"


def commands(name: str) -> int:
    return Command.objects.filter(name=name).count()


def history(action: CoordinatorAction) -> list[tuple[str, str, str]]:
    return list(StatusChange.objects.filter(object_id=action.id).order_by("at", "id").values_list("from_status", "to_status", "by"))


def test_a_succeeded_run_settles_its_action_without_a_command(launched: Launch) -> None:
    """SUBMITTED -> RUNNING -> SUCCEEDED in the run's transaction, named after the run; the last action ends the job."""
    action = launched()
    node = node_of(action)
    assert runner.run_node(node.id, 1) == NodeStatus.OK
    action.refresh_from_db()
    assert action.status == ActionStatus.SUCCEEDED and action.ended_at is not None and action.started_at is not None
    assert commands(STATUS_COMMAND) == 0
    by = f"worker (run {action.external_id})"
    assert history(action)[-1] == (ActionStatus.RUNNING, ActionStatus.SUCCEEDED, by)
    # The job had one action and is done materializing: its status is derived by one command.
    assert Command.objects.filter(key=action.job_id, name="coordinators.CoordJobStatusXCommand").count() == 1
    run_pending_commands()
    action.job.refresh_from_db()
    assert action.job.status == "SUCCEEDED"


def test_a_failed_run_fails_its_action_and_the_job_derives_its_error(launched: Launch) -> None:
    """FAILED with the task's error; the job's status command is queued in the same transaction."""
    action = launched("examples.fail")
    assert runner.run_node(node_of(action).id, 1) == NodeStatus.ERROR
    action.refresh_from_db()
    assert action.status == ActionStatus.FAILED and action.error_message
    assert commands(STATUS_COMMAND) == 0
    assert Command.objects.filter(key=action.job_id, name="coordinators.CoordJobStatusXCommand").count() == 1
    run_pending_commands()
    action.job.refresh_from_db()
    assert action.job.status == "FAILED"  # its only action failed (spec 6.1.2)


def test_the_freed_slot_starts_the_next_ready_action(in_process_engine: None) -> None:
    """Concurrency 1: the second action waits READY; the first's end queues the start that lets it in."""
    job = submit_coordinator(coordinator_xml("examples.noop", actions=2, concurrency=1), {},
                             owner=User.objects.get_or_create(username="slot")[0])
    run_pending_commands()
    input_checks()
    run_pending_commands()
    first, second = job.actions.get(number=1), job.actions.get(number=2)
    assert (first.status, second.status) == (ActionStatus.SUBMITTED, ActionStatus.READY)
    assert runner.run_node(node_of(first).id, 1) == NodeStatus.OK
    assert commands("coordinators.CoordActionReadyXCommand") == 1
    run_pending_commands()
    second.refresh_from_db()
    assert second.status == ActionStatus.SUBMITTED


def test_a_rerun_action_is_left_to_the_command(launched: Launch) -> None:
    """The action waits for another run now: the old run's end settles nothing; the command skips it under the key."""
    action = launched()
    node = node_of(action)
    CoordinatorAction.objects.filter(pk=action.pk).update(external_id="0000099-000000000000000-W")
    assert runner.run_node(node.id, 1) == NodeStatus.OK
    action.refresh_from_db()
    assert action.status == ActionStatus.SUBMITTED
    assert commands(STATUS_COMMAND) == 1
    run_pending_commands()
    assert Command.objects.get(name=STATUS_COMMAND).status == "SKIPPED"


def test_off_by_setting_every_end_is_a_command(launched: Launch) -> None:
    """COORD_SETTLE_ON_END=false: the end is reported through the status command, as before."""
    action = launched()
    with override_settings(COORD_SETTLE_ON_END=False):
        assert runner.run_node(node_of(action).id, 1) == NodeStatus.OK
    assert commands(STATUS_COMMAND) == 1
    run_pending_commands()
    action.refresh_from_db()
    assert action.status == ActionStatus.SUCCEEDED
    assert history(action)[-1][2] == STATUS_COMMAND


def test_an_action_a_command_holds_is_not_waited_for(launched: Launch, tmp_path: Path) -> None:
    """A command holding the action's row (a kill, a start): the run's end does not wait; its command decides later."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL (SQLite has one writer at a time)")
    action = launched()
    node = node_of(action)
    # Already RUNNING, so the worker's start report (a compare-and-set that waits for row locks) has nothing to do.
    CoordinatorAction.objects.filter(pk=action.pk).update(status=ActionStatus.RUNNING)
    with row_locked(CoordinatorAction.objects.filter(pk=action.pk)):
        started = time.monotonic()
        assert runner.run_node(node.id, 1) == NodeStatus.OK
        assert time.monotonic() - started < 10  # not waited for
    assert commands(STATUS_COMMAND) == 1
    run_pending_commands()
    action.refresh_from_db()
    assert action.status == ActionStatus.SUCCEEDED
    assert history(action)[-1][2] == STATUS_COMMAND


def test_a_healthy_worker_never_loses_its_lease_to_another_transactions_lock(
    launched: Launch, settings: object, tmp_path: Path,
) -> None:
    """Issue 24, item 1: another connection holds the action's row while the node starts; the lease is renewed from
    the claim, the start report gives up within a second, the task runs once past its lease, and recovery relaunches nothing."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL (SQLite has one writer at a time)")
    settings.WORKFLOW_LEASE_SECONDS = 2  # type: ignore[attr-defined]
    log_file = tmp_path / "runs.jsonl"
    action = launched("examples.record", properties=f"<property><name>log</name><value>{log_file}</value></property>"
                      "<property><name>seconds</name><value>3</value></property>")
    node = node_of(action)
    with row_locked(CoordinatorAction.objects.filter(pk=action.pk)):
        started = time.monotonic()
        assert runner.run_node(node.id, 1) == NodeStatus.OK
        took = time.monotonic() - started
        assert took < 8, took  # 3 s of task, at most 1 s of waiting for the lock
        node.refresh_from_db()
        assert (node.status, node.attempt, len(node.history)) == (NodeStatus.OK, 1, 1)
        recover(timezone.now())
        node.refresh_from_db()
        assert (node.status, node.attempt) == (NodeStatus.OK, 1)  # nothing relaunched
    assert len(log_file.read_text().splitlines()) == 1  # the task ran once
    run_pending_commands()
    action.refresh_from_db()
    assert action.status == ActionStatus.SUCCEEDED


def _story(action: CoordinatorAction) -> dict[str, Any]:
    """Everything a run's report wrote about the action, its run and node, with ids and times made comparable."""
    action.refresh_from_db()
    run = action.external_id
    node = WorkflowNode.objects.select_related("workflow").get(workflow_id=run)
    plain = {run: "RUN", action.id: "ACTION", action.job_id: "JOB", node.id: "NODE",
             action.nominal_time.isoformat(): "NOMINAL"}  # examples.fail names it in its error

    def same(text: str) -> str:
        for real, alias in plain.items():
            text = text.replace(real, alias)
        return text

    return {
        "action": (action.status, same(action.error_message), action.started_at is not None, action.ended_at is not None),
        "action history": [(a, b, same(by), same(why)) for a, b, by, why in StatusChange.objects.filter(
            object_id=action.id).order_by("at", "id").values_list("from_status", "to_status", "by", "reason")],
        "records": [(kind, same(obj), same(parent), a, b, same(by), same(why)) for kind, obj, parent, a, b, by, why in
                    StatusRecord.objects.filter(object_id__in=[run, node.id]).order_by("at", "id").values_list(
                        "kind", "object_id", "parent_id", "from_status", "to_status", "by", "reason")],
        "node": (node.status, node.error_code, same(node.error_message), node.lease_expires_at, node.ended_at is not None,
                 [(entry["attempt"], entry["outcome"], same(entry.get("error", ""))) for entry in node.history]),
        "workflow": (node.workflow.status, node.workflow.error_code, same(node.workflow.error_message),
                     node.workflow.ended_at == node.ended_at),
        "tries": [(same(t.object_id), same(t.job_id), same(t.action_id), same(t.root_id), t.name, t.run, t.attempt,
                   t.status, t.error_code, same(t.error_message), t.started_at == node.started_at, t.ended_at == node.ended_at)
                  for t in TaskTry.objects.filter(object_id=node.id)],
        "commands": sorted(Command.objects.filter(key=action.job_id).values_list("name", flat=True)),
    }


@pytest.mark.parametrize("task", ["examples.noop", "examples.fail"])
def test_the_one_batch_report_writes_what_the_orm_report_writes(
    launched: Launch, task: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker's report of a one-node run (claim + one batch) leaves the same rows as the ORM report it replaces."""
    fast, slow = launched(task, owner="fast"), launched(task, owner="slow")
    with monkeypatch.context() as patched:
        patched.setattr(runner, "end_node", lambda *args, **kwargs: pytest.fail("the ORM report ran"))
        runner.run_node(node_of(fast).id, 1)
    worker = runner.identity()
    with acting_as(f"worker {worker}"):  # as run_attempt names the worker
        node = runner.claim(node_of(slow).id, 1, worker)
        assert node is not None
        outcome = runner.invoke(node.task_name, node.workflow, worker)
        runner.record(node.id, 1, outcome)  # no `claimed`: the ORM report
    fast_story, slow_story = _story(fast), _story(slow)
    assert fast_story == slow_story
    assert fast_story["action"][0] == (ActionStatus.SUCCEEDED if task == "examples.noop" else ActionStatus.FAILED)
    assert [row[3:5] for row in fast_story["records"]] == [
        (NodeStatus.PREP, NodeStatus.RUNNING), (NodeStatus.RUNNING, fast_story["node"][0]),
        ("RUNNING", fast_story["workflow"][0]),
    ]


def test_the_batch_report_leaves_a_suspended_workflow_to_resume(launched: Launch) -> None:
    """A workflow suspended while its node ran keeps its status; the node's end is stored and the action waits."""
    action = launched()
    node = node_of(action)
    claimed = runner.claim(node.id, 1, runner.identity())
    assert claimed is not None
    WorkflowJob.objects.filter(pk=node.workflow_id).update(status=WorkflowStatus.SUSPENDED)
    assert runner.record(node.id, 1, runner.Outcome(NodeStatus.OK), claimed=claimed) == NodeStatus.OK
    node.refresh_from_db()
    action.refresh_from_db()
    assert node.status == NodeStatus.OK and node.workflow.status == WorkflowStatus.SUSPENDED
    assert action.status == ActionStatus.RUNNING


def test_a_fenced_batch_report_changes_nothing_and_keeps_the_try(launched: Launch) -> None:
    """A node that moved on while the task ran (its lease lost): the batch writes nothing; the try is DISCARDED."""
    action = launched()
    node = node_of(action)
    claimed = runner.claim(node.id, 1, runner.identity())
    assert claimed is not None
    WorkflowNode.objects.filter(pk=node.id).update(status=NodeStatus.PREP, attempt=2)  # relaunched elsewhere
    with capturing() as capture:
        print("the task's output")  # noqa: T201 - what the try keeps
    assert runner.record(node.id, 1, runner.Outcome(NodeStatus.OK), capture, claimed=claimed) == "fenced"
    action.refresh_from_db()
    assert action.status == ActionStatus.RUNNING
    assert WorkflowJob.objects.get(pk=node.workflow_id).status == WorkflowStatus.RUNNING
    assert list(TaskTry.objects.filter(object_id=node.id).values_list("status", "log")) == [
        ("DISCARDED", "the task's output\n"),
    ]
