"""An operator's verbs on one node of a workflow: clear it (run it again) or mark it OK or ERROR.

Airflow's "clear" (with or without downstream) and "mark success / failed", in the terms of
Oozie's transitions (docs/workflows.md, "Clearing and marking a node"):

- **mark OK / mark ERROR** ends a node that has not ended yet (PREP, RUNNING, USER_RETRY) as if
  its run had ended so; the workflow then takes the node's `ok` or `error` transition (a
  SUSPENDED workflow holds it until resumed, as for any node that ends while suspended). A
  RUNNING attempt is fenced off: every write a worker makes is conditional on (attempt,
  RUNNING), so its late report and its lease renewals match nothing; its task is revoked
  after commit and a running sub-workflow is killed. A marked ERROR takes the error path at
  once (no user retry left).
- **clear** runs an ended action node again (its attempt numbering continues, so a late
  report of an earlier run is fenced off) and the workflow continues from it along its
  transitions. Without `downstream`, the nodes after it that ended OK keep their run (they
  are skipped when reached, as a rerun's skip-nodes); a node after it that is still running
  refuses the clear. With `downstream`, every node after it runs again when reached, and
  those still running are stopped (KILLED, their tasks revoked). A join after the node
  forgets the arrival of the node's path. An ended workflow application without a parent
  runs again (RUNNING); one whose coordinator action or parent workflow was told it ended is
  rerun through its parent instead.

The library under the node commands (`workflows.commands.nodes`): the checks the services
make before queueing (and the commands again under the key), then the changes, in the
caller's transaction with the workflow row locked before its nodes (the order every writer
of a workflow's nodes takes). An impossible verb raises NodeVerbRefused and changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial

from django.db import transaction

from oozie.properties import WF_RERUN_SKIP_NODES
from workflows import notifications
from workflows.choices import (
    NODE_LIVE,
    NODE_TERMINAL,
    WORKFLOW_TERMINAL,
    NodeStatus,
    WorkflowStatus,
)
from workflows.definitions.model import WorkflowDefinition
from workflows.engine import (
    CONTROL_TYPES,
    WorkflowError,
    definition_of,
    enter,
    kill_tree,
    node_ended,
)
from workflows.models import WorkflowJob, WorkflowNode
from workflows.outcomes import Outcome, end_workflow, store_end
from workflows.states import revoke

#: The statuses a node can be marked with.
MARKS = (NodeStatus.OK, NodeStatus.ERROR)
#: The error code a node marked ERROR carries (its message names who marked it).
MARKED_ERROR = "MARKED"
TASK_NODE_TYPE = "celery-task"


class NodeVerbRefused(WorkflowError):
    """The node cannot be cleared or marked now (its message says why); nothing changed."""


class UnknownNode(NodeVerbRefused):
    """The workflow has no node of that name (neither in its definition nor among its rows); nothing changed."""


@dataclass(frozen=True)
class ClearPlan:
    """What a clear does: the node, the ran nodes that run again, those kept, those stopped now, joins reset."""

    workflow_id: str
    node: str
    downstream: bool
    rerun: tuple[str, ...]
    kept: tuple[str, ...] = ()
    stopped: tuple[str, ...] = ()
    joins: Mapping[str, int] = field(default_factory=dict)  # join -> arrivals left (0: forgotten)
    reopens: bool = False

    def describe(self) -> list[str]:
        """The plan in lines for a confirmation page or a CLI."""
        lines = [f"node {self.node} of {self.workflow_id} runs again (a new attempt), then the workflow continues "
                 "from it along its transitions"]
        if self.reopens:
            lines.append(f"workflow {self.workflow_id}: ended -> RUNNING")
        again = [name for name in self.rerun if name != self.node]
        if again:
            lines.append(f"after it, run again when reached: {', '.join(again)}")
        if self.kept:
            lines.append(f"after it, kept (they ended OK; skipped when reached): {', '.join(self.kept)}")
        if self.stopped:
            lines.append(f"stopped now (-> KILLED, their tasks revoked): {', '.join(self.stopped)}")
        for join, left in self.joins.items():
            lines.append(f"join {join} waits for this path again ({left} other arrival(s) kept)")
        return lines


def downstream_of(definition: WorkflowDefinition, name: str) -> list[str]:
    """Every node reachable from `name` through its transitions (ok, error, cases, fork paths), nearest first."""
    seen: dict[str, None] = {}
    pending = list(definition.nodes[name].transitions())
    while pending:
        current = pending.pop(0)
        if current in seen or current == name or current not in definition.nodes:
            continue
        seen[current] = None
        pending.extend(definition.nodes[current].transitions())
    return list(seen)


def _is_action(definition: WorkflowDefinition, name: str) -> bool:
    return name in definition.nodes and definition.nodes[name].kind == "action"


def _node_row(workflow: WorkflowJob, name: str, *, lock: bool) -> WorkflowNode:
    """The node's row, or NodeVerbRefused naming the nodes that exist."""
    rows = WorkflowNode.objects.select_for_update() if lock else WorkflowNode.objects
    node = rows.filter(pk=f"{workflow.id}@{name}").first()
    if node is None:
        raise NodeVerbRefused(f"workflow {workflow.id} has no node {name!r} that has run")
    node.workflow = workflow
    return node


