"""The worker side of a node: claimed once per attempt, run under a lease, its outcome recorded durably."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from django.db import OperationalError

from coordinators.choices import ActionStatus
from coordinators.commands.actions import CoordActionStatusXCommand
from coordinators.models import CoordinatorAction
from tests.support.coordinator_apps import prop
from tests.support.engine import run_pending_commands
from tests.support.workflow_nodes import node_of
from workflows import parents, runner
from workflows.choices import NodeStatus, WorkflowStatus
from workflows.models import WorkflowNode
from workflows.settings import is_transient
from xcommands.models import Command
from xcommands.queue import enqueue

pytestmark = pytest.mark.django_db(transaction=True)

Launch = Callable[..., CoordinatorAction]


def test_a_launch_is_a_workflow_job_with_one_node(launched: Launch) -> None:
    """Launching an action starts a RUNNING `-W` workflow job whose one node waits (PREP) for a worker."""
    action = launched()
    node = node_of(action)
    assert action.external_id.endswith("-W") and len(action.external_id.split("-")) == 3
    assert node.workflow.status == WorkflowStatus.RUNNING and node.workflow.coord_action_id == action.id
    assert (node.status, node.attempt, node.task_name, node.queue) == (NodeStatus.PREP, 1, "examples.noop", "actions")
    assert node.task_ids == [node.task_id] and node.dispatches == 1


def test_a_node_runs_once_per_attempt_and_the_action_succeeds(launched: Launch, tmp_path: Path) -> None:
    """The first delivery runs the task; a duplicate of the same attempt runs nothing; the action SUCCEEDED."""
    log = tmp_path / "ran.jsonl"
    action = launched("examples.record", properties=prop("log", f"file://{log}"))
    node = node_of(action)
    assert runner.run_node(node.id, 1, "w1@host") == NodeStatus.OK
    assert runner.run_node(node.id, 1, "w2@host") == "skipped"  # redelivered or sent twice
    assert len(log.read_text().splitlines()) == 1
    node.refresh_from_db()
    assert node.status == NodeStatus.OK and node.worker.startswith("w1@host:")
    assert [entry["outcome"] for entry in node.history] == [NodeStatus.OK]
    run_pending_commands()
    action.refresh_from_db()
    assert action.status == ActionStatus.SUCCEEDED and action.ended_at is not None


def test_the_worker_marks_the_action_running_when_it_claims(launched: Launch) -> None:
    """A claim moves the action SUBMITTED -> RUNNING (what only the worker knows)."""
    action = launched()
    node = node_of(action)
    claimed = runner.claim(node.id, 1, "w1@host:1")
    assert claimed is not None
    parents.started(claimed.workflow, claimed)
    action.refresh_from_db()
    assert action.status == ActionStatus.RUNNING and action.started_at is not None


def test_a_stale_attempt_runs_nothing(launched: Launch, tmp_path: Path) -> None:
    """A message of attempt 1 arriving after the node was launched again (attempt 2) is dropped."""
    log = tmp_path / "ran.jsonl"
    action = launched("examples.record", properties=prop("log", f"file://{log}"))
    node = node_of(action)
    WorkflowNode.objects.filter(pk=node.pk).update(attempt=2)
    assert runner.run_node(node.id, 1) == "skipped"
    assert not log.exists()
    assert runner.run_node(node.id, 2) == NodeStatus.OK


def test_a_failing_task_fails_the_action_with_its_own_error(launched: Launch) -> None:
    """The task's exception is the action's error (ERROR node, FAILED workflow and action), not retried."""
    action = launched("examples.fail")
    node = node_of(action)
    assert runner.run_node(node.id, 1) == NodeStatus.ERROR
    node.refresh_from_db()
    assert node.workflow.status == WorkflowStatus.FAILED and node.error_code == "RuntimeError"
    run_pending_commands()
    action.refresh_from_db()
    assert action.status == ActionStatus.FAILED
    assert action.error_message.startswith("RuntimeError: example failure for")


def test_an_unknown_task_fails_naming_it_and_the_worker(launched: Launch) -> None:
    """A task no worker has registered FAILS the node with a message naming the task and the worker."""
    action = launched()
    node = node_of(action)
    WorkflowNode.objects.filter(pk=node.pk).update(task_name="examples.nope")
    assert runner.run_node(node.id, 1, "w9@box") == NodeStatus.FAILED
    run_pending_commands()
    action.refresh_from_db()
    assert action.status == ActionStatus.FAILED
    assert "'examples.nope'" in action.error_message and "w9@box:" in action.error_message


def test_an_outcome_after_the_node_moved_on_is_discarded(launched: Launch) -> None:
    """A zombie's report (its attempt was given up and launched again) changes nothing and reports nothing."""
    action = launched()
    node = node_of(action)
    assert runner.claim(node.id, 1, "zombie:1") is not None
    WorkflowNode.objects.filter(pk=node.pk).update(status=NodeStatus.PREP, attempt=2)
    commands = Command.objects.count()
    assert runner.record(node.id, 1, runner.Outcome(NodeStatus.OK)) == "fenced"
    node.refresh_from_db()
    assert (node.status, node.attempt) == (NodeStatus.PREP, 2)
    assert Command.objects.count() == commands


