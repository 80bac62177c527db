"""The commands of operations: a job's attempt (on its partition's key), its cancellation, the completion."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from operations.choices import JOB_UNFINISHED, JobStatus, OperationStatus
from operations.context import JobContext
from operations.models import Operation, OperationJob, completion_key
from operations.registry import operation_type
from xcommands.base import XCommand
from xcommands.errors import PreconditionFailed

log = logging.getLogger(__name__)


@dataclass
class OperationJobXCommand(XCommand):
    """One attempt of one job: resume from its progress (or start over), end with its outcome.

    A worker killed mid-job leaves the command's lease to expire; the engine runs it again and
    the job resumes. An error retries with backoff (the type's `max_retries`); after the last
    attempt the rollback cleans the job up and records it FAILED.
    """

    operation_id: int
    partition: str

    def job_key(self) -> str:
        """The partition's key: the job is ordered with everything else done to that partition."""
        return self.partition

    def load_state(self) -> None:
        """The operation, its type and this partition's job."""
        self.operation = Operation.objects.get(pk=self.operation_id)
        self.job = OperationJob.objects.get(operation_id=self.operation_id, partition=self.partition)
        self.kind = operation_type(self.operation.type)

    def is_atomic(self) -> bool:
        """Short jobs commit their work with their outcome; long ones commit progress as they go."""
        return operation_type(Operation.objects.values_list("type", flat=True).get(pk=self.operation_id)).atomic_jobs

    def verify_precondition(self) -> None:
        """A job runs while its operation runs and it has no outcome yet."""
        if self.operation.status != OperationStatus.RUNNING or self.job.status not in JOB_UNFINISHED:
            raise PreconditionFailed(
                f"operation {self.operation_id} is {self.operation.status}, job {self.partition} is {self.job.status}"
            )

    def execute(self) -> dict[str, Any]:
        """Count the attempt, run the type's job logic, and mark success unless it ended the job itself."""
        job, kind = self.job, self.kind
        with transaction.atomic():
            job.attempts += 1
            if not kind.resumable and job.attempts > 1:
                job.progress = {}  # a volatile job starts over
            OperationJob.objects.filter(pk=job.pk, status__in=sorted(JOB_UNFINISHED)).update(
                status=JobStatus.RUNNING, attempts=job.attempts, progress=job.progress,
                started_at=job.started_at or timezone.now(),
            )
        context = JobContext(job, self.operation)
        kind.start_or_resume_job(self.operation.arg, self.partition, context)
        if not context.completed:
            context.mark_complete(True)
        return {"attempt": job.attempts, "progress": context.progress}

    def rollback(self, error: str) -> None:
        """The last attempt failed: clean the job up and record it FAILED with the error's last line."""
        operation = Operation.objects.get(pk=self.operation_id)
        job = OperationJob.objects.get(operation_id=self.operation_id, partition=self.partition)
        operation_type(operation.type).cancel_job_and_cleanup(operation.arg, self.partition)
        reason = (error.strip().splitlines() or ["failed"])[-1]
        JobContext(job, operation).mark_complete(False, reason)


@dataclass
class OperationJobCancelXCommand(XCommand):
    """Clean up a cancelled job (on its partition's key, after anything the job was doing there)."""

    operation_id: int
    partition: str

    def job_key(self) -> str:
        """The partition's key."""
        return self.partition

    def execute(self) -> None:
        """The type's cancel_job_and_cleanup."""
        operation = Operation.objects.get(pk=self.operation_id)
        operation_type(operation.type).cancel_job_and_cleanup(operation.arg, self.partition)


@dataclass
class OperationCompleteXCommand(XCommand):
    """Complete an operation whose jobs all ended: run its completion logic, then record it once.

    Runs on the target's key. The completion logic may run more than once (a crash before the
    commit, or two completions queued): the record is a conditional write on RUNNING, so the
    operation is marked once and every reader sees one result.
    """

    operation_id: int
    target: str

    def job_key(self) -> str:
        """The target's reserved key."""
        return completion_key(self.target)

    def load_state(self) -> None:
        """The operation, locked."""
        self.operation = Operation.objects.select_for_update().get(pk=self.operation_id)

    def verify_precondition(self) -> None:
        """Only a running operation whose jobs all have an outcome completes."""
        if self.operation.status != OperationStatus.RUNNING:
            raise PreconditionFailed(f"operation {self.operation_id} is already {self.operation.status}")
        if self.operation.jobs.filter(status__in=sorted(JOB_UNFINISHED)).exists():
            raise PreconditionFailed(f"operation {self.operation_id} still has unfinished jobs")

    def execute(self) -> dict[str, Any]:
        """Succeeded when every job did; the type's completion result plus the counts and the failures."""
        operation = self.operation
        kind = operation_type(operation.type)
        counts = job_counts(operation)
        success = counts.get(JobStatus.FAILED, 0) == 0
        if not success and not kind.may_fail:
            log.error("operation %s (%s) cannot fail, yet %s job(s) failed", operation.pk, operation.type,
                      counts[JobStatus.FAILED])
        result = kind.complete_operation(operation.arg, operation.target, success)
        summary = {"counts": counts, "failed": failed_jobs(operation), "result": result}
        marked = Operation.objects.filter(pk=operation.pk, status=OperationStatus.RUNNING).update(
            status=OperationStatus.SUCCEEDED if success else OperationStatus.FAILED,
            result=summary, finished_at=timezone.now(),
        )
        return {"marked": marked, "success": success}


def job_counts(operation: Operation) -> dict[str, int]:
    """How many of the operation's jobs are in each status."""
    rows = operation.jobs.values("status").annotate(n=Count("pk")).values_list("status", "n")
    return {str(status): int(n) for status, n in rows}


def failed_jobs(operation: Operation, limit: int = 1000) -> list[dict[str, str]]:
    """The failed jobs and why (at most `limit`)."""
    rows = operation.jobs.filter(status=JobStatus.FAILED).order_by("partition").values_list("partition", "error")
    return [{"partition": partition, "error": error} for partition, error in rows[:limit]]