def check_node_name(workflow: WorkflowJob, name: str) -> None:
    """UnknownNode unless `name` names a node of the workflow: in its definition, or a row (a one-task run's `task`)."""
    if workflow.definition and name in definition_of(workflow).nodes:
        return
    if WorkflowNode.objects.filter(pk=f"{workflow.id}@{name}").exists():
        return
    raise UnknownNode(f"no such node {name!r} in workflow {workflow.id}")


# ---- mark ---------------------------------------------------------------------------------------------


def check_mark(workflow: WorkflowJob, node: WorkflowNode, status: str) -> None:
    """NodeVerbRefused unless `node` can be marked `status` now (a live action node of a running or suspended workflow)."""
    if status not in MARKS:
        raise NodeVerbRefused(f"a node is marked OK or ERROR, not {status!r}")
    if workflow.definition:
        if node.type in CONTROL_TYPES.values() or not _is_action(definition_of(workflow), node.name):
            raise NodeVerbRefused(f"node {node.name} is a control node ({node.type}): only action nodes are marked")
    elif node.type != TASK_NODE_TYPE:
        raise NodeVerbRefused(f"workflow {workflow.id} runs {workflow.app_path}: hold or release its batch instead")
    if workflow.status not in (WorkflowStatus.RUNNING, WorkflowStatus.SUSPENDED):
        hint = "; clear the node to run it again" if workflow.status in WORKFLOW_TERMINAL else ""
        raise NodeVerbRefused(f"workflow {workflow.id} is {workflow.status}: only a running or suspended "
                              f"workflow's nodes are marked{hint}")
    if node.status not in NODE_LIVE:
        raise NodeVerbRefused(f"node {node.name} already ended {node.status} and its workflow moved on: "
                              "clear it to run it again")


def mark_node(workflow_id: str, name: str, status: str, *, now: datetime, by: str) -> WorkflowNode:
    """End a live node as `status` for the operator `by`; the workflow takes its transition (caller's transaction)."""
    workflow = WorkflowJob.objects.select_for_update().get(pk=workflow_id)  # the row first, then the node
    node = _node_row(workflow, name, lock=True)
    check_mark(workflow, node, status)
    before = node.status
    if before == NodeStatus.RUNNING and node.task_id:
        transaction.on_commit(partial(revoke, [node.task_id]))  # fenced anyway: its report needs (attempt, RUNNING)
    if workflow.definition and node.external_id and node.type == "sub-workflow":
        kill_tree(node.external_id, now, reason=f"its node {node.id} was marked {status} by {by}")
    node.history = [*node.history, {
        "attempt": node.attempt, "worker": node.worker, "outcome": status, "marked_by": by, "was": before,
        "started": node.started_at.isoformat(timespec="milliseconds") if node.started_at else None,
        "ended": now.isoformat(timespec="milliseconds"),
    }]
    node.retry_at = None
    if status == NodeStatus.ERROR and workflow.definition:
        # A marked ERROR takes the error path now: no user retry is left (spec 18's retry-max).
        node.user_retries = max(node.user_retries, definition_of(workflow).nodes[name].retry_max)
    node.save(update_fields=["retry_at", "user_retries"])
    message = f"marked ERROR by {by}" if status == NodeStatus.ERROR else ""
    store_end(node, Outcome(status, MARKED_ERROR if message else "", message), now)
    if workflow.definition:
        node_ended(node, now)  # a suspended workflow holds the transition until resumed
    elif workflow.status == WorkflowStatus.RUNNING:
        end_workflow(node, now)  # a one-task run ends as its node; suspended: resume ends it
    return node


# ---- clear --------------------------------------------------------------------------------------------


