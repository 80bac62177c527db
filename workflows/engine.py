"""Workflow applications on the runtime: entering nodes, advancing the DAG when a node ends, ending the job.

Every transition happens in the transaction that records the event causing it, with the
workflow row locked (docs/adr/0020-workflow-applications.md):

- start (a verb, or a coordinator action's launch): the `:start:` node, then the first node;
- a node's end (the worker's report, recovery giving up on a lost worker, a sub-workflow's
  end): its transition (`ok`, `error`, user retry), then the nodes it leads to.

Control nodes (decision, fork, join, kill, end) are evaluated there and recorded as nodes
that are OK at once (a join waits, RUNNING, until every path of its fork reached it). An
action node is stored PREP with its EL evaluated and its message sent after commit; a
worker claims it (`workflows.runner`). A sub-workflow node starts a child workflow job whose
end ends the node. Because the workflow row is locked, two fork branches ending at once
are advanced one after the other: a join counts each arrival once.
"""

from __future__ import annotations

import logging
import posixpath
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import F

from kernel.locking import skip_locked
from kernel.secrets import masker
from oozie.properties import SUSPEND_ON_NODES, WF_APP_PATH, WF_RERUN_SKIP_NODES
from workflows import notifications, parents
from workflows.choices import (
    NODE_LIVE,
    NODE_TERMINAL,
    WORKFLOW_TERMINAL,
    NodeStatus,
    WorkflowStatus,
)
from workflows.definitions.loader import load_application
from workflows.definitions.model import NodeDef, PreparedWorkflow, WorkflowDefinition
from workflows.definitions.submission import prepare_workflow
from workflows.el import NodeState, WorkflowState, evaluate_predicate, evaluate_text, resolve_spec
from workflows.ids import next_workflow_ids
from workflows.launch import dispatch_on_commit, queue_of, relaunch
from workflows.models import WorkflowJob, WorkflowNode
from workflows.outcomes import MAX_ERROR_CHARS, Outcome, end_workflow, store_end
from workflows.settings import max_launches, user_retry_interval
from workflows.states import kill_nodes, kill_workflows, switch_suspended

log = logging.getLogger(__name__)

#: The type a control node is stored with (Oozie's names, as its clients show them).
CONTROL_TYPES = {"start": ":START:", "end": ":END:", "kill": ":KILL:", "fork": ":FORK:", "join": ":JOIN:",
                 "decision": "switch"}
START_NODE = ":start:"
MAX_SUB_WORKFLOW_DEPTH = 20
RUN_TASK_QUEUE_OF = {"celery": "task"}
_NEVER = datetime.min.replace(tzinfo=UTC)


class WorkflowError(ValueError):
    """A verb or submission on workflow applications that cannot be done (its message says why)."""


# ---- creating and starting -----------------------------------------------------------------


def create_job(
    prepared: PreparedWorkflow,
    *,
    now: datetime,
    owner_id: int | None = None,
    group: str = "",
    coord_action_id: str | None = None,
    run: int = 0,
    nominal_time: datetime | None = None,
    parent: WorkflowNode | None = None,
    start: bool = True,
) -> WorkflowJob:
    """Store a workflow job of an application (PREP), and start it unless asked not to (caller's transaction)."""
    workflow = WorkflowJob.objects.create(
        id=next_workflow_ids(1)[0],
        app_name=prepared.definition.name,
        app_path=prepared.app_path,
        owner_id=owner_id,
        group=group,
        coord_action_id=coord_action_id,
        run=run,
        configuration=dict(prepared.configuration),
        nominal_time=nominal_time,
        status=WorkflowStatus.PREP,
        created_at=now,
        definition=prepared.definition.to_json(),
        app_xml=prepared.xml,
        parent_workflow=parent.workflow if parent is not None else None,
        parent_node=parent.id if parent is not None else "",
    )
    if start:
        start_new_job(workflow, now)
    return workflow


def failed_launch(app_path: str, configuration: Mapping[str, str], error: str, *, now: datetime,
                  owner_id: int | None = None, coord_action_id: str | None = None, run: int = 0,
                  nominal_time: datetime | None = None) -> WorkflowJob:
    """A launch whose application was refused: a FAILED job whose `:start:` node says why; the parent is told."""
    workflow = WorkflowJob.objects.create(
        id=next_workflow_ids(1)[0], app_name=app_path.rstrip("/").rsplit("/", 1)[-1] or app_path, app_path=app_path,
        owner_id=owner_id, coord_action_id=coord_action_id, run=run, configuration=dict(configuration),
        nominal_time=nominal_time, status=WorkflowStatus.FAILED, created_at=now, started_at=now, ended_at=now,
        error_code="E0701", error_message=error[:4000],
    )
    node = _control(workflow, START_NODE, "start", now, status=NodeStatus.FAILED, error=("E0701", error[:4000]))
    log.warning("workflow %s FAILED at launch: %s", workflow.id, masker(*workflow.secret_sources()).text(error))
    parents.ended(workflow, node)
    return workflow


