"""What other apps call on workflow jobs: kill, suspend and resume (docs/adr/0012-workflow-jobs-api.md).

`request_control` is the domain action the APIs call (the caller's permission check comes in
as a function: workflows know nothing of their parents); it queues a Wf* command on the
parent's key. The commands call `kill_workflows`, `suspend_workflow` and `resume_workflow`,
which lock the nodes before the workflow row, the order the worker's report takes them in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import datetime
from functools import partial

from django.db import transaction

from workflows.choices import (
    NODE_LIVE,
    NODE_TERMINAL,
    WORKFLOW_TERMINAL,
    NodeStatus,
    WorkflowStatus,
)
from workflows.models import WorkflowJob, WorkflowNode

log = logging.getLogger(__name__)

VERBS = ("kill", "suspend", "resume")
#: The statuses each verb acts on; in any other the verb does nothing (Oozie's skipped precondition).
VERB_FROM: dict[str, frozenset[str]] = {
    "kill": frozenset({WorkflowStatus.PREP, WorkflowStatus.RUNNING, WorkflowStatus.SUSPENDED}),
    "suspend": frozenset({WorkflowStatus.RUNNING}),
    "resume": frozenset({WorkflowStatus.SUSPENDED}),
}
TASK_NODE_TYPE = "celery-task"


class VerbNotSupported(ValueError):
    """The verb cannot act on this kind of workflow (a `batch:` run is held through its batch)."""


def parent_key(workflow: WorkflowJob) -> str:
    """The key of the commands on a workflow: its parent coordinator job's (the action id before '@'), else its own."""
    if workflow.coord_action_id:
        return workflow.coord_action_id.rpartition("@")[0]
    return workflow.id


def request_control(workflow_id: str, verb: str, *, check: Callable[[WorkflowJob], None], reason: str = "") -> bool:
    """Queue kill, suspend or resume on the parent's key if the status allows it; False (nothing queued) if not.

    `check(workflow)` raises when the caller may not act (the parent's permission rule). A
    status the verb does not apply to is not an error: Oozie answers such a request and does
    nothing. Suspending a run whose node is not a Celery task raises VerbNotSupported.
    """
    from workflows.commands import WfKillXCommand, WfResumeXCommand, WfSuspendXCommand
    from xcommands.queue import enqueue

    if verb not in VERBS:
        raise ValueError(f"unknown verb {verb!r}; use {', '.join(VERBS)}")
    with transaction.atomic():
        workflow = WorkflowJob.objects.get(pk=workflow_id)
        check(workflow)
        if verb == "suspend" and workflow.nodes.exclude(type=TASK_NODE_TYPE).exists():
            raise VerbNotSupported(
                f"workflow {workflow.id} runs {workflow.app_path}: hold and release its batch instead"
            )
        if workflow.status not in VERB_FROM[verb]:
            log.info("%s of workflow %s ignored: it is %s", verb, workflow.id, workflow.status)
            return False
        key = parent_key(workflow)
        if verb == "kill":
            enqueue(WfKillXCommand(key=key, workflow_id=workflow.id, reason=reason or "killed"))
        elif verb == "suspend":
            enqueue(WfSuspendXCommand(key=key, workflow_id=workflow.id))
        else:
            enqueue(WfResumeXCommand(key=key, workflow_id=workflow.id))
    return True


def kill_workflows(workflow_ids: Iterable[str], now: datetime, reason: str = "killed") -> int:
    """KILLED workflow jobs and live nodes (in the caller's transaction); their tasks are revoked after commit.

    A worker still running a killed node finds the node moved when it reports, so its
    outcome is discarded; the parent is not told (the caller is the one killing).
    """
    ids = [workflow_id for workflow_id in workflow_ids if workflow_id]
    if not ids:
        return 0
    nodes = list(WorkflowNode.objects.select_for_update().filter(workflow_id__in=ids, status__in=sorted(NODE_LIVE)))
    # A node with no task (a batch node waits for its batch) has nothing to revoke.
    task_ids = [node.task_id for node in nodes if node.status == NodeStatus.RUNNING and node.task_id]
    for node in nodes:
        node.transition_to(NodeStatus.KILLED)
        node.ended_at, node.lease_expires_at = now, None
        node.history = [*node.history, {"attempt": node.attempt, "worker": node.worker, "outcome": NodeStatus.KILLED,
                                        "ended": now.isoformat(timespec="milliseconds"), "error": reason}]
        node.save(update_fields=["status", "ended_at", "lease_expires_at", "history"])
    killed = WorkflowJob.objects.filter(pk__in=ids).exclude(status__in=sorted(WORKFLOW_TERMINAL)).update(
        status=WorkflowStatus.KILLED, ended_at=now, error_message=reason, last_modified=now
    )
    transaction.on_commit(partial(revoke, task_ids))
    return killed


def revoke(task_ids: list[str]) -> None:
    """Stop running node tasks (after commit; best effort: a worker that misses it is fenced out anyway)."""
    if not task_ids:
        return
    from project.celery import app

    try:
        app.control.revoke(task_ids, terminate=True)
    except Exception as exc:  # the broker may be down: the kill is recorded, the task's outcome fenced out
        log.warning("could not revoke %s task(s): %s", len(task_ids), exc)


def suspend_workflow(workflow_id: str, now: datetime) -> bool:
    """RUNNING -> SUSPENDED (caller's transaction): a queued node is not claimed; a running one ends, its end held."""
    list(WorkflowNode.objects.select_for_update().filter(workflow_id=workflow_id).order_by("id"))  # nodes first
    workflow = WorkflowJob.objects.select_for_update().get(pk=workflow_id)
    if workflow.status != WorkflowStatus.RUNNING:
        return False
    workflow.transition_to(WorkflowStatus.SUSPENDED)
    workflow.last_modified = now
    workflow.save(update_fields=["status", "last_modified"])
    return True


def resume_workflow(workflow_id: str, now: datetime) -> bool:
    """SUSPENDED -> RUNNING (caller's transaction): queued nodes are sent again; a node that ended meanwhile ends the workflow."""
    from workflows.launch import dispatch_on_commit
    from workflows.runner import end_workflow

    nodes = list(WorkflowNode.objects.select_for_update().filter(workflow_id=workflow_id).order_by("id"))
    workflow = WorkflowJob.objects.select_for_update().get(pk=workflow_id)
    if workflow.status != WorkflowStatus.SUSPENDED:
        return False
    workflow.transition_to(WorkflowStatus.RUNNING)
    workflow.last_modified = now
    workflow.save(update_fields=["status", "last_modified"])
    for node in nodes:
        node.workflow = workflow
        if node.status == NodeStatus.PREP:
            node.dispatched_at, node.dispatches = now, node.dispatches + 1
            node.save(update_fields=["dispatched_at", "dispatches"])
            dispatch_on_commit(node)
    ended = [node for node in nodes if node.status in NODE_TERMINAL]
    if ended:
        end_workflow(ended[0], now)
    return True
