"""Clear and mark one node (workflows.node_verbs through workflows.services): the engine's rules, fencing, refusals.

Nodes run in this process as a worker runs them (claim, run, record); the node commands run
through the in-process engine, as the services queue them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from coordinators.choices import ActionStatus
from coordinators.models import CoordinatorAction
from kernel.permissions import JobPermissionDenied
from tests.support.engine import run_pending_commands
from tests.workflows.test_engine import app, celery, drive, nodes, submit
from workflows.choices import NodeStatus as N
from workflows.choices import WorkflowStatus as W
from workflows.models import WorkflowJob, WorkflowNode
from workflows.node_verbs import NodeVerbRefused
from workflows.runner import Outcome, claim, record
from workflows.services import request_node_clear, request_node_mark
from xcommands.models import Command

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]


def anyone(workflow: WorkflowJob) -> None:
    """A permission check that lets the caller act."""


def operator() -> User:
    return User.objects.get_or_create(username="op")[0]


def node(workflow: WorkflowJob, name: str) -> WorkflowNode:
    return WorkflowNode.objects.get(workflow=workflow, name=name)


def linear(tmp_path: Path, *, retry: str = "") -> WorkflowJob:
    """a -> b -> end, errors to the kill node."""
    return submit(app(tmp_path, celery("a", "examples.noop_any", ok="b", extra=retry)
                      + celery("b", "examples.noop_any", ok="end")))


def mark(workflow: WorkflowJob, name: str, status: str) -> list[str]:
    _, lines = request_node_mark(workflow.id, name, status, check=anyone, actor=operator())
    run_pending_commands()
    return lines


def clear(workflow: WorkflowJob, name: str, *, downstream: bool = False) -> None:
    request_node_clear(workflow.id, name, downstream=downstream, check=anyone, actor=operator())
    run_pending_commands()


def test_marking_a_running_node_ok_fences_its_attempt_and_the_workflow_takes_the_ok_transition(tmp_path: Path) -> None:
    """The node is OK at once, b is queued next; the worker's late report of its attempt is discarded."""
    workflow = linear(tmp_path)
    a = node(workflow, "a")
    assert claim(a.pk, a.attempt, "w1@host") is not None  # a worker holds attempt 1
    lines = mark(workflow, "a", "OK")
    assert lines[0].endswith("RUNNING -> OK (attempt 1)")
    a.refresh_from_db()
    assert (a.status, a.transition) == (N.OK, "b")
    assert a.history[-1]["marked_by"] == "op" and a.history[-1]["was"] == N.RUNNING
    assert node(workflow, "b").status == N.PREP
    assert record(a.pk, 1, Outcome(N.ERROR, "E1", "late")) == "fenced"
    a.refresh_from_db()
    assert a.status == N.OK and not a.error_code
    drive()
    workflow.refresh_from_db()
    assert workflow.status == W.SUCCEEDED


def test_marking_a_queued_node_error_takes_the_error_path_without_user_retries(tmp_path: Path) -> None:
    """retry-max does not apply: the marked ERROR goes to the kill node, the workflow is KILLED and says who marked it."""
    workflow = linear(tmp_path, retry=' retry-max="3" retry-interval="1"')
    mark(workflow, "a", "ERROR")
    a = node(workflow, "a")
    workflow.refresh_from_db()
    assert (a.status, a.transition, a.error_code) == (N.ERROR, "fail", "MARKED")
    assert "marked ERROR by op" in workflow.error_message
    assert workflow.status == W.KILLED


@pytest.mark.parametrize(("case", "name", "status", "reason"), [
    ("ended-node", "a", "OK", "already ended OK"),
    ("control-node", "end", "OK", "has no node 'end'"),
    ("not-a-mark", "b", "KILLED", "marked OK or ERROR"),
])
def test_an_impossible_mark_is_refused_and_nothing_is_queued(tmp_path: Path, case: str, name: str, status: str,
                                                            reason: str) -> None:
    """A clear error; no command, the node and the workflow unchanged."""
    workflow = linear(tmp_path)
    drive(rounds=1)  # a ran, b queued
    before = nodes(workflow)
    commands = Command.objects.count()
    with pytest.raises(NodeVerbRefused, match=reason):
        request_node_mark(workflow.id, name, status, check=anyone, actor=operator())
    assert Command.objects.count() == commands and nodes(workflow) == before


def test_an_ended_workflow_s_nodes_are_not_marked(tmp_path: Path) -> None:
    """Marking needs a running or suspended workflow; the refusal points at clear."""
    workflow = linear(tmp_path)
    drive()
    with pytest.raises(NodeVerbRefused, match="SUCCEEDED.*clear the node"):
        request_node_mark(workflow.id, "b", "OK", check=anyone, actor=operator())


def test_a_caller_the_check_refuses_queues_nothing(tmp_path: Path) -> None:
    """The permission check runs before anything is queued."""
    workflow = linear(tmp_path)

    def refuse(run: WorkflowJob) -> None:
        raise JobPermissionDenied("no")

    with pytest.raises(JobPermissionDenied):
        request_node_mark(workflow.id, "a", "OK", check=refuse, actor=operator())
    with pytest.raises(JobPermissionDenied):
        request_node_clear(workflow.id, "a", downstream=True, check=refuse, actor=operator())
    assert not Command.objects.filter(name__startswith="workflows.WfNode").exists()