def start_job(workflow: WorkflowJob, now: datetime) -> None:
    """PREP -> RUNNING: the `:start:` node, then the first node (caller's transaction, row locked or new)."""
    definition = definition_of(workflow)
    workflow.transition_to(WorkflowStatus.RUNNING)
    workflow.started_at = now
    workflow.save(update_fields=["status", "started_at", "last_modified"])
    notifications.job_changed(workflow)
    _control(workflow, START_NODE, "start", now, transition=definition.start)
    _enter(workflow, definition, definition.start, now)


def start_new_job(workflow: WorkflowJob, now: datetime) -> None:
    """`start_job` for a job this transaction just stored: it has no node rows yet, so none is looked for.

    Its nodes are kept in memory (`_new_rows`) and inserted together when the start ends
    (`_flush`), instead of a locking read and a write per node and the reads of an earlier run
    (there is none) a rerun needs: an application's start costs the same few statements
    however many nodes it enters.
    """
    workflow._new_rows, workflow._unsaved = {}, []  # type: ignore[attr-defined]
    try:
        start_job(workflow, now)
        _flush(workflow)
    finally:
        workflow._new_rows = workflow._unsaved = None  # type: ignore[attr-defined]


def _new_rows(workflow: WorkflowJob) -> dict[str, WorkflowNode] | None:
    """Every node row of a job being started by `start_new_job`, by name; None when the database must be asked."""
    rows: dict[str, WorkflowNode] | None = getattr(workflow, "_new_rows", None)
    return rows


def _flush(workflow: WorkflowJob) -> None:
    """Insert the new rows `start_new_job` holds back, in one statement: before anything reads or updates them.

    A job's start writes its nodes (`:start:`, a fork, its actions) as one multi-row INSERT at
    its end instead of one each; whatever reads the job's nodes from the database, ends the job
    or updates a row it wrote (a path taken again) stores them first.
    """
    unsaved: list[WorkflowNode] | None = getattr(workflow, "_unsaved", None)
    if not unsaved:
        return
    WorkflowNode.objects.bulk_create(unsaved)
    for node in unsaved:
        node.status_stored()  # as `create` leaves it: a later save records a status change
    unsaved.clear()


#: `_write_node`'s `row` when the caller did not read the node's row.
_UNREAD: Any = object()


def _write_node(workflow: WorkflowJob, name: str, fields: dict[str, Any], *, row: WorkflowNode | None = _UNREAD) -> WorkflowNode:
    """Store node `name` of the job with `fields`: created, or its row (a rerun's, a path taken again) updated.

    `row`: the node's row as the caller read it, locked, under the job's lock (None: it has none).
    """
    known = _new_rows(workflow)
    if row is not _UNREAD and known is None:
        node = row
    elif known is not None:
        node = known.get(name)
        if node is None:  # held back for the start's one INSERT (`_flush`)
            node = WorkflowNode(id=_node_id(workflow, name), **fields)
            workflow._unsaved.append(node)  # type: ignore[attr-defined]
            known[name] = node
            return node
        _flush(workflow)  # a row written again: stored first, then updated (its status change recorded)
    else:
        # Every writer of a job's nodes holds the job's row first (the callers here do): nobody can
        # create this node meanwhile, so it is read and written without update_or_create's savepoints.
        node = WorkflowNode.objects.select_for_update().filter(pk=_node_id(workflow, name)).first()
    if node is None:
        node = WorkflowNode.objects.create(id=_node_id(workflow, name), **fields)
    else:
        for attribute, value in fields.items():
            setattr(node, attribute, value)
        node.save(update_fields=list(fields))
    if known is not None:
        known[name] = node
    return node


def definition_of(workflow: WorkflowJob) -> WorkflowDefinition:
    """The stored definition of an application's workflow job."""
    return WorkflowDefinition.from_json(workflow.definition)


def is_application(workflow: WorkflowJob) -> bool:
    """Whether the job runs a workflow.xml (not a one-task or batch run)."""
    return bool(workflow.definition)


# ---- the EL state ----------------------------------------------------------------------------


def _callback_base() -> str:
    """Where wf:callback() points: the service's public address (SLA_ADMIN_BASE_URL) and /oozie/callback."""
    return str(settings.SLA_ADMIN_BASE_URL or "http://localhost:8000").rstrip("/") + "/oozie/callback"


