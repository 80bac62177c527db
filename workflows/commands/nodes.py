"""Clear and mark one node of a workflow job, for an operator (Airflow's clear and mark success / failed).

On the parent's key, as the other workflow verbs: a node verb and the coordinator job's own
commands on that action never overlap. The checks run again here (the service checked when it
queued): a node that moved meanwhile (it ended, it was cleared) skips the command.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from workflows.commands.base import WorkflowCommand
from workflows.models import WorkflowNode
from workflows.node_verbs import NodeVerbRefused, check_clear, check_mark, clear_node, mark_node
from xcommands.errors import PreconditionFailed


@dataclass
class WfNodeMarkXCommand(WorkflowCommand):
    """A live node ends as OK or ERROR (its running attempt fenced off); the workflow takes that transition."""

    node: str = ""
    status: str = ""
    by: str = ""

    def verify_precondition(self) -> None:
        """The node is still live and its workflow running or suspended."""
        row = WorkflowNode.objects.filter(workflow_id=self.workflow_id, name=self.node).first()
        if row is None:
            raise PreconditionFailed(f"workflow {self.workflow_id} has no node {self.node!r}")
        try:
            check_mark(self.workflow, row, self.status)
        except NodeVerbRefused as exc:
            raise PreconditionFailed(str(exc)) from exc

    def execute(self) -> dict[str, Any]:
        """Mark it (checked again under the row locks)."""
        try:
            node = mark_node(self.workflow_id, self.node, self.status, now=timezone.now(), by=self.by)
        except NodeVerbRefused as exc:
            return {"status": "unchanged", "reason": str(exc)}
        return {"node": node.id, "status": node.status}


@dataclass
class WfNodeClearXCommand(WorkflowCommand):
    """An ended node runs again (optionally every node after it too); the workflow continues from it."""

    node: str = ""
    downstream: bool = False
    by: str = ""

    def verify_precondition(self) -> None:
        """The node is still ended and its workflow can take it back."""
        try:
            check_clear(self.workflow, self.node, downstream=self.downstream)
        except NodeVerbRefused as exc:
            raise PreconditionFailed(str(exc)) from exc

    def execute(self) -> dict[str, Any]:
        """Clear it (checked again under the row locks)."""
        try:
            plan = clear_node(self.workflow_id, self.node, downstream=self.downstream, now=timezone.now(), by=self.by)
        except NodeVerbRefused as exc:
            return {"status": "unchanged", "reason": str(exc)}
        return {"node": plan.node, "rerun": list(plan.rerun), "kept": list(plan.kept), "stopped": list(plan.stopped)}
