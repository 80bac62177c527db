"""The worker side of a node: claim it, run its task under a lease, record the outcome durably.

1. Claim: a compare-and-set PREP -> RUNNING on (node, attempt). A duplicate or stale message
   (sent again after a Redis loss, redelivered after a worker died) matches nothing and is
   dropped without running anything.
2. Run: the node's Celery task is called in this process while the heartbeat thread renews
   the lease; if this worker dies or stalls past the lease, recovery launches the node again.
3. Record: the outcome, the workflow's end and the parent's report (a command) commit in one
   transaction, conditional on still holding the attempt: the node, its attempt and the time
   this claim started it (a rerun numbers a node's attempts from 1 again, so a worker still
   running the killed run's attempt must not end the rerun's). Database errors are retried with
   backoff; the broker is never involved, so a Redis outage cannot turn a finished task into
   a failure.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from celery import current_app as app  # project.celery's app, set up by this process
from django.contrib.auth import get_user_model
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from kernel import processes, sqlbatch, task_registry, tries, user_tasks
from kernel.capture import Capture, capturing, note_exception
from kernel.history import acting_as, current_actor
from kernel.models import TaskTry
from kernel.secrets import masker
from workflows import notifications, parents
from workflows.actions import ActionContext, execute
from workflows.choices import WORKFLOW_OF_NODE, NodeStatus, WorkflowStatus
from workflows.engine import control_fields, foreseen_transition
from workflows.engine import node_ended as engine_node_ended
from workflows.launch import relaunch
from workflows.leases import NODE_LEASE
from workflows.models import WorkflowJob, WorkflowNode
from workflows.outcomes import MAX_ERROR_CHARS, Outcome, end_workflow, store_end
from workflows.settings import is_transient, lease_seconds, report_retry_seconds
from xcommands.heartbeat import lease

log = logging.getLogger(__name__)

T = TypeVar("T")


def identity(hostname: str = "") -> str:
    """Who runs a node: the Celery node name (as Flower names the worker; else this process's) and its pid."""
    return f"{hostname or processes.node_name()}:{os.getpid()}"


CLAIM_RETRY_SECONDS = 30.0

_current = threading.local()


def current_run() -> tuple[str, int] | None:
    """The (node id, attempt) this thread is running, for tasks that want to say who ran them."""
    return getattr(_current, "run", None)


def run_node(node_id: str, attempt: int, hostname: str = "") -> str:
    """Claim, run and record one attempt of a node; what happened, in a word, for the task's result."""
    return run_attempt(node_id, attempt, hostname)[0]


def run_attempt(node_id: str, attempt: int, hostname: str = "") -> tuple[str, str]:
    """Claim, run and record one attempt of a node: what happened in a word, and its error as the node's
    page shows it (secrets masked; empty when it did not fail)."""
    worker = identity(hostname)
    with acting_as(f"worker {worker}"):  # the status changes of the claim and the report (kernel.history)
        return _run_attempt(node_id, attempt, worker)


def _run_attempt(node_id: str, attempt: int, worker: str) -> tuple[str, str]:
    node = _retrying(lambda: claim(node_id, attempt, worker), f"node {node_id} attempt {attempt}: claim",
                     CLAIM_RETRY_SECONDS)
    if node is None:
        return "skipped", ""
    workflow = node.workflow
    _current.run = (node.id, attempt)
    try:
        # The lease is renewed from the claim on: nothing before the task may let it lapse.
        with lease(NODE_LEASE, node.id, attempt), capturing() as capture:
            _report_started(workflow, node)
            outcome = invoke_action(node, worker) if workflow.definition else invoke(node.task_name, workflow, worker)
    finally:
        _current.run = None
    result = record(node_id, attempt, outcome, capture, claimed=node)
    if result not in (NodeStatus.ERROR, NodeStatus.FAILED):
        return result, ""
    shown = masker(*workflow.secret_sources()).text(f"{outcome.error_code}: {outcome.error_message}")
    return result, shown


def _report_started(workflow: WorkflowJob, node: WorkflowNode) -> None:
    """A workflow application's start notification for the node (the parent heard of the start in the claim).

    The claim has committed: the notification is sent now (no transaction, no database; a
    broker that is down drops it, as every notification).
    """
    if workflow.definition:
        notifications.node_changed(workflow, node.name, status=NodeStatus.RUNNING)


def _retrying(step: Callable[[], T], what: str, seconds: float) -> T:
    """Run a database step, retrying errors (a restarting server) with backoff for up to `seconds`."""
    delay, deadline = 0.2, time.monotonic() + seconds
    while True:
        try:
            return step()
        except DatabaseError as exc:
            if time.monotonic() >= deadline:
                raise
            log.warning("%s failed (%s); retrying in %.1f s", what, exc, delay)
            with contextlib.suppress(DatabaseError):
                connection.close()  # a restarted server: the next try reconnects
            time.sleep(delay)
            delay = min(delay * 2, 10.0)


#: The claim: PREP -> RUNNING on (node, attempt) while its workflow runs, with the lease and the start time.
CLAIM = (
    "UPDATE workflows_workflownode SET status = 'RUNNING', worker = %(worker)s, lease_expires_at = %(lease)s,"
    " started_at = %(now)s, ended_at = NULL"
    " WHERE id = %(node)s AND attempt = %(attempt)s AND status = 'PREP' AND EXISTS ("
    "SELECT 1 FROM workflows_workflowjob w WHERE w.id = workflows_workflownode.workflow_id AND w.status = 'RUNNING')"
)
#: Its line in the status history (kernel.history), written only if the claim took the node.
CLAIM_RECORD = (
    "INSERT INTO kernel_statusrecord (kind, object_id, parent_id, from_status, to_status, at, by, reason)"
    " SELECT 'node', %(node)s, %(workflow)s, 'PREP', 'RUNNING', %(now)s, %(by)s, %(reason)s WHERE " + parents.CLAIMED
)


def claim(node_id: str, attempt: int, worker: str) -> WorkflowNode | None:
    """Take the node's lease if this attempt is still waiting to run; None for a stale or duplicate message.

    One batch (kernel.sqlbatch: one round trip and one transaction on PostgreSQL): the claim, its
    history line and the parents' start (the action SUBMITTED -> RUNNING), each acting only if
    the claim took the node, and the node read with its workflow.
    """
    now = timezone.now()
    params = {
        "node": node_id, "attempt": attempt, "worker": worker, "now": now, "workflow": node_id.rpartition("@")[0],
        "lease": now + timedelta(seconds=lease_seconds()), "by": current_actor()[:200],
        "reason": f"attempt {attempt} on {worker}",
    }
    user = get_user_model()
    read = (
        f"SELECT {parents.CLAIMED}, {sqlbatch.columns(WorkflowNode, 'n')}, {sqlbatch.columns(WorkflowJob, 'w')},"  # noqa: S608 - constant SQL
        f" {sqlbatch.columns(user, 'u')} FROM workflows_workflownode n JOIN workflows_workflowjob w ON w.id = n.workflow_id"
        f" LEFT JOIN {connection.ops.quote_name(user._meta.db_table)} u ON u.{connection.ops.quote_name(str(user._meta.pk.column))}"
        " = w.owner_id WHERE n.id = %(node)s"
    )
    rows = sqlbatch.run([CLAIM, CLAIM_RECORD, *parents.start_statements(), read], params)[-1]
    taken = bool(rows and rows[0][0])
    node = None
    if rows:
        # The node, its workflow and the workflow's owner (the action runs as its user): nothing read again.
        width, job = len(WorkflowNode._meta.concrete_fields), len(WorkflowJob._meta.concrete_fields)
        node = sqlbatch.load(WorkflowNode, rows[0][1:1 + width])
        node.workflow = sqlbatch.load(WorkflowJob, rows[0][1 + width:1 + width + job])
        if node.workflow.owner_id is not None:
            node.workflow.owner = sqlbatch.load(user, rows[0][1 + width + job:])
    if not taken:
        if node is not None and _owner_died_here(node, attempt, worker, now):
            return None
        seen = "is gone" if node is None else f"is {node.status} on attempt {node.attempt}"
        if node is not None and node.workflow.status != WorkflowStatus.RUNNING:
            seen += f", its workflow {node.workflow.status}"
        log.info("node %s attempt %s not run: the node %s (a duplicate or stale message)", node_id, attempt, seen)
        return None
    return node


def _owner_died_here(node: WorkflowNode, attempt: int, worker: str, now: Any) -> bool:
    """This attempt's message came back (Celery requeues a message whose pool process died) and its owner is dead.

    The owner is a process of this worker (same Celery node name: the same pid namespace) that
    no longer exists: the lease is given up now and recovery rung, so the node runs again within
    seconds instead of after its lease. An owner still alive, or on another worker, keeps it.
    """
    if node.status != NodeStatus.RUNNING or node.attempt != attempt or not node.worker:
        return False
    pid = processes.owner_pid(node.worker, worker.rpartition(":")[0])
    if pid is None or not processes.is_gone(pid):
        return False
    given_up = WorkflowNode.objects.filter(
        pk=node.pk, attempt=attempt, status=NodeStatus.RUNNING, worker=node.worker,
    ).update(lease_expires_at=now - timedelta(microseconds=1))
    if given_up:
        log.warning("node %s attempt %s: its process %s died; lease given up, relaunching now", node.pk, attempt,
                    node.worker)

        app.send_task("workflows.service.recover", ignore_result=True)
    return bool(given_up)


def invoke(task_name: str, workflow: WorkflowJob, worker: str) -> Outcome:
    """Call the node's Celery task in this process: OK, or ERROR with the exception's one-line text."""

    if reason := user_tasks.refusal(task_name):  # checked at submission; again here, where it would run
        return Outcome(NodeStatus.FAILED, "E0TASK", reason)
    task = task_registry.tasks(app).get(task_name)
    if task is None:
        return Outcome(NodeStatus.FAILED, "E0TASK", f"no Celery task named {task_name!r} is registered in worker {worker}")
    nominal = workflow.nominal_time.isoformat() if workflow.nominal_time else ""
    try:
        task(configuration=dict(workflow.configuration), nominal_time=nominal)
    except Exception as exc:  # the task's own failure, or an infrastructure error it met
        note_exception(exc)
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return Outcome(NodeStatus.ERROR, type(exc).__name__[:64], text[:MAX_ERROR_CHARS], transient=is_transient(exc))
    return Outcome(NodeStatus.OK)


def invoke_action(node: WorkflowNode, worker: str) -> Outcome:
    """Run an action node of a workflow application (fs, shell, email, celery) with its launched spec."""
    workflow = node.workflow
    # The job's configuration with the action's own (`<global>` under `<configuration>`) over it.
    configuration = {**workflow.configuration, **{str(k): str(v) for k, v in (node.spec.get("configuration") or {}).items()}}
    context = ActionContext(
        workflow_id=workflow.id, node_name=node.name, configuration=configuration,
        user=workflow.owner.get_username() if workflow.owner_id and workflow.owner else "",
        nominal_time=workflow.nominal_time.isoformat() if workflow.nominal_time else "",
    )
    try:
        result = execute(node.type, dict(node.spec), context)
    except Exception as exc:  # an executor's own bug must not lose the node: it ERRORs, named
        note_exception(exc)
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        log.exception("node %s: the %s executor raised", node.id, node.type)
        return Outcome(NodeStatus.ERROR, type(exc).__name__[:64], text[:MAX_ERROR_CHARS], transient=is_transient(exc))
    return Outcome(
        result.status, result.error_code[:64], result.error_message[:MAX_ERROR_CHARS], transient=result.transient,
        data=dict(result.data) or None, external_id=result.external_id[:255], external_status=result.external_status[:64],
    )


def record(node_id: str, attempt: int, outcome: Outcome, capture: Capture | None = None, *,
           claimed: WorkflowNode | None = None) -> str:
    """Write the outcome while this attempt still holds the node, retrying database errors with backoff.

    `claimed`: the node as this worker's claim read it; a one-node (`task:`) run's usual end is
    then written by `_record_fast`, in one batch of statements.

    Gives up after WORKFLOW_REPORT_RETRY_SECONDS (the lease then lapses and the node runs
    again: at-least-once). A node that moved meanwhile (killed, or launched again after this
    worker was taken for lost) keeps its state: this outcome is discarded and logged.
    """
    try:
        return _retrying(lambda: _record_once(node_id, attempt, outcome, capture, claimed),
                         f"node {node_id} attempt {attempt}: recording {outcome.status}", report_retry_seconds())
    except DatabaseError as exc:
        log.error("node %s attempt %s: outcome %s not recorded, giving up: %s; the node will run again",
                  node_id, attempt, outcome.status, exc)
        return "unrecorded"


#: The end of a claimed node (fenced on its attempt, as `_record_once`), the history line and the try; see `_record_fast`.
END_NODE = (
    "UPDATE workflows_workflownode SET status = %(status)s, ended_at = %(now)s, lease_expires_at = NULL,"
    " error_code = %(error_code)s, error_message = %(error_message)s, history = {history}, data = {data},"
    " external_id = %(external_id)s, external_status = %(external_status)s"
    " WHERE id = %(node)s AND attempt = %(attempt)s AND status = 'RUNNING' AND started_at = %(started)s"
)
NODE_ENDED = (
    "EXISTS (SELECT 1 FROM workflows_workflownode WHERE id = %(node)s AND status = %(status)s AND ended_at = %(now)s)"
)
END_NODE_RECORD = (
    "INSERT INTO kernel_statusrecord (kind, object_id, parent_id, from_status, to_status, at, by, reason)"
    " SELECT 'node', %(node)s, %(workflow)s, 'RUNNING', %(status)s, %(now)s, %(by)s, %(reason)s WHERE " + NODE_ENDED
)
END_WORKFLOW = (
    "UPDATE workflows_workflowjob SET status = %(workflow_status)s, ended_at = %(now)s, last_modified = %(now)s,"  # noqa: S608 - constant SQL
    " error_code = %(error_code)s, error_message = %(error_message)s"
    " WHERE id = %(workflow)s AND status = 'RUNNING' AND " + NODE_ENDED
)
END_WORKFLOW_RECORD = (
    "INSERT INTO kernel_statusrecord (kind, object_id, parent_id, from_status, to_status, at, by, reason)"
    " SELECT 'workflow', %(workflow)s, %(parent)s, 'RUNNING', %(workflow_status)s, %(now)s, %(by)s, %(reason)s"
    " WHERE " + parents.ENDED
)
STORE_TRY = (
    "INSERT INTO kernel_tasktry (kind, object_id, job_id, action_id, root_id, name, run, attempt, worker, status,"
    " started_at, ended_at, error_code, error_message, traceback, log, log_dropped)"
    " SELECT 'node', %(node)s, %(workflow)s, %(action)s, %(root)s, %(name)s, %(run)s, %(attempt)s, %(worker)s,"
    " %(status)s, %(started)s, %(now)s, %(error_code)s, %(error_message)s, %(traceback)s, %(log)s, %(log_dropped)s"
    " WHERE " + NODE_ENDED
)


#: An OK node's foreseen transition (`engine.foreseen_transition`), stored with its end while its workflow runs.
TAKE_TRANSITION = (
    "UPDATE workflows_workflownode SET transition = %(target)s"
    " WHERE id = %(node)s AND status = %(status)s AND ended_at = %(now)s AND EXISTS ("
    "SELECT 1 FROM workflows_workflowjob WHERE id = %(workflow)s AND status = 'RUNNING') RETURNING id"
)
#: Its arrival at the join it leads to, if that join waits (RUNNING): the new count, and the join
#: passed (OK, its transition taken) when this was the last of its paths. SET's right-hand sides
#: read the row as it was.
ARRIVE_AT_JOIN = (
    "UPDATE workflows_workflownode SET arrivals = arrivals + 1, started_at = %(now)s,"
    " status = CASE WHEN arrivals + 1 >= %(paths)s THEN 'OK' ELSE status END,"
    " transition = CASE WHEN arrivals + 1 >= %(paths)s THEN %(join_to)s ELSE transition END,"
    " ended_at = CASE WHEN arrivals + 1 >= %(paths)s THEN %(now)s ELSE ended_at END"
    " WHERE id = %(join)s AND status = 'RUNNING' AND EXISTS ("
    "SELECT 1 FROM workflows_workflownode WHERE id = %(node)s AND transition = %(target)s AND ended_at = %(now)s)"
    " RETURNING arrivals, status"
)
#: The pass's line in the status history, written only if this report's arrival passed the join.
JOIN_PASSED_RECORD = (
    "INSERT INTO kernel_statusrecord (kind, object_id, parent_id, from_status, to_status, at, by, reason)"
    " SELECT 'node', %(join)s, %(workflow)s, 'RUNNING', 'OK', %(now)s, %(by)s, '' WHERE EXISTS ("
    "SELECT 1 FROM workflows_workflownode WHERE id = %(join)s AND status = 'OK' AND ended_at = %(now)s"
    " AND transition = %(join_to)s) AND EXISTS ("
    "SELECT 1 FROM workflows_workflownode WHERE id = %(node)s AND transition = %(target)s AND ended_at = %(now)s)"
)


def _first_arrival(workflow: WorkflowJob, join: str, now: Any) -> tuple[str, dict[str, Any]]:
    """The statement creating the join as its first arrival does (RUNNING, one arrival), and its parameters.

    It acts only if the join has no row at all (a join ended by an earlier pass keeps its row:
    the engine resets it) and the transition to it was stored by this report. The job's row is
    locked: no other writer can create the join meanwhile.
    """
    return sqlbatch.insert_select(
        WorkflowNode, {**control_fields(join, "join", now, status=NodeStatus.RUNNING, arrivals=1),
                       "id": f"{workflow.id}@{join}", "workflow_id": workflow.id},
        "NOT EXISTS (SELECT 1 FROM workflows_workflownode WHERE id = %(join)s) AND EXISTS ("
        "SELECT 1 FROM workflows_workflownode WHERE id = %(node)s AND transition = %(target)s AND ended_at = %(now)s)",
        returning="arrivals",
    )


def _record_fast(node: WorkflowNode, outcome: Outcome, capture: Capture | None, now: Any) -> str | None:
    """A claimed node's end as `_record_once` writes it, in one batch; None where that path must decide.

    In one transaction (on PostgreSQL: BEGIN, one round trip of statements, COMMIT instead of a
    dozen ORM statements): the workflow row locked first (the order every writer takes), the node
    ended if this attempt still holds it, its history line and its try. A one-node (`task:`) run
    then ends its workflow if it still runs (a SUSPENDED one keeps its status until resume, as in
    `end_node`) and runs the parents' statements (the action settled), each acting only if the one
    before did, and the parents' Python; a workflow application's node takes its transition
    (`engine.node_ended`), as `end_node` does. A fenced node changed nothing: None, and
    `_record_once` tells why and keeps the try as DISCARDED; so does a transient error to retry.
    """
    workflow = node.workflow
    one_node = not workflow.definition
    parent_statements = parents.end_statements() if one_node else []
    if parent_statements is None or (outcome.transient and node.attempt < node.max_attempts):
        return None
    workflow_status = WORKFLOW_OF_NODE[outcome.status]
    error = " ".join(part for part in (outcome.error_code, outcome.error_message) if part)
    action_id = workflow.coord_action_id or ""
    history = [*node.history, {
        "attempt": node.attempt, "worker": node.worker,
        "started": node.started_at.isoformat(timespec="milliseconds") if node.started_at else None,
        "ended": now.isoformat(timespec="milliseconds"), "outcome": outcome.status,
        **({"error": outcome.error_message[:500]} if outcome.error_message else {}),
    }]
    data = outcome.data if outcome.data is not None else node.data
    external = ((outcome.external_id, outcome.external_status) if outcome.external_id or outcome.external_status
                else (node.external_id, node.external_status))
    params = {
        "node": node.id, "workflow": workflow.id, "attempt": node.attempt, "status": outcome.status, "now": now,
        "workflow_status": workflow_status, "error_code": outcome.error_code, "error_message": outcome.error_message,
        "history": sqlbatch.json_value(history), "data": sqlbatch.json_value(data), "external_id": external[0],
        "external_status": external[1], "by": current_actor()[:200], "reason": error,
        "parent": workflow.coord_action_id or workflow.parent_workflow_id or "", "action": action_id[:60],
        "root": (action_id.partition("@")[0] if action_id else workflow.id)[:200], "name": node.name[:200],
        "run": workflow.run, "worker": node.worker[:200], "started": node.started_at,
        "traceback": capture.traceback if capture is not None else "", "log": capture.text() if capture is not None else "",
        "log_dropped": capture.dropped if capture is not None else 0,
    }
    ours = [
        f"SELECT {sqlbatch.columns(WorkflowJob, 'w')} FROM workflows_workflowjob w WHERE w.id = %(workflow)s"  # noqa: S608 - constant SQL
        + sqlbatch.for_update(),
        END_NODE.format(history=sqlbatch.json_param("history"), data=sqlbatch.json_param("data")), END_NODE_RECORD,
        *((END_WORKFLOW, END_WORKFLOW_RECORD) if one_node else ()), STORE_TRY, f"SELECT {NODE_ENDED}, {parents.ENDED}",
    ]
    # An application's OK node: its transition and its join's count go in the same batch.
    foreseen = None if one_node else foreseen_transition(workflow, node.name, outcome.status)
    taking: list[str] = []
    if foreseen is not None:
        params["target"], params["join"] = foreseen.target, f"{workflow.id}@{foreseen.target}"
        taking = [TAKE_TRANSITION]
        if foreseen.join_paths:
            first, row = _first_arrival(workflow, foreseen.target, now)
            params.update(row, paths=foreseen.join_paths, join_to=foreseen.join_to)
            taking += [ARRIVE_AT_JOIN, JOIN_PASSED_RECORD, first]
    with transaction.atomic():
        rows = sqlbatch.run([*ours, *taking, *(statement for statements, _ in parent_statements for statement in statements)],
                            params)
        node_ended, workflow_ended = (bool(flag) for flag in rows[len(ours) - 1][0])
        if not node_ended:
            return None
        node.status, node.ended_at, node.lease_expires_at, node.history = outcome.status, now, None, history
        node.error_code, node.error_message, node.data = outcome.error_code, outcome.error_message, data
        node.external_id, node.external_status = external
        node.status_stored()
        if not one_node:
            # The workflow row as the batch locked and read it: the node's transition, as `end_node` takes
            # it, minus what the batch already stored.
            taken: tuple[str, int | None] | None = None
            passed = False
            if foreseen is not None and rows[len(ours)]:
                # The join's count: a waiting join counted (passed by its last path), or the join created
                # by this first arrival (0: neither).
                taken = (foreseen.target, None)
                if foreseen.join_paths:
                    arrival, created = rows[len(ours) + 1], rows[len(ours) + 3]
                    taken = (foreseen.target, (arrival or created)[0][0] if arrival or created else 0)
                    passed = bool(arrival) and arrival[0][1] == NodeStatus.OK
            locked = sqlbatch.load(WorkflowJob, rows[0][0]) if rows[0] else None
            if locked is not None and locked.owner_id == workflow.owner_id and WorkflowJob.owner.is_cached(workflow):
                locked.owner = workflow.owner  # as the claim read it
            engine_node_ended(node, now, locked=locked, taken=taken, passed=passed)
            return outcome.status
        if not workflow_ended:
            log.info("node %s ended %s while workflow %s is SUSPENDED; its end waits for resume",
                     node.id, outcome.status, workflow.id)
            return outcome.status
        workflow.status, workflow.ended_at = workflow_status, now
        workflow.error_code, workflow.error_message = outcome.error_code, outcome.error_message
        workflow.status_stored()
        done = len(ours)
        for statements, after in parent_statements:
            after(workflow, node, rows[done:done + len(statements)])
            done += len(statements)
    return outcome.status


def _record_once(node_id: str, attempt: int, outcome: Outcome, capture: Capture | None,
                 claimed: WorkflowNode | None = None) -> str:
    now = timezone.now()
    if claimed is not None and claimed.attempt == attempt:
        fast = _record_fast(claimed, outcome, capture, now)
        if fast is not None:
            return fast
    with transaction.atomic():
        # The workflow row first, then the node: the order every writer of a workflow's nodes
        # takes (verbs, the DAG's transitions), so two of them never wait for each other.
        # A node's id is `<workflow id>@<name>`: the row is locked without reading the node first.
        list(WorkflowJob.objects.select_for_update().filter(pk=node_id.partition("@")[0]).values_list("id", flat=True))
        held = WorkflowNode.objects.filter(pk=node_id, attempt=attempt, status=NodeStatus.RUNNING)
        if claimed is not None:  # this worker's own claim: the run it started, not a rerun's run of the same attempt
            held = held.filter(started_at=claimed.started_at)
        node = held.select_for_update(of=("self",)).select_related("workflow").first()
        if node is None:
            current = WorkflowNode.objects.filter(pk=node_id).values_list("status", "attempt").first()
            log.warning("node %s attempt %s: outcome %s discarded, the node is now %s", node_id, attempt,
                        outcome.status, f"{current[0]} on attempt {current[1]}" if current else "gone")
            if current is not None and capture is not None:
                # The try ran (its lease lapsed, or it was killed): its story is kept all the same.
                fenced = WorkflowNode.objects.select_related("workflow").get(pk=node_id)
                store_try(fenced, outcome, capture, now, attempt=attempt, status="DISCARDED", worker="")
            return "fenced"
        retry = outcome.transient and node.attempt < node.max_attempts
        store_try(node, outcome, capture, now, attempt=attempt, status="RETRY" if retry else outcome.status)
        node.history = [*node.history, {
            "attempt": attempt,
            "worker": node.worker,
            "started": node.started_at.isoformat(timespec="milliseconds") if node.started_at else None,
            "ended": now.isoformat(timespec="milliseconds"),
            "outcome": "RETRY" if retry else outcome.status,
            **({"error": outcome.error_message[:500]} if outcome.error_message else {}),
        }]
        if retry:
            # Recorded once the database answers again, so the next attempt meets a working one.
            log.warning("node %s attempt %s met a transient error (%s); launching attempt %s of %s",
                        node_id, attempt, outcome.error_code, attempt + 1, node.max_attempts)
            relaunch(node, now)
            return "retry"
        end_node(node, outcome, now, workflow_is_current=True)
        return outcome.status


def store_try(node: WorkflowNode, outcome: Outcome, capture: Capture | None, now: Any, *, attempt: int,
              status: str, worker: str | None = None) -> None:
    """Keep this try of the node (caller's transaction): how it ended, its traceback and log."""
    workflow = node.workflow
    tries.store(
        TaskTry.Kind.NODE, node.id, capture, status=status, ended_at=now, started_at=node.started_at,
        job_id=workflow.id, action_id=workflow.coord_action_id or "", name=node.name, run=workflow.run,
        attempt=attempt, worker=node.worker if worker is None else worker, error_code=outcome.error_code,
        error_message=outcome.error_message,
    )


def end_node(node: WorkflowNode, outcome: Outcome, now: Any, *, workflow_is_current: bool = False) -> None:
    """Store a node's end and its workflow's, and tell the parent (in the caller's transaction; rows locked).

    `workflow_is_current`: the caller read `node.workflow` after locking the workflow row (as
    `_record_once` does; every writer of its status takes that lock), so it is not read again.

    A SUSPENDED workflow keeps its status: the node's end is stored and `end_workflow` runs
    when it is resumed (Oozie holds a suspended workflow's transitions the same way).
    """
    store_end(node, outcome, now)
    if node.workflow.definition:  # a workflow application: the node's transition (workflows.engine)
        engine_node_ended(node, now)
        return
    if not workflow_is_current:
        # Read again, not from the join that locked the node: a suspend that committed while we
        # waited for the node's lock is seen here.
        node.workflow.status = WorkflowJob.objects.filter(pk=node.workflow_id).values_list("status", flat=True).get()
    if node.workflow.status == WorkflowStatus.SUSPENDED:
        log.info("node %s ended %s while workflow %s is SUSPENDED; its end waits for resume",
                 node.id, outcome.status, node.workflow_id)
        return
    end_workflow(node, now)