def test_clearing_a_node_of_an_ended_workflow_reruns_it_and_keeps_the_ok_nodes_after_it(tmp_path: Path) -> None:
    """Without downstream: a runs again (attempt 2), b keeps its run (skipped), the workflow ends again."""
    workflow = linear(tmp_path)
    drive()
    clear(workflow, "a")
    workflow.refresh_from_db()
    assert workflow.status == W.RUNNING
    a = node(workflow, "a")
    assert (a.status, a.attempt) == (N.PREP, 2)
    assert any(entry.get("cleared_by") == "op" for entry in a.history)
    assert record(a.pk, 1, Outcome(N.OK)) == "fenced"  # a late report of the first run
    drive()
    workflow.refresh_from_db()
    assert workflow.status == W.SUCCEEDED
    assert (node(workflow, "a").attempt, node(workflow, "b").attempt) == (2, 1)


def test_clearing_with_downstream_reruns_every_node_after_it(tmp_path: Path) -> None:
    """With downstream: b runs again too."""
    workflow = linear(tmp_path)
    drive()
    clear(workflow, "a", downstream=True)
    drive()
    workflow.refresh_from_db()
    assert workflow.status == W.SUCCEEDED
    assert (node(workflow, "a").attempt, node(workflow, "b").attempt) == (2, 2)


def test_a_running_node_after_the_cleared_one_refuses_a_clear_without_downstream_and_is_stopped_with_it(
        tmp_path: Path) -> None:
    """b runs: clear a alone is refused (nothing changes); with downstream b is KILLED, fenced, and runs again later."""
    workflow = linear(tmp_path)
    drive(rounds=1)
    b = node(workflow, "b")
    assert claim(b.pk, b.attempt, "w1@host") is not None
    with pytest.raises(NodeVerbRefused, match=r"after a are running \(b\)"):
        request_node_clear(workflow.id, "a", downstream=False, check=anyone, actor=operator())
    assert node(workflow, "b").status == N.RUNNING
    clear(workflow, "a", downstream=True)
    assert node(workflow, "b").status == N.KILLED
    assert record(b.pk, 1, Outcome(N.OK)) == "fenced"
    drive()
    workflow.refresh_from_db()
    assert workflow.status == W.SUCCEEDED
    assert node(workflow, "b").attempt == 2


def test_clearing_one_fork_path_makes_the_join_wait_for_that_path_only(tmp_path: Path) -> None:
    """The join forgets one arrival; the other path keeps its run; the workflow succeeds again."""
    workflow = submit(app(tmp_path, (
        '<fork name="fork"><path start="left"/><path start="right"/></fork>'
        + celery("left", "examples.noop_any", ok="join") + celery("right", "examples.noop_any", ok="join")
        + '<join name="join" to="end"/>'
    ), start="fork"))
    drive()
    clear(workflow, "left")
    join = node(workflow, "join")
    assert (join.status, join.arrivals) == (N.RUNNING, 1)
    drive()
    workflow.refresh_from_db()
    assert workflow.status == W.SUCCEEDED
    assert (node(workflow, "left").attempt, node(workflow, "right").attempt, node(workflow, "join").arrivals) == (2, 1, 2)


@pytest.mark.parametrize(("case", "name", "reason"), [
    ("live-node", "b", "is PREP: mark it"),
    ("control-node", "end", "only action nodes are cleared"),
    ("unknown-node", "nope", "no such node"),
])
def test_an_impossible_clear_is_refused_and_nothing_changes(tmp_path: Path, case: str, name: str, reason: str) -> None:
    """A clear error; no command queued, nodes unchanged."""
    workflow = linear(tmp_path)
    drive(rounds=1)
    before = nodes(workflow)
    with pytest.raises(NodeVerbRefused, match=reason):
        request_node_clear(workflow.id, name, downstream=True, check=anyone, actor=operator())
    assert nodes(workflow) == before
    assert not Command.objects.filter(name__startswith="workflows.WfNode").exists()


def test_marking_a_coordinator_run_s_task_node_ok_succeeds_its_action(launched: Callable[..., CoordinatorAction]) -> None:
    """A one-task run: the workflow SUCCEEDS as its node, and the coordinator action follows."""
    action = launched()
    workflow = WorkflowJob.objects.get(coord_action=action)
    mark(workflow, "task", "OK")
    workflow.refresh_from_db()
    assert workflow.status == W.SUCCEEDED
    run_pending_commands()
    action.refresh_from_db()
    assert action.status == ActionStatus.SUCCEEDED


def test_a_coordinator_run_that_ended_is_not_cleared(launched: Callable[..., CoordinatorAction]) -> None:
    """A one-task run is rerun through its coordinator action: the refusal says so."""
    action = launched()
    workflow = WorkflowJob.objects.get(coord_action=action)
    mark(workflow, "task", "ERROR")
    with pytest.raises(NodeVerbRefused, match="rerun its coordinator action"):
        request_node_clear(workflow.id, "task", downstream=False, check=anyone, actor=operator())
