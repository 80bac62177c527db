"""State changes of workflow jobs in the caller's transaction: kill and suspend; the key of their commands.

The library under the engine, the workflow commands and the parents' commands (commands
never import services); resuming takes held transitions, so it is the engine's
(`workflows.engine.resume_workflow`). Each locks the workflow row before its nodes, the order the worker's
report takes them in (docs/adr/0012-workflow-jobs-api.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from functools import partial

from celery import current_app as app  # project.celery's app, set up by this process
from django.db import transaction

from kernel.history import record_statuses
from workflows import notifications, parents
from workflows.choices import (
    NODE_LIVE,
    WORKFLOW_TERMINAL,
    NodeStatus,
    WorkflowStatus,
)
from workflows.models import WORKFLOW_KIND, WorkflowJob, WorkflowNode

log = logging.getLogger(__name__)


def parent_key(workflow: WorkflowJob) -> str:
    """The key of the commands on a workflow: its parent coordinator job's (the action id before '@'), else its own."""
    if workflow.coord_action_id:
        return workflow.coord_action_id.rpartition("@")[0]
    return workflow.id


def kill_workflows(workflow_ids: Iterable[str], now: datetime, reason: str = "killed") -> int:
    """KILLED workflow jobs and live nodes (in the caller's transaction); their tasks are revoked after commit.

    A worker still running a killed node finds the node moved when it reports, so its
    outcome is discarded; the parent is not told (the caller is the one killing).
    """
    ids = sorted(workflow_id for workflow_id in workflow_ids if workflow_id)
    if not ids:
        return 0
    list(WorkflowJob.objects.select_for_update().filter(pk__in=ids).order_by("id").values_list("id", flat=True))
    for workflow_id in ids:
        kill_nodes(workflow_id, now, reason)
    live = list(WorkflowJob.objects.filter(pk__in=ids).exclude(status__in=sorted(WORKFLOW_TERMINAL)))
    killed = WorkflowJob.objects.filter(pk__in=[w.pk for w in live]).update(
        status=WorkflowStatus.KILLED, ended_at=now, error_message=reason, last_modified=now
    )
    record_statuses((WORKFLOW_KIND, workflow.pk, workflow.status_parent(), workflow.status, WorkflowStatus.KILLED, now,
                     reason) for workflow in live)
    for workflow in live:
        workflow.status = WorkflowStatus.KILLED
        notifications.job_changed(workflow)
    return killed


def kill_nodes(workflow_id: str, now: datetime, reason: str = "killed") -> int:
    """KILLED the live nodes of one workflow (its row locked by the caller); their tasks revoked after commit."""
    nodes = list(WorkflowNode.objects.select_for_update().filter(workflow_id=workflow_id, status__in=sorted(NODE_LIVE)))
    # A node with no task (a batch node waits for its batch) has nothing to revoke.
    task_ids = [node.task_id for node in nodes if node.status == NodeStatus.RUNNING and node.task_id]
    for node in nodes:
        node.transition_to(NodeStatus.KILLED)
        node.ended_at, node.lease_expires_at = now, None
        node.history = [*node.history, {"attempt": node.attempt, "worker": node.worker, "outcome": NodeStatus.KILLED,
                                        "ended": now.isoformat(timespec="milliseconds"), "error": reason}]
        node.save(update_fields=["status", "ended_at", "lease_expires_at", "history"])
    transaction.on_commit(partial(revoke, task_ids))
    return len(nodes)


def revoke(task_ids: list[str]) -> None:
    """Stop running node tasks (after commit; best effort: a worker that misses it is fenced out anyway)."""
    if not task_ids:
        return

    try:
        app.control.revoke(task_ids, terminate=True)
    except Exception as exc:  # the broker may be down: the kill is recorded, the task's outcome fenced out
        log.warning("could not revoke %s task(s): %s", len(task_ids), exc)


def suspend_workflow(workflow_id: str, now: datetime) -> bool:
    """RUNNING -> SUSPENDED (caller's transaction): a queued node is not claimed; a running one ends, its end held."""
    return switch_suspended(workflow_id, now, suspend=True) is not None


def switch_suspended(workflow_id: str, now: datetime, *, suspend: bool) -> tuple[WorkflowJob, list[WorkflowNode]] | None:
    """RUNNING -> SUSPENDED (`suspend`) or back, in the caller's transaction, the parent told; the workflow and
    its nodes (locked, the row first) when it moved, None when its status did not allow it."""
    workflow = WorkflowJob.objects.select_for_update().get(pk=workflow_id)  # the row first, then the nodes
    nodes = list(WorkflowNode.objects.select_for_update().filter(workflow_id=workflow_id).order_by("id"))
    before, after = (WorkflowStatus.RUNNING, WorkflowStatus.SUSPENDED) if suspend else (
        WorkflowStatus.SUSPENDED, WorkflowStatus.RUNNING)
    if workflow.status != before:
        return None
    workflow.transition_to(after)
    workflow.last_modified = now
    workflow.save(update_fields=["status", "last_modified"])
    notifications.job_changed(workflow)
    parents.suspended_or_resumed(workflow, suspend)
    return workflow, nodes
