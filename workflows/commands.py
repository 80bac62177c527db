"""Workflow verbs as commands (Oozie's KillXCommand, SuspendXCommand, ResumeXCommand), on the parent's key.

A workflow launched by a coordinator action is changed under its coordinator job's key, so a
verb and the job's own commands on that action (status reports, kill, rerun) never overlap
and run in the order they were asked. A status the verb no longer applies to (the run ended
meanwhile) skips the command, as Oozie's preconditions do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from workflows import parents
from workflows.choices import WORKFLOW_TERMINAL, WorkflowStatus
from workflows.models import WorkflowJob
from workflows.states import kill_workflows, resume_workflow, suspend_workflow
from xcommands.base import XCommand
from xcommands.errors import PreconditionFailed


@dataclass
class WorkflowCommand(XCommand):
    """A verb on one workflow job, ordered under `key` (its parent coordinator job's id)."""

    abstract = True
    key: str
    workflow_id: str

    def job_key(self) -> str:
        """The parent's key (see workflows.states.parent_key)."""
        return self.key

    def load_state(self) -> None:
        """Read the workflow (not locked here: the services lock its nodes first, then the row)."""
        self.workflow = WorkflowJob.objects.get(pk=self.workflow_id)


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
        from workflows.engine import kill_tree, sub_workflow_ended

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


@dataclass
class WfStartXCommand(WorkflowCommand):
    """PREP -> RUNNING for a submitted workflow application (Oozie's StartXCommand)."""

    def load_state(self) -> None:
        """The workflow row, locked."""
        self.workflow = WorkflowJob.objects.select_for_update().get(pk=self.workflow_id)

    def verify_precondition(self) -> None:
        """Only a PREP job starts."""
        if self.workflow.status != WorkflowStatus.PREP:
            raise PreconditionFailed(f"workflow {self.workflow_id} is {self.workflow.status}; only PREP jobs start")

    def execute(self) -> dict[str, Any]:
        """Enter its first node."""
        from workflows.engine import start_job

        start_job(self.workflow, timezone.now())
        return {"status": self.workflow.status}


@dataclass
class WfRerunXCommand(WorkflowCommand):
    """Run an ended workflow application again (spec 10): from its failed nodes, or skipping the named ones."""

    configuration: dict[str, str] = field(default_factory=dict)
    skip_nodes: list[str] = field(default_factory=list)
    fail_nodes: bool = False

    def load_state(self) -> None:
        """The workflow row, locked."""
        self.workflow = WorkflowJob.objects.select_for_update().get(pk=self.workflow_id)

    def verify_precondition(self) -> None:
        """Only an ended job reruns."""
        if self.workflow.status not in WORKFLOW_TERMINAL:
            raise PreconditionFailed(f"workflow {self.workflow_id} is {self.workflow.status}; only ended jobs rerun")

    def execute(self) -> dict[str, Any]:
        """Reset the nodes that run again and enter the first node."""
        from workflows.engine import rerun

        rerun(self.workflow, timezone.now(), configuration=self.configuration, skip_nodes=self.skip_nodes,
              fail_nodes=self.fail_nodes)
        return {"status": self.workflow.status, "run": self.workflow.run}
