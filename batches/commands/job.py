"""The admin verbs on a job (release, resume, requeue, delete, priority), as a command.

It runs under the job's object key, like its stages (`batches.commands.stage`) (its primary identifier when the submitter gave one, else
its local id, else the job itself), so two versions of one object never interleave.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from batches.choices import RESUME_STAGE, BatchStatus
from batches.choices import JobStatus as J
from batches.commands.stage import fill_after_commit, load_job
from batches.lifecycle import appended, history_entry, move
from batches.models import BatchJob
from kernel.statemachine import IllegalTransition
from operations.services import reopen_job
from xcommands.base import XCommand
from xcommands.errors import PreconditionFailed

log = logging.getLogger(__name__)


# ---- admin verbs --------------------------------------------------------------------------------

JOB_VERBS = ("release", "resume", "requeue", "delete", "priority")


def check_job_verb(job: BatchJob, verb: str, *, confirmed: bool = False) -> str:
    """The status the verb moves the job to (IllegalTransition if its status does not allow it)."""
    if verb == "release":
        if job.status != J.HELD:
            raise IllegalTransition(f"job {job.pk} is {job.status}; only a held job can be released")
        return J.PENDING
    if verb == "resume":
        if job.status != J.FAILED:
            raise IllegalTransition(f"job {job.pk} is {job.status}; only a failed job can be resumed")
        target = RESUME_STAGE.get(job.last_successful_status)
        if target is None:
            raise IllegalTransition(
                f"job {job.pk} failed before any stage succeeded ({job.error[:200] or 'no error'}): "
                "requeue it from the start, or submit it again"
            )
        return target
    if verb == "requeue":
        if job.status != J.FAILED:
            raise IllegalTransition(f"job {job.pk} is {job.status}; only a failed job can be requeued")
        return J.PENDING
    if verb == "delete":
        if job.status not in (J.FAILED, J.HELD):
            raise IllegalTransition(f"job {job.pk} is {job.status}; only failed or held jobs can be deleted")
        if job.batch.status not in (BatchStatus.COMPLETED, BatchStatus.FAILED) and not confirmed:
            raise NeedsConfirmation(
                f"batch {job.batch_id} is {job.batch.status}: deleting job {job.pk} means its depositor is never "
                "told about it; confirm to delete"
            )
        return J.DELETED
    if verb == "priority":
        return job.status
    raise ValueError(f"unknown job verb {verb!r}: use {', '.join(JOB_VERBS)}")


class NeedsConfirmation(IllegalTransition):
    """A delete the seed asks to confirm (the batch is not complete): refused until confirmed."""


@dataclass
class BatchJobAdminXCommand(XCommand):
    """An admin verb on a job, under its object key, checked again here: release, resume, requeue, delete, priority."""

    job_id: int
    verb: str
    key: str = ""
    priority: int | None = None
    confirmed: bool = False
    actor: str = ""

    def job_key(self) -> str:
        """The object's key: after anything queued for the job."""
        return self.key or f"batch-job:{self.job_id}"

    def load_state(self) -> None:
        """The job, locked."""
        self.job = load_job(self.job_id, lock=True)

    def verify_precondition(self) -> None:
        """The verb still applies (the job may have moved since the request)."""
        try:
            self.target = check_job_verb(self.job, self.verb, confirmed=self.confirmed)
        except IllegalTransition as exc:
            raise PreconditionFailed(str(exc)) from exc
        if self.job.dispatched and self.verb != "priority":
            raise PreconditionFailed(f"job {self.job.pk} has a stage running")

    def execute(self) -> dict[str, Any]:
        """Move the job; a resumed or requeued one counts again in its batch's operation while that runs."""
        job = self.job
        who = f" by {self.actor}" if self.actor else ""
        if self.verb == "priority":
            old = job.priority
            BatchJob.objects.filter(pk=job.pk).update(
                priority=self.priority, history=appended(job.history, history_entry(
                    job.status, job.status, f"priority {old} -> {self.priority}{who}"))
            )
            fill_after_commit()
            return {"job": job.pk, "priority": self.priority}
        fields: dict[str, Any] = {}
        if self.verb in ("resume", "requeue"):
            fields["retry_count"] = job.retry_count + 1
            fields["error"] = ""
            if job.batch.operation_id is not None:
                reopen_job(job.batch.operation_id, str(job.pk))
        if self.verb == "requeue":
            fields.update(last_successful_status="", files=[] if job.payload_type == "manifest-of-manifests" else [
                {k: v for k, v in f.items() if k not in ("done", "computed")} for f in job.files
            ], space_needed=None)
        move(job, self.target, note=f"{self.verb}{who}", fields=fields)  # a deletion ends its operation job too
        fill_after_commit()
        return {"job": job.pk, "verb": self.verb, "to": self.target}