class _NodeStates(Mapping[str, Any]):
    """The `wf:` view of a job's nodes, read from the database on first use (most expressions never ask)."""

    def __init__(self, workflow: WorkflowJob) -> None:
        self._workflow = workflow
        self._loaded: dict[str, Any] | None = None

    def _states(self) -> dict[str, Any]:
        if self._loaded is None:
            _flush(self._workflow)
            self._loaded = {
                n.name: NodeState(
                    transition=n.transition, error_code=n.error_code, error_message=n.error_message,
                    external_id=n.external_id, external_status=n.external_status,
                    data={str(k): str(v) for k, v in (n.data or {}).items()},
                )
                for n in self._workflow.nodes.only(
                    "name", "transition", "error_code", "error_message", "external_id", "external_status", "data",
                )
            }
        return self._loaded

    def __getitem__(self, name: str) -> Any:
        return self._states()[name]

    def __iter__(self) -> Any:
        return iter(self._states())

    def __len__(self) -> int:
        return len(self._states())


def el_state(workflow: WorkflowJob, current: str = "") -> Any:
    """The `wf:` state of the job now: its fields and every node's transition, errors and data (read when asked)."""
    errors = (NodeStatus.ERROR, NodeStatus.FAILED, NodeStatus.USER_RETRY)
    known = _new_rows(workflow)
    if known is not None:  # a job being started: its rows are these
        failed = sorted((n for n in known.values() if n.status in errors),
                        key=lambda n: (n.ended_at is not None, n.ended_at or _NEVER, n.id), reverse=True)
        last_error = failed[0].name if failed else None
    else:
        last_error = (workflow.nodes.filter(status__in=list(errors))
                      .order_by(F("ended_at").desc(nulls_last=True), "-id").values_list("name", flat=True).first())
    owner = workflow.owner.get_username() if workflow.owner_id and workflow.owner else ""
    return WorkflowState(
        id=workflow.id,
        name=workflow.app_name,
        app_path=workflow.app_path,
        conf=dict(workflow.configuration),
        user=owner,
        group=workflow.group,
        run=workflow.run,
        callback_base=_callback_base(),
        last_error_node=last_error or "",
        nodes=_NodeStates(workflow),
        current_node=current,
    )


# ---- entering nodes --------------------------------------------------------------------------


def _node_id(workflow: WorkflowJob, name: str) -> str:
    return f"{workflow.id}@{name}"


def _control(workflow: WorkflowJob, name: str, kind: str, now: datetime, *, transition: str = "",
             status: str = NodeStatus.OK, arrivals: int = 0, error: tuple[str, str] = ("", "")) -> WorkflowNode:
    """Record a control node (created, or reset on a rerun) as it was passed."""
    fields = control_fields(name, kind, now, transition=transition, status=status, arrivals=arrivals, error=error)
    if kind in _PASSED_AT_ONCE and status == NodeStatus.OK and _new_rows(workflow) is None:
        # Its row, if a rerun or a path taken again left one, was OK too (nothing else writes these
        # nodes, nothing kills them: they never run): no status change to record, so it is
        # created or overwritten in one statement (INSERT ... ON CONFLICT) instead of read first.
        node = WorkflowNode(id=_node_id(workflow, name), workflow=workflow, **fields)
        WorkflowNode.objects.bulk_create([node], update_conflicts=True, unique_fields=["id"], update_fields=list(fields))
        node.status_stored()
        return node
    return _write_node(workflow, name, {"workflow": workflow, **fields})


#: The control nodes that are passed the moment they are entered, always OK (a join waits, `:start:` may fail).
_PASSED_AT_ONCE = frozenset({"end", "kill", "decision", "fork"})


def control_fields(name: str, kind: str, now: datetime, *, transition: str = "",
                   status: str = NodeStatus.OK, arrivals: int = 0, error: tuple[str, str] = ("", "")) -> dict[str, Any]:
    """A control node's fields as it is passed (`_control`; the worker's report creates a join's row with them)."""
    return {
        "name": name, "type": CONTROL_TYPES[kind], "task_name": "", "queue": "",
        "status": status, "transition": transition, "started_at": now,
        "ended_at": now if status in NODE_TERMINAL else None, "arrivals": arrivals,
        "error_code": error[0], "error_message": error[1],
    }


def enter(workflow: WorkflowJob, name: str, now: datetime) -> None:
    """Execute node `name` of a running (or suspended) application and what it leads to (caller's transaction, row locked)."""
    _enter(workflow, definition_of(workflow), name, now)


def _enter(workflow: WorkflowJob, definition: WorkflowDefinition, name: str, now: datetime, *,
           arrived: int | None = None, passed: bool = False) -> None:
    """Execute node `name` and what it leads to: control nodes at once, action nodes by sending them to a worker.

    A loop, not recursion: a chain of 2,000 decisions is walked without growing the stack.
    `arrived`: `name` is a join the caller already counted this path at, with the count it
    now has (0: the caller counted nothing, as when the join was left ended by an earlier pass);
    `passed`: that count was the last path's and the caller stored the join's pass too.
    """
    pending = [name]
    # Until another path ends the job; a suspend on a node (spec 20) still enters the other
    # paths of a fork: their actions wait, queued, for the resume.
    while pending and workflow.status in (WorkflowStatus.RUNNING, WorkflowStatus.SUSPENDED):
        current = pending.pop(0)
        pending.extend(_step(workflow, definition, definition.nodes[current], now, arrived=arrived, passed=passed))
        arrived, passed = None, False


