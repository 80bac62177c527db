"""Workflow applications run node by node: control nodes, fork/join, errors, retries, verbs, rerun, sub-workflows.

Nodes run in this process as a worker runs them (`run_node`: claim, run, record); the verbs'
commands run through the in-process engine. Real files, real XML, the real EL.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.core import mail
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from coordinators.choices import ActionStatus
from coordinators.models import CoordinatorJob
from coordinators.services import submit_coordinator
from oozie.definitions import DefinitionError
from statusservice.tasks import input_checks
from tests.support.coordinator_apps import minute
from tests.support.engine import run_pending_commands
from tests.support.workflow_apps import WF, app, celery, drive, nodes, owner, submit
from workflows import notifications
from workflows.choices import NodeStatus as N
from workflows.choices import WorkflowStatus as W
from workflows.definitions.submission import prepare_workflow
from workflows.engine import WorkflowError, create_job, due_user_retries
from workflows.ids import next_workflow_ids
from workflows.models import WorkflowJob, WorkflowNode
from workflows.runner import Outcome, claim, record, run_node
from workflows.services import request_control, request_rerun
from workflows.tasks import notify

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]


def test_a_fork_runs_its_paths_the_join_waits_for_all_and_a_decision_reads_the_files(tmp_path: Path) -> None:
    """The example shape: fork of two tasks, join, decision on fs:exists, fs cleanup, end."""
    out = tmp_path / "out"
    directory = app(tmp_path, (
        '<fork name="fork"><path start="left"/><path start="right"/></fork>'
        + celery("left", "examples.touch", f"{out}/left", ok="join")
        + celery("right", "examples.touch", f"{out}/right", ok="join")
        + '<join name="join" to="check"/>'
        + '<decision name="check"><switch>'
        + f'<case to="cleanup">${{fs:exists("file://{out}/left") and fs:exists("file://{out}/right")}}</case>'
        + '<default to="fail"/></switch></decision>'
        + f'<action name="cleanup"><fs><delete path="file://{out}/left"/><mkdir path="file://{out}/done"/></fs>'
        + '<ok to="end"/><error to="fail"/></action>'
    ), start="fork")
    workflow = submit(directory)
    assert workflow.status == W.RUNNING
    queued = WorkflowNode.objects.filter(workflow=workflow, status=N.PREP).values_list("name", flat=True)
    assert sorted(queued) == ["left", "right"]  # both paths at once
    assert drive() == 3
    workflow.refresh_from_db()
    assert workflow.status == W.SUCCEEDED, workflow.error_message
    assert nodes(workflow) == {
        ":start:": (N.OK, "fork"), "fork": (N.OK, "left,right"), "left": (N.OK, "join"), "right": (N.OK, "join"),
        "join": (N.OK, "check"), "check": (N.OK, "cleanup"), "cleanup": (N.OK, "end"), "end": (N.OK, ""),
    }
    assert not (out / "left").exists() and (out / "right").exists() and (out / "done").is_dir()
    assert WorkflowNode.objects.get(workflow=workflow, name="join").arrivals == 2


def test_the_join_passes_once_when_one_path_arrives_before_the_other_starts(tmp_path: Path) -> None:
    """The join stays RUNNING with one arrival, then passes with the second."""
    directory = app(tmp_path, (
        '<fork name="fork"><path start="a"/><path start="b"/></fork>'
        + celery("a", "examples.noop_any", ok="join") + celery("b", "examples.noop_any", ok="join")
        + '<join name="join" to="end"/>'
    ), start="fork")
    workflow = submit(directory)
    first = WorkflowNode.objects.get(workflow=workflow, name="a")
    run_node(first.pk, first.attempt, "test")
    join = WorkflowNode.objects.get(workflow=workflow, name="join")
    assert (join.status, join.arrivals) == (N.RUNNING, 1)
    drive()
    join.refresh_from_db()
    workflow.refresh_from_db()
    assert (join.status, join.arrivals, workflow.status) == (N.OK, 2, W.SUCCEEDED)


def _three_way_fork(tmp_path: Path) -> Path:
    """An application forking into three no-op actions a, b and c that meet at `join`, then end."""
    return app(tmp_path, (
        '<fork name="fork"><path start="a"/><path start="b"/><path start="c"/></fork>'
        + "".join(celery(name, "examples.noop_any", ok="join") for name in "abc") + '<join name="join" to="end"/>'
    ), start="fork")


def test_a_three_way_join_counts_each_arrival_and_passes_on_the_last(tmp_path: Path) -> None:
    """Arrivals after the first at a waiting join only count (no history line); the third passes."""
    from kernel.models import StatusRecord  # noqa: PLC0415 - the history the join writes

    workflow = submit(_three_way_fork(tmp_path))
    for name, expected in (("a", 1), ("b", 2)):
        node = WorkflowNode.objects.get(workflow=workflow, name=name)
        run_node(node.pk, node.attempt, "test")
        join = WorkflowNode.objects.get(workflow=workflow, name="join")
        assert (join.status, join.arrivals, join.transition) == (N.RUNNING, expected, "")
    node.refresh_from_db()
    assert join.started_at is not None and node.started_at is not None
    assert join.started_at >= node.started_at  # the second arrival's time
    last = WorkflowNode.objects.get(workflow=workflow, name="c")
    run_node(last.pk, last.attempt, "test")
    join.refresh_from_db()
    workflow.refresh_from_db()
    assert (join.status, join.arrivals, join.transition, workflow.status) == (N.OK, 3, "end", W.SUCCEEDED)
    history = list(StatusRecord.objects.filter(object_id=join.pk).order_by("id").values_list("to_status", flat=True))
    assert history == [N.OK]  # the pass; counting arrivals writes no line


def test_a_node_run_reads_its_owner_with_the_claim_and_the_last_path_passes_the_join_in_its_report(
        tmp_path: Path) -> None:
    """No statement of a node's run reads the owner again; the join's pass (OK, transition, history) is in the report's batch."""
    from kernel.models import StatusRecord  # noqa: PLC0415 - the history the join writes

    workflow = submit(_three_way_fork(tmp_path))
    assert workflow.owner_id is not None
    runs = {}
    for name in "abc":
        node = WorkflowNode.objects.get(workflow=workflow, name=name)
        with CaptureQueriesContext(connection) as queries:
            assert run_node(node.pk, node.attempt, "test") == N.OK
        runs[name] = [query["sql"] for query in queries.captured_queries]
    for name, statements in runs.items():
        owner_reads = [sql for sql in statements if "auth_user" in sql and "workflows_workflownode n" not in sql]
        assert owner_reads == [], name  # the claim's read joins the owner: the action's user is known
    # The last path: after the report's batch, the engine writes only the end node and the job's end
    # (the live nodes killed, the job, its history line, the last node for the parents): no read of the
    # join before writing it, no UPDATE of it.
    join_writes = [sql for sql in runs["c"] if "@join" in sql or "'join'" in sql]
    assert not any(sql.lstrip().upper().startswith(("SELECT", "UPDATE \"")) for sql in join_writes), join_writes
    join = WorkflowNode.objects.get(workflow=workflow, name="join")
    workflow.refresh_from_db()
    assert (join.status, join.arrivals, join.transition, workflow.status) == (N.OK, 3, "end", W.SUCCEEDED)
    assert join.ended_at == WorkflowNode.objects.get(workflow=workflow, name="c").ended_at  # the report's time
    record = StatusRecord.objects.get(object_id=join.pk)
    assert (record.from_status, record.to_status, record.parent_id, record.at) == (N.RUNNING, N.OK, workflow.id,
                                                                                   join.ended_at)
    assert record.by.startswith("worker test")


