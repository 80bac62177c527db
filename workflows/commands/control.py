"""Kill, suspend and resume a workflow job (Oozie's KillXCommand, SuspendXCommand, ResumeXCommand)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from workflows import parents
from workflows.choices import WORKFLOW_TERMINAL, WorkflowStatus
from workflows.commands.base import WorkflowCommand
from workflows.engine import kill_tree, resume_workflow, sub_workflow_ended
from workflows.models import WorkflowJob
from workflows.states import kill_workflows, suspend_workflow
from xcommands.errors import PreconditionFailed


@dataclass
class WfKillXCommand(WorkflowCommand):
    """KILLED workflow and live nodes, their tasks revoked; the parent action follows (KILLED) as Oozie's does."""

    reason: str = "killed"

    def verify_precondition(self) -> None:
        """A workflow that already ended is left alone."""
        if self.workflow.status in WORKFLOW_TERMINAL:
            raise PreconditionFailed(f"workflow {self.workflow_id} is already {self.workflow.status}")

    def execute(self) -> dict[str, Any]:
        """Kill it (and its sub-workflows), then tell the parent in this transaction (its status command runs next)."""
        now = timezone.now()
        if self.workflow.definition:
            kill_tree(self.workflow_id, now, reason=self.reason)
        elif not kill_workflows([self.workflow_id], now, reason=self.reason):
            return {"status": "unchanged"}  # it ended between the check and the kill's conditional write
        workflow = WorkflowJob.objects.get(pk=self.workflow_id)
        if workflow.status != WorkflowStatus.KILLED:
            return {"status": "unchanged"}
        if workflow.parent_node:
            sub_workflow_ended(workflow, now)  # the parent's sub-workflow node ends (ERROR: its error path)
            return {"status": workflow.status}
        node = workflow.nodes.order_by("-ended_at", "id").first()
        if node is not None:
            parents.ended(workflow, node)
        return {"status": workflow.status}


@dataclass
class WfSuspendXCommand(WorkflowCommand):
    """RUNNING -> SUSPENDED: nothing more is dispatched; a running task finishes and its end waits for resume."""

    def verify_precondition(self) -> None:
        """Only a RUNNING workflow suspends."""
        if self.workflow.status != WorkflowStatus.RUNNING:
            raise PreconditionFailed(f"workflow {self.workflow_id} is {self.workflow.status}; it cannot be suspended")

    def execute(self) -> dict[str, Any]:
        """Suspend (conditional on the status under the row lock)."""
        changed = suspend_workflow(self.workflow_id, timezone.now())
        return {"status": WorkflowStatus.SUSPENDED if changed else "unchanged"}


@dataclass
class WfResumeXCommand(WorkflowCommand):
    """SUSPENDED -> RUNNING: a queued node is sent again; a node that ended while suspended ends the workflow now."""

    def verify_precondition(self) -> None:
        """Only a SUSPENDED workflow resumes."""
        if self.workflow.status != WorkflowStatus.SUSPENDED:
            raise PreconditionFailed(f"workflow {self.workflow_id} is {self.workflow.status}; it is not suspended")

    def execute(self) -> dict[str, Any]:
        """Resume (conditional on the status under the row lock)."""
        changed = resume_workflow(self.workflow_id, timezone.now())
        status = WorkflowJob.objects.filter(pk=self.workflow_id).values_list("status", flat=True).first()
        return {"status": status if changed else "unchanged"}