def _step(workflow: WorkflowJob, definition: WorkflowDefinition, node: NodeDef, now: datetime, *,
          arrived: int | None = None, passed: bool = False) -> list[str]:
    """Execute one node; the nodes to enter next (`arrived`: see `_enter`)."""
    name = node.name
    try:
        if node.kind == "end":
            _control(workflow, name, "end", now)
            finish(workflow, WorkflowStatus.SUCCEEDED, now)
        elif node.kind == "kill":
            message = evaluate_text(node.message, el_state(workflow, name)) if node.message else ""
            _control(workflow, name, "kill", now, error=(name, message))
            finish(workflow, WorkflowStatus.KILLED, now, error=(name, message or f"killed by node {name}"))
        elif node.kind == "decision":
            state = el_state(workflow, name)
            target = next((to for predicate, to in node.cases if evaluate_predicate(predicate, state)), node.default)
            _control(workflow, name, "decision", now, transition=target)
            notifications.node_changed(workflow, name, transition=target)
            return [target]
        elif node.kind == "fork":
            _control(workflow, name, "fork", now, transition=",".join(node.to))
            return list(node.to)
        elif node.kind == "join":
            return _arrive(workflow, definition, node, now, arrived, passed=passed)
        else:
            return _enter_action(workflow, definition, node, now)
    except Exception as exc:  # an EL error (a decision, a kill message, an action's spec): the job FAILS

        if isinstance(exc, (DatabaseError, transaction.TransactionManagementError)):
            raise
        log.warning("workflow %s: node %s failed to run: %s", workflow.id, name,
                    masker(*workflow.secret_sources()).text(str(exc)))  # operators read logs, not owners
        code = "EL_ERROR" if type(exc).__module__.startswith("oozie.el") else type(exc).__name__[:64]
        if node.kind == "action":
            row = _reset_action(workflow, node, now, status=NodeStatus.FAILED)
            _flush(workflow)
            row.error_code, row.error_message, row.ended_at = code, str(exc)[:4000], now
            row.save(update_fields=["error_code", "error_message", "ended_at"])
        finish(workflow, WorkflowStatus.FAILED, now, error=(code, f"node {name}: {exc}"))
    return []


def _arrive(workflow: WorkflowJob, definition: WorkflowDefinition, node: NodeDef, now: datetime,
            arrived: int | None = None, *, passed: bool = False) -> list[str]:
    """One fork path reached the join: count it; the last one passes through (`arrived`, `passed`: see `_enter`)."""
    if passed:
        return [node.to[0]]  # the caller counted the last path and stored the pass
    expected = _join_paths(definition, node.name)
    known = _new_rows(workflow)
    if known is not None:  # a job being started: nobody else sees its rows
        row = known.get(node.name)
        arrivals = 1 if row is None or row.status in NODE_TERMINAL else row.arrivals + 1
        if row is not None and row.status == NodeStatus.RUNNING and arrivals < expected:
            _flush(workflow)
            WorkflowNode.objects.filter(pk=row.pk).update(arrivals=arrivals, started_at=now)
            row.arrivals, row.started_at = arrivals, now
            return []
    else:
        # A later path at a join that waits (RUNNING): counted by one UPDATE that says the new
        # count (no status change, so no history line). Nothing matched: the path is the first
        # (no row, or one a path taken again left ended).
        counted = arrived if arrived is not None else _count_arrival(_node_id(workflow, node.name), now)
        if 0 < counted < expected:
            return []  # stored: a waiting join counted it, or the caller's batch created the join with it
        arrivals = counted or 1
    if arrivals < expected:
        _control(workflow, node.name, "join", now, status=NodeStatus.RUNNING, arrivals=arrivals)
        return []
    _control(workflow, node.name, "join", now, transition=node.to[0], arrivals=arrivals)
    return [node.to[0]]


#: A path's arrival at a join that waits: its count, said back (PostgreSQL and SQLite 3.35+ have RETURNING).
COUNT_ARRIVAL = (
    "UPDATE workflows_workflownode SET arrivals = arrivals + 1, started_at = %s"
    " WHERE id = %s AND status = 'RUNNING' RETURNING arrivals"
)


def _count_arrival(join_id: str, now: datetime) -> int:
    """Count one more arrival at a waiting join (the caller holds the workflow row); the count, or 0 if none waits."""
    with connection.cursor() as cursor:
        cursor.execute(COUNT_ARRIVAL, [now, join_id])
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def _skipped(workflow: WorkflowJob) -> set[str]:
    return {n.strip() for n in str(workflow.configuration.get(WF_RERUN_SKIP_NODES, "")).split(",") if n.strip()}


