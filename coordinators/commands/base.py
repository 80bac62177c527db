"""Base classes of coordinator commands: keyed by the coordinator job id, the job row locked."""

from __future__ import annotations

from coordinators.history import act_as_command
from coordinators.models import CoordinatorAction, CoordinatorJob
from xcommands.base import XCommand


class JobCommand(XCommand):
    """A command on one coordinator job: ordered per job, the job row locked while it runs."""

    abstract = True
    job_id: str

    def job_key(self) -> str:
        """Coordinator commands (and those of their actions) are ordered per job."""
        return self.job_id

    def load_state(self) -> None:
        """Lock the job row (status changes from here on are recorded as this command's)."""
        act_as_command(self.command_name, self.job_key())
        self.job = CoordinatorJob.objects.select_for_update().get(pk=self.job_id)


class ActionCommand(JobCommand):
    """A command on one action of a job: the job and action rows locked."""

    abstract = True
    number: int

    def load_state(self) -> None:
        """Lock the job, then the action (the order every command and service takes them in)."""
        act_as_command(self.command_name, self.job_key())
        self.job = CoordinatorJob.objects.select_for_update().get(pk=self.job_id)
        self.action = CoordinatorAction.objects.select_for_update().get(
            pk=CoordinatorAction.action_id(self.job_id, self.number)
        )