def test_entering_the_next_action_reads_its_row_once(tmp_path: Path) -> None:
    """A sequential node's report enters the next action with one read of its row (locked) and one write."""
    directory = app(tmp_path, celery("a", "examples.noop_any", ok="b") + celery("b", "examples.noop_any", ok="end"))
    workflow = submit(directory)
    first = WorkflowNode.objects.get(workflow=workflow, name="a")
    with CaptureQueriesContext(connection) as queries:
        assert run_node(first.pk, first.attempt, "test") == N.OK
    touching_b = [query["sql"] for query in queries.captured_queries if f"{workflow.id}@b" in query["sql"]]
    assert [sql.split()[0] for sql in touching_b] == ["SELECT", "INSERT"], touching_b
    second = WorkflowNode.objects.get(workflow=workflow, name="b")
    assert (second.status, second.attempt) == (N.PREP, 1)
    drive()
    workflow.refresh_from_db()
    assert workflow.status == W.SUCCEEDED


@pytest.mark.parametrize("width", [10, 40])
def test_starting_a_new_job_writes_its_nodes_in_one_statement_without_looking_for_earlier_rows(
        tmp_path: Path, django_assert_max_num_queries: Any, width: int) -> None:
    """A new job's start: its nodes in one INSERT, no savepoint or read per node (`start_new_job`).

    Forty paths: the fork's transition lists them all, longer than the 100 characters a node's
    transition once held (PostgreSQL refused the start).
    """
    paths = "".join(f'<path start="a{i}"/>' for i in range(width))
    body = (f'<fork name="fork">{paths}</fork>'
            + "".join(celery(f"a{i}", "examples.noop_any", ok="join") for i in range(width))
            + '<join name="join" to="end"/>')
    directory = app(tmp_path, body, start="fork")
    prepared = prepare_workflow((directory / "workflow.xml").read_text(), {"user.name": "wf-user"},
                                app_path=str(directory))
    # The job, its id, its start and history line, and one INSERT of `:start:`, the fork and every
    # action, plus the transaction, however wide the fork: a statement per node would take 12 or 42.
    next_workflow_ids(1)  # the id counter's first use creates it
    with django_assert_max_num_queries(8), transaction.atomic():  # a launch's transaction
        workflow = create_job(prepared, now=timezone.now())
    assert workflow.status == W.RUNNING and getattr(workflow, "_new_rows", None) is None
    stored = {n.name: (n.status, n.attempt, n.max_attempts, n.transition) for n in workflow.nodes.all()}
    assert stored[":start:"][0::3] == (N.OK, "fork")
    assert stored["fork"][0::3] == (N.OK, ",".join(f"a{i}" for i in range(width)))
    assert {name for name, row in stored.items() if row[:2] == (N.PREP, 1)} == {f"a{i}" for i in range(width)}
    assert drive() == width
    workflow.refresh_from_db()
    assert workflow.status == W.SUCCEEDED
    assert WorkflowNode.objects.get(workflow=workflow, name="join").arrivals == width