def _enter_action(workflow: WorkflowJob, definition: WorkflowDefinition, node: NodeDef, now: datetime) -> list[str]:
    known = _new_rows(workflow)
    # Read once, locked (every writer of the job's nodes holds the job's row): the skip, the reset
    # and the write below use this row instead of reading it again each.
    existing = (known.get(node.name) if known is not None
                else WorkflowNode.objects.select_for_update().filter(pk=_node_id(workflow, node.name)).first())
    if existing is not None and existing.status == NodeStatus.OK and node.name in _skipped(workflow):
        # A rerun skips what ran well (spec 10): the node keeps its run and its transition is taken again.
        log.info("workflow %s: node %s skipped (rerun)", workflow.id, node.name)
        existing.transition = node.to[0]
        _flush(workflow)
        existing.save(update_fields=["transition"])
        return [node.to[0]]
    suspend_on = {n.strip() for n in str(workflow.configuration.get(SUSPEND_ON_NODES, "")).split(",") if n.strip()}
    if node.action_type == "sub-workflow":
        _start_sub_workflow(workflow, node, now)
        return []
    spec = resolve_spec(node.spec, el_state(workflow, node.name))
    row = _reset_action(workflow, node, now, status=NodeStatus.PREP, spec=spec, existing=existing)
    if workflow.status == WorkflowStatus.SUSPENDED:
        return []  # queued: resume sends it
    if node.name in suspend_on or "*" in suspend_on:
        # Spec 20: the job suspends before this node runs; resume sends it.
        workflow.transition_to(WorkflowStatus.SUSPENDED)
        workflow.save(update_fields=["status", "last_modified"])
        notifications.job_changed(workflow)
        log.info("workflow %s suspended on node %s (%s)", workflow.id, node.name, SUSPEND_ON_NODES)
        return []

    dispatch_on_commit(row)
    return []


def _reset_action(workflow: WorkflowJob, node: NodeDef, now: datetime, *, status: str,
                  spec: Mapping[str, Any] | None = None, existing: WorkflowNode | None = _UNREAD) -> WorkflowNode:
    """The action node's row, new or reset for a new run (a rerun, or a path taken again).

    `existing`: its row as the caller read it, locked (None: it has none); else it is read here.
    """
    task_id = str(uuid.uuid4())
    task = str((spec or {}).get("task", "")) if node.action_type == "celery" else ""
    # A node run again on the same row (a cleared node, workflows.node_verbs) continues its attempts and
    # their history: the attempt is the fencing token, so a late report of an earlier run matches nothing.
    known = _new_rows(workflow)
    if known is not None or existing is not _UNREAD:
        earlier = known.get(node.name) if known is not None else existing
        previous = (earlier.attempt, earlier.history) if earlier is not None else None
    else:
        previous = (WorkflowNode.objects.filter(pk=_node_id(workflow, node.name)).values_list("attempt", "history")
                    .first())
    attempts, history = previous if previous is not None else (0, [])
    row = _write_node(workflow, node.name, {
        "workflow": workflow, "name": node.name, "type": node.action_type, "task_name": task,
        "queue": queue_of(task or "workflows.run"), "status": status, "attempt": attempts + 1,
        "max_attempts": attempts + max_launches(), "task_id": task_id, "task_ids": [task_id], "worker": "",
        "lease_expires_at": None, "dispatched_at": now, "dispatches": 1 if status == NodeStatus.PREP else 0,
        "started_at": None, "ended_at": None, "error_code": "", "error_message": "", "history": list(history),
        "spec": dict(spec or {}), "transition": "", "data": {}, "external_id": "", "external_status": "",
        "user_retries": 0, "retry_at": None,
    }, row=existing)
    row.workflow = workflow
    return row