def _check_clearable(workflow: WorkflowJob) -> WorkflowDefinition:
    if not workflow.definition:
        raise NodeVerbRefused(f"workflow {workflow.id} runs {workflow.app_path or 'one task'}, not a workflow.xml: "
                              "rerun its coordinator action instead")
    if workflow.status == WorkflowStatus.PREP:
        raise NodeVerbRefused(f"workflow {workflow.id} is PREP: it has not started")
    if workflow.status in WORKFLOW_TERMINAL and (workflow.coord_action_id or workflow.parent_workflow_id):
        parent = workflow.coord_action_id or workflow.parent_workflow_id
        raise NodeVerbRefused(f"workflow {workflow.id} is {workflow.status} and {parent} was told so: "
                              f"rerun {parent} (or rerun this workflow from its failed nodes) instead")
    return definition_of(workflow)


def _join_arrivals(rows: Mapping[str, WorkflowNode], path: set[str], join: str) -> int:
    """How many arrivals at `join` came through `path` (the cleared node and the nodes after it)."""
    return sum(1 for name in path if name in rows and join in rows[name].transition.split(","))


def plan_clear(workflow: WorkflowJob, rows: Mapping[str, WorkflowNode], name: str, *, downstream: bool) -> ClearPlan:
    """What clearing `name` does to the workflow as it is (`rows`: its nodes by name); NodeVerbRefused if impossible."""
    definition = _check_clearable(workflow)
    if not _is_action(definition, name):
        kind = definition.nodes[name].kind if name in definition.nodes else "no such node"
        raise NodeVerbRefused(f"node {name!r} of workflow {workflow.id}: {kind}; only action nodes are cleared")
    node = rows.get(name)
    if node is None:
        raise NodeVerbRefused(f"node {name} of workflow {workflow.id} has not run yet")
    if node.status not in NODE_TERMINAL:
        raise NodeVerbRefused(f"node {name} is {node.status}: mark it OK or ERROR, or wait for its end")
    below = downstream_of(definition, name)
    live = [n for n in below if _is_action(definition, n) and n in rows and rows[n].status in NODE_LIVE]
    if live and not downstream:
        raise NodeVerbRefused(f"node(s) after {name} are running ({', '.join(live)}): clear with downstream, "
                              "or wait for their end")
    ran = [n for n in below if _is_action(definition, n) and n in rows]
    kept = [] if downstream else [n for n in ran if rows[n].status == NodeStatus.OK]
    reopens = workflow.status in WORKFLOW_TERMINAL
    path = {name, *below}
    joins: dict[str, int] = {}
    for fork, join in definition.forks.items():
        if join not in path:
            continue
        expected = len(definition.nodes[fork].to)
        if fork in path:
            joins[join] = 0 if join in rows else -1  # every path comes again: the join starts over
            continue
        arrived = rows[join].arrivals if join in rows else 0  # a join that passed counts every path
        left = max(0, arrived - _join_arrivals(rows, path - {join}, join))
        if reopens and left < expected - 1:
            raise NodeVerbRefused(f"join {join} would wait for fork paths that will not run again (workflow "
                                  f"{workflow.id} ended): rerun the workflow from its failed nodes instead")
        joins[join] = left
    return ClearPlan(
        workflow_id=workflow.id, node=name, downstream=downstream,
        rerun=(name, *(n for n in ran if n not in kept)), kept=tuple(kept), stopped=tuple(live),
        joins={join: left for join, left in joins.items() if left >= 0}, reopens=reopens,
    )


def check_clear(workflow: WorkflowJob, name: str, *, downstream: bool) -> ClearPlan:
    """The plan of a clear as the workflow is now (no lock: the command checks again under its key)."""
    rows = {row.name: row for row in workflow.nodes.all()}
    return plan_clear(workflow, rows, name, downstream=downstream)


def _stop(node: WorkflowNode, now: datetime, reason: str) -> None:
    """A live node after the cleared one: KILLED now, its task revoked, its sub-workflow killed."""
    if node.status == NodeStatus.RUNNING and node.task_id:
        transaction.on_commit(partial(revoke, [node.task_id]))
    if node.type == "sub-workflow" and node.external_id:
        kill_tree(node.external_id, now, reason=reason)
    node.transition_to(NodeStatus.KILLED)
    node.ended_at, node.lease_expires_at, node.retry_at = now, None, None
    node.history = [*node.history, {"attempt": node.attempt, "worker": node.worker, "outcome": NodeStatus.KILLED,
                                    "ended": now.isoformat(timespec="milliseconds"), "error": reason}]
    node.save(update_fields=["status", "ended_at", "lease_expires_at", "retry_at", "history"])


