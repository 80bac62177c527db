"""The base of the workflow commands: one workflow job, ordered under its parent's key."""

from __future__ import annotations

from dataclasses import dataclass

from workflows.models import WorkflowJob
from xcommands.base import XCommand


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