def test_recording_retries_while_the_database_is_unreachable(launched: Launch, monkeypatch: pytest.MonkeyPatch) -> None:
    """Database errors while recording are retried (the broker plays no part); the outcome lands once."""
    action = launched()
    node = node_of(action)
    assert runner.claim(node.id, 1, "w1:1") is not None
    real, calls = runner._record_once, []

    def flaky(*args: object) -> str:
        calls.append(1)
        if len(calls) < 3:
            raise OperationalError("server closed the connection unexpectedly")
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "_record_once", flaky)
    monkeypatch.setattr(runner.time, "sleep", lambda seconds: None)
    assert runner.record(node.id, 1, runner.Outcome(NodeStatus.OK)) == NodeStatus.OK
    assert len(calls) == 3
    run_pending_commands()
    action.refresh_from_db()
    assert action.status == ActionStatus.SUCCEEDED


def test_a_report_of_an_earlier_run_is_ignored(launched: Launch) -> None:
    """After a rerun the action waits for its new run: the old run's late end does not settle it."""
    action = launched()
    CoordinatorAction.objects.filter(pk=action.pk).update(external_id="0000099-000000000000000-W")
    enqueue(CoordActionStatusXCommand(job_id=action.job_id, number=1, status=ActionStatus.FAILED,
                                      error="old", workflow_id=action.external_id))
    run_pending_commands()
    action.refresh_from_db()
    assert action.status == ActionStatus.SUBMITTED
    skipped = Command.objects.filter(name="coordinators.CoordActionStatusXCommand").latest("pk")
    assert skipped.status == "SKIPPED" and "now runs 0000099-000000000000000-W" in json.dumps(skipped.history)


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        pytest.param(OperationalError("server closed the connection unexpectedly"), True, id="database-gone"),
        pytest.param(ConnectionRefusedError(111, "refused"), True, id="connection-refused"),
        pytest.param(__import__("redis").exceptions.ConnectionError("redis down"), True, id="redis-down"),
        pytest.param(TimeoutError("slow"), True, id="timeout"),
        pytest.param(RuntimeError("bug"), False, id="the-tasks-own-error"),
        pytest.param(KeyError("input"), False, id="key-error"),
    ],
)
def test_infrastructure_errors_are_transient_the_tasks_own_are_not(error: Exception, transient: bool) -> None:
    """Connections lost and timeouts are retried; anything else is the task's own, final error."""
    assert is_transient(error) is transient


def test_a_transient_error_launches_the_node_again_until_launches_run_out(launched: Launch) -> None:
    """A task that met a lost connection runs again (next attempt); on the last launch the error is final."""
    action = launched()
    node = node_of(action)
    WorkflowNode.objects.filter(pk=node.pk).update(max_attempts=2)
    gone = runner.Outcome(NodeStatus.ERROR, "OperationalError", "OperationalError: server closed", transient=True)
    assert runner.claim(node.id, 1, "w1:1") is not None
    assert runner.record(node.id, 1, gone) == "retry"
    node.refresh_from_db()
    assert (node.status, node.attempt, node.history[-1]["outcome"]) == (NodeStatus.PREP, 2, "RETRY")
    assert runner.claim(node.id, 2, "w1:1") is not None
    assert runner.record(node.id, 2, gone) == NodeStatus.ERROR
    run_pending_commands()
    action.refresh_from_db()
    assert action.status == ActionStatus.FAILED and "server closed" in action.error_message


def test_transient_errors_can_be_final(launched: Launch, settings: object) -> None:
    """WORKFLOW_RETRY_TRANSIENT_ERRORS=false: a lost connection is the task's final error."""
    settings.WORKFLOW_RETRY_TRANSIENT_ERRORS = False  # type: ignore[attr-defined]
    assert not is_transient(OperationalError("gone"))
