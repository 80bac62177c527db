"""What other apps call on workflow jobs: kill (for now; suspend and resume come with workflow apps)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from functools import partial

from django.db import transaction

from workflows.choices import NODE_LIVE, WORKFLOW_TERMINAL, NodeStatus, WorkflowStatus
from workflows.models import WorkflowJob, WorkflowNode

log = logging.getLogger(__name__)


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