def test_a_sub_workflow_refused_at_the_start_and_a_control_path_meet_at_the_join(tmp_path: Path) -> None:
    """A path ended while the job starts (a child that cannot be submitted) and another reach the join once each."""
    directory = app(tmp_path, (
        '<fork name="fork"><path start="sub"/><path start="d"/></fork>'
        f'<action name="sub"><sub-workflow><app-path>{tmp_path / "missing"}</app-path></sub-workflow>'
        '<ok to="join"/><error to="join"/></action>'
        '<decision name="d"><switch><case to="join">${true}</case><default to="join"/></switch></decision>'
        '<join name="join" to="end"/>'
    ), start="fork")
    workflow = submit(directory)
    workflow.refresh_from_db()
    assert workflow.status == W.SUCCEEDED, workflow.error_message
    sub = WorkflowNode.objects.get(workflow=workflow, name="sub")
    assert (sub.status, sub.error_code, sub.transition) == (N.ERROR, "E0SUBWF", "join")
    join = WorkflowNode.objects.get(workflow=workflow, name="join")
    assert (join.status, join.arrivals, join.transition) == (N.OK, 2, "end")


def test_a_start_that_reads_its_own_nodes_and_passes_a_join_sees_and_records_them(tmp_path: Path) -> None:
    """During the start, a decision reads the transition another path stored and the join passes with its history line."""
    from kernel.models import StatusRecord  # noqa: PLC0415 - the history the join writes

    directory = app(tmp_path, (
        '<fork name="fork"><path start="d1"/><path start="d2"/></fork>'
        '<decision name="d1"><switch><case to="join">${true}</case><default to="join"/></switch></decision>'
        '<decision name="d2"><switch><case to="join">${wf:transition(\'d1\') eq \'join\'}</case>'
        '<default to="fail"/></switch></decision>'
        '<join name="join" to="end"/>'
    ), start="fork")
    workflow = submit(directory)
    workflow.refresh_from_db()
    assert workflow.status == W.SUCCEEDED, workflow.error_message
    assert nodes(workflow)["d2"] == (N.OK, "join")  # d1's transition, held for the start's INSERT, was read
    join = WorkflowNode.objects.get(workflow=workflow, name="join")
    assert (join.status, join.arrivals, join.transition) == (N.OK, 2, "end")
    history = list(StatusRecord.objects.filter(object_id=join.pk).values_list("from_status", "to_status"))
    assert history == [(N.RUNNING, N.OK)]


def test_an_error_takes_the_error_transition_to_a_kill_with_its_message(tmp_path: Path) -> None:
    """A task that raises: ERROR, the error path, the kill node's EL message names the node and its error."""
    directory = app(tmp_path, celery("needs", "examples.fail_unless", str(tmp_path / "missing"), ok="end"))
    workflow = submit(directory)
    drive()
    workflow.refresh_from_db()
    assert workflow.status == W.KILLED
    assert workflow.error_message.startswith("failed at needs: FileNotFoundError")
    assert nodes(workflow)["needs"] == (N.ERROR, "fail")
    assert nodes(workflow)["fail"][0] == N.OK


def test_user_retry_runs_an_erroring_node_again_until_it_works(tmp_path: Path) -> None:
    """retry-max=3, retry-interval=0: the node is USER_RETRY, runs again, and passes once its file exists."""
    needed = tmp_path / "needed"
    directory = app(tmp_path, celery("needs", "examples.fail_unless", str(needed), ok="end",
                                     extra=' retry-max="3" retry-interval="0"'))
    workflow = submit(directory)
    node = WorkflowNode.objects.get(workflow=workflow, name="needs")
    run_node(node.pk, node.attempt, "test")  # ERROR, retried at once (interval 0): PREP again, next attempt
    node.refresh_from_db()
    assert (node.status, node.user_retries, node.attempt) == (N.PREP, 1, 2)
    needed.touch()
    drive()
    node.refresh_from_db()
    workflow.refresh_from_db()
    assert (node.status, node.user_retries, workflow.status) == (N.OK, 1, W.SUCCEEDED)
    assert [entry["outcome"] for entry in node.history] == [N.ERROR, N.OK]