def _start_sub_workflow(workflow: WorkflowJob, node: NodeDef, now: datetime) -> None:
    """Start the child job of a sub-workflow node; the node runs until the child ends (its end ends it)."""
    # The child's end (at once, or a failed submission) takes this node's transition on a job
    # read again from the database: the rows of a job being started are read from there too.
    _flush(workflow)
    workflow._new_rows = workflow._unsaved = None  # type: ignore[attr-defined]
    row = _reset_action(workflow, node, now, status=NodeStatus.RUNNING)
    row.started_at = now
    depth, parent = 0, workflow
    while parent.parent_workflow_id:
        depth += 1
        parent = WorkflowJob.objects.get(pk=parent.parent_workflow_id)
    try:
        if depth >= MAX_SUB_WORKFLOW_DEPTH:
            raise WorkflowError(f"sub-workflows nest deeper than {MAX_SUB_WORKFLOW_DEPTH} levels")
        spec = resolve_spec(node.spec, el_state(workflow, node.name))
        configuration: dict[str, str] = {}
        if spec.get("propagate_configuration"):
            configuration.update({k: v for k, v in workflow.configuration.items() if k != WF_RERUN_SKIP_NODES})
        configuration.update({str(k): str(v) for k, v in (spec.get("configuration") or {}).items()})
        app_path = relative_to(str(spec["app_path"]), workflow.app_path)
        configuration[WF_APP_PATH] = app_path
        xml, defaults = load_application(app_path, trusted=False)
        prepared = prepare_workflow(xml, configuration, app_path=app_path, config_default=defaults)
    except Exception as exc:  # a child that cannot be submitted: the node ERRORs (its error transition)

        if isinstance(exc, DatabaseError):
            raise
        row.spec = dict(node.spec)
        row.save(update_fields=["spec", "started_at"])
        store_end(row, Outcome(NodeStatus.ERROR, "E0SUBWF", f"sub-workflow not started: {exc}"[:MAX_ERROR_CHARS]), now)
        node_ended(row, now)
        return
    row.spec = spec
    child = create_job(prepared, now=now, owner_id=workflow.owner_id, group=workflow.group, parent=row, start=False)
    row.external_id = child.id
    row.external_status = WorkflowStatus.RUNNING
    row.save(update_fields=["spec", "external_id", "external_status", "started_at"])
    start_new_job(child, now)


# ---- a node ended ------------------------------------------------------------------------------


class Foreseen(NamedTuple):
    """What an OK node's end leads to (`foreseen_transition`): its target and, if that is a join, the join's paths and exit."""

    target: str
    join_paths: int  # the paths the join waits for; 0: the target is no join
    join_to: str  # where the join goes once every path arrived


def foreseen_transition(workflow: WorkflowJob, name: str, status: str) -> Foreseen | None:
    """The transition node `name` takes if it ends `status` while its workflow runs.

    Only an OK end is foreseen (an ERROR may be retried, a FAILED ends the job): the worker's
    report stores it, counts the arrival at the join and passes a join the last path reached,
    in the batch that ends the node, each only while the workflow runs (`node_ended`'s
    `taken`). None: the engine decides, as always.
    """
    if status != NodeStatus.OK or not workflow.definition:
        return None
    definition = definition_of(workflow)
    spec = definition.nodes.get(name)
    if spec is None or spec.kind != "action" or not spec.to:
        return None
    target = definition.nodes.get(spec.to[0])
    if target is None or target.kind != "join":
        return Foreseen(spec.to[0], 0, "")
    return Foreseen(spec.to[0], _join_paths(definition, target.name), target.to[0])


def _join_paths(definition: WorkflowDefinition, join: str) -> int:
    """How many paths join `join` waits for: its fork's."""
    fork = next((f for f, j in definition.forks.items() if j == join), None)
    return len(definition.nodes[fork].to) if fork else 1


def node_ended(node: WorkflowNode, now: datetime, *, locked: WorkflowJob | None = None,
               taken: tuple[str, int | None] | None = None, passed: bool = False) -> None:
    """Take the ended node's transition (caller's transaction; the node row is locked and saved).

    `locked`: the workflow row as the caller read it while locking it (the worker's report reads
    it in its batch); else it is locked and read here. `taken`: the transition the caller
    already stored for it (`foreseen_transition`), with the count its join now has after the
    caller counted or created it (0: neither; None: the target is no join); `passed`: that was
    the join's last path and the caller stored its pass (OK, its transition, its history line).
    """
    workflow = locked if locked is not None else WorkflowJob.objects.select_for_update().get(pk=node.workflow_id)
    node.workflow = workflow
    if workflow.status == WorkflowStatus.SUSPENDED:
        log.info("node %s ended %s while workflow %s is SUSPENDED; its transition waits for resume",
                 node.id, node.status, workflow.id)
        return
    if workflow.status != WorkflowStatus.RUNNING:
        return  # the job ended meanwhile (killed, or another path reached the end)
    definition = definition_of(workflow)
    spec = definition.nodes[node.name]
    if node.status == NodeStatus.ERROR and node.user_retries < spec.retry_max:
        _user_retry(node, spec, now)
        return
    if node.status == NodeStatus.OK:
        target = spec.to[0]
    elif node.status == NodeStatus.ERROR:
        target = spec.error_to
    else:  # FAILED or KILLED: the job ends so (Oozie fails the job on an action's FAILED)
        status = WorkflowStatus.KILLED if node.status == NodeStatus.KILLED else WorkflowStatus.FAILED
        finish(workflow, status, now, error=(node.error_code, f"node {node.name}: {node.error_message}"))
        return
    node.transition = target
    arrived = None
    if taken is not None and taken[0] == target:
        arrived = taken[1]
    else:
        node.save(update_fields=["transition"])
        passed = False
    notifications.node_changed(workflow, node.name, transition=target)
    _enter(workflow, definition, target, now, arrived=arrived, passed=passed)


