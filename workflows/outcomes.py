"""How a node's run ended, stored: the node's end, and the end of a one-node (`task:`) workflow.

The bottom of the workflow runtime: the worker's report (`workflows.runner`), the engine
(a sub-workflow's end, one that could not start) and the launchers of other apps (a batch a
node waits for) store a node's end here, each then taking the step its kind of workflow needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workflows import parents
from workflows.choices import WORKFLOW_OF_NODE
from workflows.models import WorkflowNode

MAX_ERROR_CHARS = 4000


@dataclass(frozen=True)
class Outcome:
    """How a node's run ended: OK, ERROR (the task raised) or FAILED (it could not run).

    `transient`: the task raised an infrastructure error (a database or broker connection
    lost, a timeout): the node is launched again while launches remain (Oozie's START_RETRY).
    """

    status: str
    error_code: str = ""
    error_message: str = ""
    transient: bool = False
    data: dict[str, str] | None = None  # captured output (wf:actionData)
    external_id: str = ""
    external_status: str = ""


def store_end(node: WorkflowNode, outcome: Outcome, now: Any) -> None:
    """Store the node's end (caller's transaction, the node row locked); nothing follows from it here."""
    node.transition_to(outcome.status)
    node.ended_at = now
    node.lease_expires_at = None
    node.error_code, node.error_message = outcome.error_code, outcome.error_message
    fields = ["status", "ended_at", "lease_expires_at", "error_code", "error_message", "history"]
    if outcome.data is not None:
        node.data = outcome.data
        fields.append("data")
    if outcome.external_id or outcome.external_status:
        node.external_id, node.external_status = outcome.external_id, outcome.external_status
        fields += ["external_id", "external_status"]
    node.save(update_fields=fields)


def end_workflow(node: WorkflowNode, now: Any) -> None:
    """End the node's workflow as its (ended) node implies and tell the parent (caller's transaction)."""
    workflow = node.workflow
    workflow.transition_to(WORKFLOW_OF_NODE[node.status])
    workflow.ended_at = now
    workflow.error_code, workflow.error_message = node.error_code, node.error_message
    workflow.save(update_fields=["status", "ended_at", "error_code", "error_message", "last_modified"])
    parents.ended(workflow, node)