def test_user_retries_run_out_then_the_error_transition(tmp_path: Path, settings: Any) -> None:
    """After retry-max retries the error path is taken; a retry waits retry-interval (minutes) in USER_RETRY."""
    settings.WORKFLOW_RETRY_INTERVAL_UNIT_SECONDS = 0.001
    directory = app(tmp_path, celery("needs", "examples.fail_unless", str(tmp_path / "never"), ok="end",
                                     extra=' retry-max="2" retry-interval="1"'))
    workflow = submit(directory)
    for _ in range(3):
        node = WorkflowNode.objects.get(workflow=workflow, name="needs")
        if node.status == N.USER_RETRY:
            assert node.retry_at is not None
            assert due_user_retries(timezone.now() + timedelta(seconds=1)) == 1
            node.refresh_from_db()
        run_node(node.pk, node.attempt, "test")
    node.refresh_from_db()
    workflow.refresh_from_db()
    assert (node.status, node.user_retries, workflow.status) == (N.ERROR, 2, W.KILLED)


def test_kill_during_a_fork_kills_every_running_branch(tmp_path: Path) -> None:
    """Kill while both branches are queued: every live node KILLED, the job KILLED, nothing runs after."""
    directory = app(tmp_path, (
        '<fork name="fork"><path start="a"/><path start="b"/></fork>'
        + celery("a", "examples.touch", str(tmp_path / "a"), ok="join")
        + celery("b", "examples.touch", str(tmp_path / "b"), ok="join") + '<join name="join" to="end"/>'
    ), start="fork")
    workflow = submit(directory)
    first = WorkflowNode.objects.get(workflow=workflow, name="a")
    run_node(first.pk, first.attempt, "test")
    assert request_control(workflow.id, "kill", check=lambda _: None)
    run_pending_commands()
    workflow.refresh_from_db()
    assert workflow.status == W.KILLED
    assert nodes(workflow)["b"][0] == N.KILLED and nodes(workflow)["a"][0] == N.OK
    assert drive() == 0 and not (tmp_path / "b").exists()


def test_rerun_from_failed_nodes_skips_what_succeeded(tmp_path: Path) -> None:
    """failnodes=true: the OK node keeps its single run, the failed one runs again and the job succeeds."""
    marker, needed = tmp_path / "ran", tmp_path / "needed"
    directory = app(tmp_path, (
        celery("first", "examples.touch", str(marker), ok="second")
        + celery("second", "examples.fail_unless", str(needed), ok="end")
    ))
    workflow = submit(directory)
    drive()
    workflow.refresh_from_db()
    assert workflow.status == W.KILLED
    first = WorkflowNode.objects.get(workflow=workflow, name="first")
    needed.touch()
    marker.unlink()
    request_rerun(workflow.id, {"oozie.wf.rerun.failnodes": "true"}, check=lambda _: None)
    run_pending_commands()
    drive()
    workflow.refresh_from_db()
    assert (workflow.status, workflow.run) == (W.SUCCEEDED, 1)
    assert not marker.exists()  # `first` was skipped
    again = WorkflowNode.objects.get(workflow=workflow, name="first")
    assert (again.task_id, again.status) == (first.task_id, N.OK)
    assert nodes(workflow)["second"] == (N.OK, "end")


def test_a_rerun_passes_a_decision_again_overwriting_its_row_in_one_statement(
        tmp_path: Path, django_assert_max_num_queries: Any) -> None:
    """A decision passed again (a rerun) takes the new way: its row overwritten (INSERT ... ON CONFLICT), no read first."""
    from kernel.models import StatusRecord  # noqa: PLC0415 - the decision's history

    flag = tmp_path / "flag"
    directory = app(tmp_path, (
        f'<decision name="check"><switch><case to="end">${{fs:exists("file://{flag}")}}</case>'
        '<default to="fail"/></switch></decision>'
    ), start="check")
    workflow = submit(directory)
    workflow.refresh_from_db()
    assert workflow.status == W.KILLED and nodes(workflow)["check"] == (N.OK, "fail")
    flag.touch()
    request_rerun(workflow.id, {}, check=lambda _: None)
    run_pending_commands()
    workflow.refresh_from_db()
    assert (workflow.status, workflow.run) == (W.SUCCEEDED, 1)
    assert nodes(workflow)["check"] == (N.OK, "end") and nodes(workflow)["end"] == (N.OK, "")
    check = WorkflowNode.objects.get(workflow=workflow, name="check")
    assert StatusRecord.objects.filter(object_id=check.pk).count() == 0  # OK both times: nothing moved
    # Passing it once more (as the engine does, the job's row held) is one statement.
    from workflows.engine import _control  # noqa: PLC0415 - the write itself

    with transaction.atomic():
        locked = WorkflowJob.objects.select_for_update().get(pk=workflow.pk)
        with django_assert_max_num_queries(1):
            _control(locked, "check", "decision", timezone.now(), transition="fail")
        assert nodes(workflow)["check"] == (N.OK, "fail")
        transaction.set_rollback(True)