def _user_retry(node: WorkflowNode, spec: NodeDef, now: datetime) -> None:
    """ERROR with user retries left (spec 18): USER_RETRY, run again after retry-interval minutes."""
    node.transition_to(NodeStatus.USER_RETRY)
    node.user_retries += 1
    node.max_attempts += 1  # a user retry is a launch of its own, not one of the lost-worker allowance
    node.retry_at = now + timedelta(seconds=spec.retry_interval * user_retry_interval())
    node.save(update_fields=["status", "user_retries", "max_attempts", "retry_at"])
    log.info("workflow node %s ERROR (%s); user retry %s of %s at %s", node.id, node.error_code,
             node.user_retries, spec.retry_max, node.retry_at.isoformat())
    if node.retry_at <= now:
        retry_now(node, now)


def retry_now(node: WorkflowNode, now: datetime) -> None:
    """Launch a USER_RETRY node again (the caller holds its row)."""
    node.retry_at = None
    node.save(update_fields=["retry_at"])
    relaunch(node, now)


def due_user_retries(now: datetime, limit: int = 500) -> int:
    """Launch again the USER_RETRY nodes whose time came, of running workflows (recovery)."""
    launched = 0
    with transaction.atomic():
        rows = skip_locked(
            WorkflowNode.objects.filter(status=NodeStatus.USER_RETRY, retry_at__lte=now,
                                        workflow__status=WorkflowStatus.RUNNING).order_by("retry_at")
        )[:limit]
        for node in rows:
            retry_now(node, now)
            launched += 1
    return launched


def finish(workflow: WorkflowJob, status: str, now: datetime, *, error: tuple[str, str] = ("", "")) -> None:
    """End the job: live nodes and sub-workflows killed, the parent told (caller's transaction, row locked)."""
    _flush(workflow)
    kill_nodes(workflow.id, now, reason=f"workflow {status}")
    children = list(WorkflowJob.objects.filter(parent_workflow_id=workflow.id)
                    .exclude(status__in=sorted(WORKFLOW_TERMINAL)).values_list("id", flat=True)
                    ) if _starts_children(workflow) else []
    for child in children:
        kill_tree(child, now, reason=f"parent workflow {workflow.id} {status}")
    workflow.transition_to(status)
    workflow.ended_at = now
    if status != WorkflowStatus.SUCCEEDED:
        workflow.error_code, workflow.error_message = error[0][:64], error[1]
    workflow.save(update_fields=["status", "ended_at", "error_code", "error_message", "last_modified"])
    notifications.job_changed(workflow)
    shown = f": {masker(*workflow.secret_sources()).text(error[1])}" if error[1] else ""  # operators read logs
    log.info("workflow %s %s%s", workflow.id, status, shown)
    last = workflow.nodes.order_by("-ended_at", "-id").first()
    if workflow.parent_node:
        sub_workflow_ended(workflow, now)
    elif last is not None:
        parents.ended(workflow, last)


def _starts_children(workflow: WorkflowJob) -> bool:
    """Whether the job can have sub-workflows: only a sub-workflow node starts a child (`_start_sub_workflow`)."""
    nodes = (workflow.definition or {}).get("nodes", ())
    return any(node.get("action_type") == "sub-workflow" for node in nodes)


def kill_tree(workflow_id: str, now: datetime, reason: str) -> None:
    """Kill a job and its sub-workflows (caller's transaction)."""
    children = list(WorkflowJob.objects.filter(parent_workflow_id=workflow_id)
                    .exclude(status__in=sorted(WORKFLOW_TERMINAL)).values_list("id", flat=True))
    for child in children:
        kill_tree(child, now, reason)
    kill_workflows([workflow_id], now, reason=reason)


def relative_to(app_path: str, parent: str) -> str:
    """An application path relative to the directory `parent` (a sub-workflow's to its parent application, an action's to its coordinator); absolute paths and URIs as they are."""
    path = app_path.strip()
    if not path or "://" in path or path.startswith("/") or not parent:
        return path
    if "://" in parent:
        scheme, rest = parent.rstrip("/").split("://", 1)
        return f"{scheme}://{posixpath.normpath(posixpath.join(rest, path))}"
    return posixpath.normpath(posixpath.join(parent.rstrip("/"), path))


def sub_workflow_ended(child: WorkflowJob, now: datetime) -> None:
    """A sub-workflow ended: its node in the parent ends so (OK when it SUCCEEDED, else ERROR)."""
    node = (WorkflowNode.objects.select_for_update().select_related("workflow")
            .filter(pk=child.parent_node, status=NodeStatus.RUNNING, external_id=child.id).first())
    if node is None:
        return  # the parent node moved on (killed, rerun)
    node.external_status = child.status
    node.save(update_fields=["external_status"])
    if child.status == WorkflowStatus.SUCCEEDED:
        outcome = Outcome(NodeStatus.OK)
    else:
        outcome = Outcome(NodeStatus.ERROR, child.error_code or child.status,
                          child.error_message or f"sub-workflow {child.id} {child.status}")
    store_end(node, outcome, now)
    node_ended(node, now)  # the parent is an application


