"""The workflow node a coordinator action runs."""

from __future__ import annotations

from coordinators.models import CoordinatorAction
from workflows.models import WorkflowNode


def node_of(action: CoordinatorAction) -> WorkflowNode:
    """The node of the action's current run."""
    action.refresh_from_db()
    return WorkflowNode.objects.select_related("workflow").get(workflow_id=action.external_id)