def test_a_report_from_before_a_rerun_cannot_end_the_reruns_node(tmp_path: Path) -> None:
    """A rerun starts its nodes at attempt 1 again: a worker still running the killed run's attempt 1 is fenced by its claim's start."""
    directory = app(tmp_path, celery("a", "examples.noop_any", ok="end"))
    workflow = submit(directory)
    node_id = f"{workflow.id}@a"
    stale = claim(node_id, 1, "w1")
    assert stale is not None
    assert request_control(workflow.id, "kill", check=lambda _: None)
    run_pending_commands()
    request_rerun(workflow.id, {}, check=lambda _: None)
    run_pending_commands()
    rerun_node = WorkflowNode.objects.get(pk=node_id)
    assert (rerun_node.status, rerun_node.attempt) == (N.PREP, 1)  # the same (node, attempt) as the stale run
    fresh = claim(node_id, 1, "w2")
    assert fresh is not None and fresh.started_at != stale.started_at
    assert record(node_id, 1, Outcome(N.ERROR, "E1", "from the killed run"), claimed=stale) == "fenced"
    assert WorkflowNode.objects.get(pk=node_id).status == N.RUNNING
    assert record(node_id, 1, Outcome(N.OK), claimed=fresh) == N.OK
    workflow.refresh_from_db()
    assert (workflow.status, workflow.run, nodes(workflow)["a"]) == (W.SUCCEEDED, 1, (N.OK, "end"))


def test_rerun_refuses_what_cannot_be_skipped_and_changes_nothing(tmp_path: Path) -> None:
    """Skipping a node that did not succeed, or rerunning a running job: one-line errors, nothing queued."""
    directory = app(tmp_path, celery("only", "examples.fail_unless", str(tmp_path / "x"), ok="end"))
    workflow = submit(directory)
    with pytest.raises(WorkflowError, match="only an ended job can be rerun"):
        request_rerun(workflow.id, {}, check=lambda _: None)
    drive()
    with pytest.raises(WorkflowError, match="did not end OK"):
        request_rerun(workflow.id, {"oozie.wf.rerun.skip.nodes": "only"}, check=lambda _: None)
    with pytest.raises(WorkflowError, match="no such node"):
        request_rerun(workflow.id, {"oozie.wf.rerun.skip.nodes": "ghost"}, check=lambda _: None)
    workflow.refresh_from_db()
    assert (workflow.status, workflow.run) == (W.KILLED, 0)
    assert run_pending_commands() == 0


def test_suspend_holds_a_transition_and_resume_takes_it(tmp_path: Path) -> None:
    """A node that ends while the job is SUSPENDED is recorded; its transition waits for resume."""
    directory = app(tmp_path, celery("a", "examples.noop_any", ok="b") + celery("b", "examples.noop_any", ok="end"))
    workflow = submit(directory)
    node = WorkflowNode.objects.get(workflow=workflow, name="a")
    assert claim(node.pk, node.attempt, "w") is not None
    assert request_control(workflow.id, "suspend", check=lambda _: None)
    run_pending_commands()
    assert record(node.pk, node.attempt, Outcome(N.OK)) == N.OK
    assert "b" not in nodes(workflow)
    assert request_control(workflow.id, "resume", check=lambda _: None)
    run_pending_commands()
    drive()
    workflow.refresh_from_db()
    assert workflow.status == W.SUCCEEDED and nodes(workflow)["a"] == (N.OK, "b")


def test_a_report_takes_an_ok_transition_and_counts_the_join_only_while_the_job_runs(tmp_path: Path) -> None:
    """The worker's report stores the transition and the join's count in its batch; a suspended job holds both."""
    workflow = submit(_three_way_fork(tmp_path))
    claimed = {name: claim(f"{workflow.id}@{name}", 1, "w") for name in ("a", "b")}
    assert all(claimed.values())
    assert record(f"{workflow.id}@a", 1, Outcome(N.OK), claimed=claimed["a"]) == N.OK
    assert nodes(workflow)["a"] == (N.OK, "join")
    assert WorkflowNode.objects.get(workflow=workflow, name="join").arrivals == 1
    assert request_control(workflow.id, "suspend", check=lambda _: None)
    run_pending_commands()
    assert record(f"{workflow.id}@b", 1, Outcome(N.OK), claimed=claimed["b"]) == N.OK
    assert nodes(workflow)["b"] == (N.OK, "")  # held: no transition, no arrival
    assert WorkflowNode.objects.get(workflow=workflow, name="join").arrivals == 1
    assert request_control(workflow.id, "resume", check=lambda _: None)
    run_pending_commands()
    assert nodes(workflow)["b"] == (N.OK, "join")
    assert WorkflowNode.objects.get(workflow=workflow, name="join").arrivals == 2
    assert drive() == 1  # c
    workflow.refresh_from_db()
    join = WorkflowNode.objects.get(workflow=workflow, name="join")
    assert (workflow.status, join.status, join.arrivals, join.transition) == (W.SUCCEEDED, N.OK, 3, "end")