# ---- resume and rerun -------------------------------------------------------------------------------


def resume_workflow(workflow_id: str, now: datetime) -> bool:
    """SUSPENDED -> RUNNING (caller's transaction): queued nodes are sent again; a node that ended meanwhile ends the workflow.

    An application takes the transitions held while it was suspended (`resumed`); a `task:`
    workflow whose node ended meanwhile ends now.
    """
    moved = switch_suspended(workflow_id, now, suspend=False)
    if moved is None:
        return False
    workflow, nodes = moved
    if workflow.definition:  # a workflow application: queued nodes sent, held transitions taken
        resumed(workflow, nodes, now)
        return True
    _send_queued(workflow, nodes, now)
    ended = [node for node in nodes if node.status in NODE_TERMINAL]
    if ended:
        end_workflow(ended[0], now)
    return True


def _send_queued(workflow: WorkflowJob, nodes: list[WorkflowNode], now: datetime) -> None:
    """Send again the nodes a suspended workflow kept queued (PREP), after the caller's commit."""
    for node in nodes:
        node.workflow = workflow
        if node.status == NodeStatus.PREP:
            node.dispatched_at, node.dispatches = now, node.dispatches + 1
            node.save(update_fields=["dispatched_at", "dispatches"])
            dispatch_on_commit(node)


def resumed(workflow: WorkflowJob, nodes: list[WorkflowNode], now: datetime) -> None:
    """After SUSPENDED -> RUNNING: the transitions held while suspended are taken now."""
    _send_queued(workflow, nodes, now)
    held = [n for n in nodes if n.status in NODE_TERMINAL and not n.transition and n.type not in CONTROL_TYPES.values()]
    for node in sorted(held, key=lambda n: (n.ended_at or now, n.id)):
        workflow.refresh_from_db(fields=["status"])
        if workflow.status != WorkflowStatus.RUNNING:
            return
        node.workflow = workflow
        node_ended(node, now)


def check_rerun(workflow: WorkflowJob, *, skip_nodes: list[str] | None, fail_nodes: bool) -> set[str]:
    """The nodes a rerun skips; WorkflowError when the rerun cannot be done (nothing changed)."""
    if workflow.status not in WORKFLOW_TERMINAL:
        raise WorkflowError(f"workflow {workflow.id} is {workflow.status}: only an ended job can be rerun")
    definition = definition_of(workflow)
    actions = {n.name for n in definition.nodes.values() if n.kind == "action"}
    ok = set(workflow.nodes.filter(status=NodeStatus.OK, name__in=sorted(actions)).values_list("name", flat=True))
    if fail_nodes and skip_nodes:
        raise WorkflowError("give either oozie.wf.rerun.failnodes or oozie.wf.rerun.skip.nodes, not both")
    skipped = ok if fail_nodes else set(skip_nodes or ())
    unknown = sorted(skipped - set(definition.nodes))
    if unknown:
        raise WorkflowError(f"skip-nodes {', '.join(unknown)}: no such node in workflow {workflow.id}")
    not_ok = sorted(skipped - ok)
    if not_ok:
        raise WorkflowError(f"skip-nodes {', '.join(not_ok)} did not end OK: only nodes that succeeded can be skipped")
    return skipped


def rerun(workflow: WorkflowJob, now: datetime, *, configuration: Mapping[str, str] | None = None,
          skip_nodes: list[str] | None = None, fail_nodes: bool = False) -> None:
    """Run an ended job again (spec 10): with skip-nodes, or from its failed nodes (caller's transaction, row locked).

    Nodes that ended OK and are skipped keep their run; every other node runs again.
    """
    skipped = check_rerun(workflow, skip_nodes=skip_nodes, fail_nodes=fail_nodes)
    conf = dict(workflow.configuration)
    conf.update(configuration or {})
    conf[WF_RERUN_SKIP_NODES] = ",".join(sorted(skipped))
    workflow.configuration = conf
    workflow.nodes.exclude(name__in=sorted(skipped)).exclude(status__in=sorted(NODE_LIVE)).delete()
    workflow.status = WorkflowStatus.PREP  # the table has no way back from an end; a rerun is a new run
    workflow.run += 1
    workflow.ended_at = None
    workflow.error_code, workflow.error_message = "", ""
    workflow.save(update_fields=["configuration", "status", "run", "ended_at", "error_code", "error_message",
                                 "last_modified"])
    start_job(workflow, now)
