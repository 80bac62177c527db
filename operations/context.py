"""What a running job sees: its progress, its attempt, whether its operation was cancelled, and how to end it."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.utils import timezone

from operations.choices import JOB_UNFINISHED, JobStatus, OperationStatus
from operations.models import Operation, OperationJob

log = logging.getLogger(__name__)


class JobContext:
    """The seed's JobContext: progress and the conditional write of the job's outcome."""

    def __init__(self, job: OperationJob, operation: Operation) -> None:
        self.job = job
        self.operation = operation
        self.progress: dict[str, Any] = dict(job.progress or {})
        self.attempt = job.attempts
        self.completed = False

    def _still_open(self) -> Any:
        return OperationJob.objects.filter(
            pk=self.job.pk, status__in=sorted(JOB_UNFINISHED), operation__status=OperationStatus.RUNNING
        )

    def save_progress(self, progress: dict[str, Any]) -> bool:
        """Record how far the job got (committed now unless the job runs in one transaction); False if it ended meanwhile."""
        self.progress = dict(progress)
        with transaction.atomic():
            return bool(self._still_open().update(progress=self.progress))

    @property
    def cancelled(self) -> bool:
        """Whether the operation was cancelled (or the job ended otherwise): a long job should stop."""
        return not self._still_open().exists()

    def mark_complete(self, success: bool, error: str = "") -> bool:
        """Write the job's outcome if the operation runs and the job has none yet; a second write is a no-op.

        The last job to end queues the operation's completion (on the target's key). Returns
        whether this call wrote the outcome.
        """
        from operations.commands import OperationCompleteXCommand
        from xcommands.queue import enqueue

        self.completed = True
        now = timezone.now()
        with transaction.atomic():
            # The operation's row lock orders the outcomes of its jobs: whoever writes the last
            # one sees every other outcome committed, so exactly someone queues the completion.
            Operation.objects.select_for_update().filter(pk=self.operation.pk).first()
            written = self._still_open().update(
                status=JobStatus.SUCCEEDED if success else JobStatus.FAILED, error=error[:8000], finished_at=now,
            )
            if not written:
                log.info("operation %s job %s: outcome already written; %s ignored", self.operation.pk,
                         self.job.partition, "success" if success else "failure")
                return False
            if not OperationJob.objects.filter(operation_id=self.operation.pk, status__in=sorted(JOB_UNFINISHED)).exists():
                enqueue(OperationCompleteXCommand(operation_id=self.operation.pk, target=self.operation.target))
        return True