def test_suspend_on_nodes_stops_before_the_named_node(tmp_path: Path) -> None:
    """oozie.suspend.on.nodes=b: SUSPENDED with b queued, not run; resume runs it."""
    directory = app(tmp_path, celery("a", "examples.noop_any", ok="b") + celery("b", "examples.noop_any", ok="end"))
    workflow = submit(directory, **{"oozie_suspend_on_nodes": "b"})
    drive()
    workflow.refresh_from_db()
    assert workflow.status == W.SUSPENDED and nodes(workflow)["b"][0] == N.PREP
    request_control(workflow.id, "resume", check=lambda _: None)
    run_pending_commands()
    drive()
    workflow.refresh_from_db()
    assert workflow.status == W.SUCCEEDED


def test_a_sub_workflow_runs_as_a_child_job_with_the_propagated_configuration(tmp_path: Path) -> None:
    """The child gets the parent's configuration; its end ends the parent's node; a failing child takes the error path."""
    child = app(tmp_path, celery("touch", "examples.touch", "${target}", ok="end"), name="child", wf_name="child")
    parent_dir = app(tmp_path, (
        f'<action name="sub"><sub-workflow><app-path>{child}</app-path><propagate-configuration/>'
        '</sub-workflow><ok to="end"/><error to="fail"/></action>'
    ), name="parent", wf_name="parent")
    target = tmp_path / "made-by-child"
    workflow = submit(parent_dir, target=str(target))
    drive()
    workflow.refresh_from_db()
    assert workflow.status == W.SUCCEEDED, workflow.error_message
    sub = WorkflowNode.objects.get(workflow=workflow, name="sub")
    kid = WorkflowJob.objects.get(pk=sub.external_id)
    assert (kid.parent_workflow_id, kid.status, sub.external_status) == (workflow.id, W.SUCCEEDED, W.SUCCEEDED)
    assert target.exists()


def test_killing_a_parent_kills_its_sub_workflow(tmp_path: Path) -> None:
    """Kill reaches down the tree."""
    child = app(tmp_path, celery("wait", "examples.noop_any", ok="end"), name="child2", wf_name="child")
    parent_dir = app(tmp_path, (
        f'<action name="sub"><sub-workflow><app-path>{child}</app-path></sub-workflow>'
        '<ok to="end"/><error to="fail"/></action>'
    ), name="parent2")
    workflow = submit(parent_dir)
    kid = WorkflowJob.objects.get(parent_workflow=workflow)
    request_control(workflow.id, "kill", check=lambda _: None)
    run_pending_commands()
    kid.refresh_from_db()
    workflow.refresh_from_db()
    assert (workflow.status, kid.status) == (W.KILLED, W.KILLED)
    assert drive() == 0


def test_a_decision_takes_the_first_true_case_or_the_default(tmp_path: Path) -> None:
    """The predicate reads the job's configuration through wf:conf."""
    directory = app(tmp_path, (
        '<decision name="d"><switch><case to="end">${wf:conf("flag") eq "yes"}</case>'
        '<default to="fail"/></switch></decision>'
    ))
    yes = submit(directory, flag="yes")
    no = submit(directory, flag="no")
    yes.refresh_from_db()
    no.refresh_from_db()
    assert (yes.status, no.status) == (W.SUCCEEDED, W.KILLED)
    assert nodes(yes)["d"] == (N.OK, "end") and nodes(no)["d"] == (N.OK, "fail")