def clear_node(workflow_id: str, name: str, *, downstream: bool, now: datetime, by: str) -> ClearPlan:
    """Run an ended node again for the operator `by` and continue from it (caller's transaction); the plan done."""
    workflow = WorkflowJob.objects.select_for_update().get(pk=workflow_id)  # the row first, then the nodes
    rows = {row.name: row for row in WorkflowNode.objects.select_for_update().filter(workflow=workflow).order_by("id")}
    plan = plan_clear(workflow, rows, name, downstream=downstream)
    reason = f"node {name} was cleared by {by}"
    for stopped in plan.stopped:
        _stop(rows[stopped], now, reason)
    for join, left in plan.joins.items():
        if left == 0:
            WorkflowNode.objects.filter(pk=rows[join].pk).delete()
        else:  # waits again for the cleared path (a control node: its row is rewritten, as the engine does)
            WorkflowNode.objects.filter(pk=rows[join].pk).update(
                status=NodeStatus.RUNNING, arrivals=left, transition="", ended_at=None)
    node = rows[name]
    node.history = [*node.history, {"attempt": node.attempt, "outcome": "CLEARED", "cleared_by": by,
                                    "downstream": downstream, "ended": now.isoformat(timespec="milliseconds")}]
    node.save(update_fields=["history"])
    conf = dict(workflow.configuration)
    skipped = {n.strip() for n in str(conf.get(WF_RERUN_SKIP_NODES, "")).split(",") if n.strip()}
    skipped = (skipped - set(plan.rerun) - set(plan.stopped)) | set(plan.kept)
    if skipped or WF_RERUN_SKIP_NODES in conf:
        conf[WF_RERUN_SKIP_NODES] = ",".join(sorted(skipped))
    workflow.configuration = conf
    fields = ["configuration", "last_modified"]
    if plan.reopens:
        # The table has no way back from an end: as a rerun, a clear is the operator's new start.
        workflow.status = WorkflowStatus.RUNNING
        workflow.ended_at = None
        workflow.error_code, workflow.error_message = "", ""
        fields += ["status", "ended_at", "error_code", "error_message"]
    workflow.save(update_fields=fields)
    if plan.reopens:
        notifications.job_changed(workflow)
    enter(workflow, name, now)
    return plan


def node_verbs_allowed(workflow: WorkflowJob, node: WorkflowNode) -> dict[str, str]:
    """For a page: each node verb and why it is refused now ('' when allowed); no lock, no write."""
    reasons: dict[str, str] = {}
    rows: dict[str, WorkflowNode] | None = None
    for verb in ("clear", "clear-downstream", "mark-ok", "mark-error"):
        try:
            if verb.startswith("mark"):
                check_mark(workflow, node, NodeStatus.OK if verb == "mark-ok" else NodeStatus.ERROR)
            else:
                if rows is None:
                    rows = {row.name: row for row in workflow.nodes.all()}
                plan_clear(workflow, rows, node.name, downstream=verb == "clear-downstream")
            reasons[verb] = ""
        except NodeVerbRefused as exc:
            reasons[verb] = str(exc)
    return reasons


def describe_mark(workflow: WorkflowJob, node: WorkflowNode, status: str) -> list[str]:
    """A mark in lines for a confirmation page: the node's move and the transition the workflow takes."""
    lines = [f"node {node.name} of {workflow.id}: {node.status} -> {status} (attempt {node.attempt})"]
    if node.status == NodeStatus.RUNNING:
        lines.append(f"its running attempt {node.attempt} on {node.worker or 'a worker'} is fenced off; "
                     "its task is revoked")
    if workflow.definition:
        spec = definition_of(workflow).nodes.get(node.name)
        target = (spec.to[0] if spec and spec.to else "") if status == NodeStatus.OK else (spec.error_to if spec else "")
        held = " when the workflow is resumed" if workflow.status == WorkflowStatus.SUSPENDED else ""
        lines.append(f"the workflow takes its {status.lower()} transition to {target or '-'}{held}")
    else:
        ends = WorkflowStatus.SUCCEEDED if status == NodeStatus.OK else WorkflowStatus.FAILED
        lines.append(f"workflow {workflow.id}: {workflow.status} -> {ends} (its parent is told)")
    return lines

