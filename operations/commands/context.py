"""What a running job sees: its progress, its attempt, whether its operation was cancelled, and how to end it."""

from __future__ import annotations

import logging
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from kernel.history import record_status
from operations.choices import JOB_UNFINISHED, JobStatus, OperationStatus
from operations.commands.complete import OperationCompleteXCommand
from operations.models import OPERATION_JOB_KIND, Operation, OperationJob
from xcommands.queue import enqueue

log = logging.getLogger(__name__)


class JobContext:
    """The seed's JobContext: progress and the conditional write of the job's outcome."""

    def __init__(self, job: OperationJob, operation: Operation) -> None:
        self.job = job
        self.operation = operation
        self.progress: dict[str, Any] = dict(job.progress or {})
        self.attempt = job.attempts
        self.completed = False
        self.written: bool | None = None

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

        The job whose outcome makes the operation's `remaining` count 0 queues the completion
        (on the target's key): the count is decremented under the operation's row lock, so
        exactly one job sees 0, however many end at once. Returns whether this call wrote
        the outcome.
        """
        self.completed = True
        try:
            with transaction.atomic():
                written = OperationJob.objects.filter(pk=self.job.pk, status__in=sorted(JOB_UNFINISHED)).update(
                    status=JobStatus.SUCCEEDED if success else JobStatus.FAILED, error=error[:8000],
                    finished_at=timezone.now(), attempts=self.job.attempts, progress=self.progress,
                )
                if not written:
                    raise _NotWritten("the job has its outcome already")
                record_status(OPERATION_JOB_KIND, self.job.partition, self.job.status,
                              JobStatus.SUCCEEDED if success else JobStatus.FAILED, parent=self.operation.pk,
                              reason=error[:4000])
                remaining = _count_down(self.operation.pk)
                if remaining is None:
                    raise _NotWritten(f"operation {self.operation.pk} is no longer running")
                if remaining == 0:
                    enqueue(OperationCompleteXCommand(operation_id=self.operation.pk, target=self.operation.target))
        except _NotWritten as reason:
            log.info("operation %s job %s: %s; %s ignored", self.operation.pk, self.job.partition, reason,
                     "success" if success else "failure")
            self.written = False
            return False
        self.written = True
        return True


class _NotWritten(Exception):  # noqa: N818
    """Rolls back a job's outcome that must not be written (savepoint)."""


def _count_down(operation_id: int) -> int | None:
    """Decrement a running operation's remaining jobs (locking its row); the new count, None if it is not running."""
    table = Operation._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET remaining = remaining - 1 WHERE id = %s AND status = %s RETURNING remaining",  # noqa: S608
            [operation_id, OperationStatus.RUNNING],
        )
        row = cursor.fetchone()
    return None if row is None else int(row[0])