def test_email_action_sends_through_django_mail(tmp_path: Path, settings: Any) -> None:
    """The email action uses Django's backend (locmem here)."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    directory = app(tmp_path, (
        '<action name="mail"><email xmlns="uri:oozie:email-action:0.2"><to>ops@example.com</to>'
        '<subject>workflow ${wf:id()}</subject><body>done by ${wf:user()}</body></email>'
        '<ok to="end"/><error to="fail"/></action>'
    ))
    workflow = submit(directory)
    drive()
    workflow.refresh_from_db()
    assert workflow.status == W.SUCCEEDED, workflow.error_message
    assert [(m.to, m.subject, m.body) for m in mail.outbox] == [
        (["ops@example.com"], f"workflow {workflow.id}", "done by wf-user")
    ]


def test_shell_capture_output_feeds_a_decision(tmp_path: Path, settings: Any) -> None:
    """A shell action's captured key=value output is wf:actionData, read by the next decision."""
    settings.WORKFLOW_SHELL_ENABLED = True
    directory = app(tmp_path, (
        '<action name="sh"><shell xmlns="uri:oozie:shell-action:1.0"><exec>/bin/sh</exec>'
        '<argument>-c</argument><argument>echo rows=42</argument><capture-output/></shell>'
        '<ok to="d"/><error to="fail"/></action>'
        '<decision name="d"><switch><case to="end">${wf:actionData("sh")["rows"] gt 40}</case>'
        '<default to="fail"/></switch></decision>'
    ))
    workflow = submit(directory)
    drive()
    workflow.refresh_from_db()
    assert workflow.status == W.SUCCEEDED, workflow.error_message
    assert WorkflowNode.objects.get(workflow=workflow, name="sh").data == {"rows": "42"}


def test_a_coordinator_action_runs_a_workflow_application(tmp_path: Path) -> None:
    """An action's app-path naming a workflow directory launches it with the action's configuration."""
    directory = app(tmp_path, celery("t", "examples.touch", "${out}/${wf:id()}", ok="end"))
    xml = f"""<coordinator-app name="c" frequency="${{coord:minutes(1)}}" start="{minute(-2)}" end="{minute(-1)}"
        timezone="UTC" xmlns="uri:oozie:coordinator:0.4"><action><workflow><app-path>{directory}</app-path>
        <configuration><property><name>out</name><value>{tmp_path}/out</value></property></configuration>
        </workflow></action></coordinator-app>"""
    job = submit_coordinator(xml, {}, owner=owner(), trusted=True)
    run_pending_commands()
    input_checks()
    run_pending_commands()
    drive()
    run_pending_commands()
    action = job.actions.get(number=1)
    assert action.status == ActionStatus.SUCCEEDED, action.error_message
    workflow = WorkflowJob.objects.get(pk=action.external_id)
    assert workflow.coord_action_id == action.id and (tmp_path / "out" / workflow.id).exists()


def test_a_coordinator_naming_a_missing_or_bad_application_is_refused(tmp_path: Path) -> None:
    """The workflow application is read and validated at coordinator submission; nothing is stored."""
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "workflow.xml").write_text(f'<workflow-app name="x" {WF}><start to="nowhere"/><end name="end"/></workflow-app>')
    for path, words in ((tmp_path / "none", "no such directory"), (bad, "nowhere")):
        xml = f"""<coordinator-app name="c" frequency="60" start="{minute(-2)}" end="{minute(60)}" timezone="UTC"
            xmlns="uri:oozie:coordinator:0.4"><action><workflow><app-path>{path}</app-path></workflow></action>
            </coordinator-app>"""
        with pytest.raises(DefinitionError, match=words):
            submit_coordinator(xml, {}, owner=owner(), trusted=True)
    assert not CoordinatorJob.objects.exists()


