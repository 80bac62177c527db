"""Start a submitted workflow application, and rerun an ended one (Oozie's StartXCommand, ReRunXCommand)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from workflows.choices import WORKFLOW_TERMINAL, WorkflowStatus
from workflows.commands.base import WorkflowCommand
from workflows.engine import rerun, start_job
from workflows.models import WorkflowJob
from xcommands.errors import PreconditionFailed


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
        rerun(self.workflow, timezone.now(), configuration=self.configuration, skip_nodes=self.skip_nodes,
              fail_nodes=self.fail_nodes)
        return {"status": self.workflow.status, "run": self.workflow.run}
