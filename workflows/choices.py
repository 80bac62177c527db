"""Workflow job and node statuses: enums, groups and transition tables (Oozie's WorkflowJob/WorkflowAction)."""

from __future__ import annotations

from django.db import models


class WorkflowStatus(models.TextChoices):
    """Status of a workflow job (Oozie's WorkflowJob.Status)."""

    PREP = "PREP"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    SUCCEEDED = "SUCCEEDED"
    KILLED = "KILLED"
    FAILED = "FAILED"


class NodeStatus(models.TextChoices):
    """Status of one node (Oozie's WorkflowAction.Status): queued, under a lease, or ended."""

    PREP = "PREP"  # its message is sent; no worker has claimed this attempt yet
    RUNNING = "RUNNING"  # a worker holds the lease and runs it
    OK = "OK"  # ran to the end
    ERROR = "ERROR"  # the task raised: its own failure
    KILLED = "KILLED"
    FAILED = "FAILED"  # could not run: lost its worker too often, or the task does not exist
    USER_RETRY = "USER_RETRY"  # ended in ERROR with user retries left (retry-max): runs again at retry_at


W, N = WorkflowStatus, NodeStatus

WORKFLOW_TERMINAL = frozenset({W.SUCCEEDED, W.KILLED, W.FAILED})
NODE_TERMINAL = frozenset({N.OK, N.ERROR, N.KILLED, N.FAILED})
NODE_LIVE = frozenset({N.PREP, N.RUNNING, N.USER_RETRY})

WORKFLOW_TRANSITIONS: dict[str, frozenset[str]] = {
    W.PREP: frozenset({W.RUNNING, W.KILLED, W.FAILED}),
    W.RUNNING: frozenset({W.SUSPENDED, W.SUCCEEDED, W.KILLED, W.FAILED}),
    W.SUSPENDED: frozenset({W.RUNNING, W.KILLED}),
    W.SUCCEEDED: frozenset(),
    W.KILLED: frozenset(),
    W.FAILED: frozenset(),
}

NODE_TRANSITIONS: dict[str, frozenset[str]] = {
    # PREP or USER_RETRY -> OK or ERROR: an operator marked the node (workflows.node_verbs, Airflow's mark
    # success / failed); the run it waited for never happens.
    N.PREP: frozenset({N.RUNNING, N.KILLED, N.FAILED, N.OK, N.ERROR}),
    # RUNNING -> PREP: its worker was lost (lease expired) and the node is launched again.
    N.RUNNING: frozenset({N.OK, N.ERROR, N.KILLED, N.FAILED, N.PREP, N.USER_RETRY}),
    N.USER_RETRY: frozenset({N.PREP, N.KILLED, N.OK, N.ERROR}),
    N.OK: frozenset(),
    N.ERROR: frozenset({N.USER_RETRY}),  # user retry (retry-max): runs again later
    N.KILLED: frozenset(),
    N.FAILED: frozenset(),
}

# The workflow status a node's end implies, for single-node (task:) workflows.
WORKFLOW_OF_NODE: dict[str, str] = {N.OK: W.SUCCEEDED, N.ERROR: W.FAILED, N.KILLED: W.KILLED, N.FAILED: W.FAILED}