@pytest.mark.parametrize("verb", ["run", "submit"])
def test_the_cli_runs_or_submits_a_workflow_and_reports_it(tmp_path: Path, verb: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """manage.py job -run|-submit -config job.properties with oozie.wf.application.path; -info and -start."""
    owner()
    directory = app(tmp_path, celery("t", "examples.noop_any", ok="end"))
    config = tmp_path / "job.properties"
    config.write_text(f"oozie.wf.application.path={directory.name}\n")
    call_command("job", f"-{verb}", "-config", str(config), "-user", "wf-user")
    job_id = capsys.readouterr().out.strip().removeprefix("job: ")
    workflow = WorkflowJob.objects.get(pk=job_id)
    assert workflow.status == (W.RUNNING if verb == "run" else W.PREP)
    if verb == "submit":
        call_command("job", "-start", job_id, "-user", "wf-user")
        run_pending_commands()
    drive()
    call_command("job", "-info", job_id, "-user", "wf-user")
    out = capsys.readouterr().out
    assert "Status        : SUCCEEDED" in out and f"{job_id}@t" in out


def test_a_bad_application_is_refused_by_the_cli_with_one_line_and_nothing_stored(tmp_path: Path) -> None:
    """A Hadoop action is refused at submission, naming the node."""
    owner()
    directory = tmp_path / "hadoop"
    directory.mkdir()
    (directory / "workflow.xml").write_text(
        f'<workflow-app name="h" {WF}><start to="mr"/><action name="mr"><map-reduce>'
        '<resource-manager>rm</resource-manager><name-node>nn</name-node></map-reduce>'
        '<ok to="end"/><error to="end"/></action><end name="end"/></workflow-app>'
    )
    config = tmp_path / "job.properties"
    config.write_text(f"oozie.wf.application.path={directory}\n")
    with pytest.raises(CommandError) as raised:
        call_command("job", "-run", "-config", str(config), "-user", "wf-user")
    assert "mr" in str(raised.value) and "\n" not in str(raised.value)
    assert not WorkflowJob.objects.exists()



def test_an_el_error_when_entering_a_node_fails_the_job_naming_it(tmp_path: Path) -> None:
    """A predicate that cannot be evaluated (a number compared with text): FAILED, EL_ERROR, the node named."""
    directory = app(tmp_path, (
        '<decision name="d"><switch><case to="end">${wf:conf("size") gt 3}</case>'
        '<default to="fail"/></switch></decision>'
    ))
    workflow = submit(directory, size="large")
    workflow.refresh_from_db()
    assert (workflow.status, workflow.error_code) == (W.FAILED, "EL_ERROR")
    assert workflow.error_message.startswith("node d:")


def test_notifications_name_the_job_its_status_and_each_node_transition(tmp_path: Path, settings: Any,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Spec 5: a GET per job status change and per node start and end, tokens replaced, sent after commit."""
    settings.OUTBOUND_ALLOWED_HOSTS = ["hooks.example"]  # only listed hosts are notified (kernel.outbound)
    sent: list[str] = []
    monkeypatch.setattr(notifications, "_send", sent.append)
    directory = app(tmp_path, celery("a", "examples.noop_any", ok="end"))
    workflow = submit(directory, **{
        "oozie_wf_workflow_notification_url": "http://hooks.example/job?id=$jobId&s=$status&p=$parentId",
        "oozie_wf_action_notification_url": "http://hooks.example/node?id=$jobId&n=$nodeName&s=$status",
    })
    drive()
    assert sent == [
        f"http://hooks.example/job?id={workflow.id}&s=RUNNING&p=",
        f"http://hooks.example/node?id={workflow.id}&n=a&s=S:RUNNING",
        f"http://hooks.example/node?id={workflow.id}&n=a&s=T:end",
        f"http://hooks.example/job?id={workflow.id}&s=SUCCEEDED&p=",
    ]


def test_a_notification_is_an_http_get_retried_until_it_is_answered(settings: Any) -> None:
    """The notify task calls the URL (a real local server); a refused connection is retried, then given up."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            seen.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    settings.OUTBOUND_ALLOWED_HOSTS = [f"127.0.0.1:{server.server_port}"]  # loopback: listed by address
    try:
        url = f"http://127.0.0.1:{server.server_port}/job?id=1-W&s=SUCCEEDED"
        assert notify.apply(args=(url,)).get() == 200
        assert seen == ["/job?id=1-W&s=SUCCEEDED"]
    finally:
        server.shutdown()
        server.server_close()
    settings.WORKFLOW_NOTIFICATION_RETRIES = 1
    settings.WORKFLOW_NOTIFICATION_RETRY_SECONDS = 0
    result = notify.apply(args=(url,))  # nobody listens any more: retried once, then given up
    assert result.get() == 0 and seen == ["/job?id=1-W&s=SUCCEEDED"]


def test_a_long_chain_of_control_nodes_is_walked_without_recursion(tmp_path: Path) -> None:
    """600 decisions in a row (deeper than Python's recursion limit allowed before) reach the end in one walk."""
    chain = "".join(
        f'<decision name="d{i}"><switch><case to="d{i + 1}">${{wf:conf("go") eq "yes"}}</case>'
        f'<default to="fail"/></switch></decision>'
        for i in range(600)
    ).replace('to="d600"', 'to="end"')
    workflow = submit(app(tmp_path, chain), go="yes")
    workflow.refresh_from_db()
    assert workflow.status == W.SUCCEEDED, workflow.error_message
    assert WorkflowNode.objects.filter(workflow=workflow).count() == 602  # :start:, 600 decisions, end


def test_suspend_on_a_node_in_one_fork_path_still_queues_the_other_path(tmp_path: Path) -> None:
    """The job suspends before `a`; `b` (the other path) is queued too, and resume runs both to the join."""
    directory = app(tmp_path, (
        '<fork name="fork"><path start="a"/><path start="b"/></fork>'
        + celery("a", "examples.noop_any", ok="join") + celery("b", "examples.noop_any", ok="join")
        + '<join name="join" to="end"/>'
    ), start="fork")
    workflow = submit(directory, **{"oozie_suspend_on_nodes": "a"})
    workflow.refresh_from_db()
    assert workflow.status == W.SUSPENDED
    assert {nodes(workflow)["a"][0], nodes(workflow)["b"][0]} == {N.PREP}
    assert drive() == 0  # nothing is claimed while suspended
    request_control(workflow.id, "resume", check=lambda _: None)
    run_pending_commands()
    assert drive() == 2
    workflow.refresh_from_db()
    assert workflow.status == W.SUCCEEDED
