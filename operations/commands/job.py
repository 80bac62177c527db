"""A job's attempts (on its partition's key) and its cancellation."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from kernel.history import record_status
from operations.choices import JOB_UNFINISHED, JobStatus, OperationStatus
from operations.commands.context import JobContext
from operations.models import OPERATION_JOB_KIND, Operation, OperationJob
from operations.registry import operation_type
from xcommands.base import XCommand
from xcommands.errors import PreconditionFailed
from xcommands.queue import enqueue

log = logging.getLogger(__name__)


#: Jobs one command runs, one after the other, when several share a key (they would run in
#: that order anyway: one key, one command at a time).
JOBS_PER_COMMAND = 50


@dataclass
class OperationJobXCommand(XCommand):
    """Attempts of the jobs of some partitions sharing a key, in order: each resumes from its progress.

    Each job commits on its own (its work with its outcome, for atomic types), so a worker
    killed mid-way leaves the command's lease to expire and the engine runs it again: jobs
    with an outcome are passed over, the interrupted one resumes (or starts over). An error
    retries the command with backoff (the type's `max_retries`); after the last attempt the
    rollback cleans up the job that kept failing, records it FAILED, and queues the rest.
    """

    operation_id: int
    key: str
    partitions: list[str]
    kind: str = ""  # the operation's type, so is_atomic() needs no query

    def job_key(self) -> str:
        """The jobs' key: they are ordered with everything else done under it."""
        return self.key

    def is_atomic(self) -> bool:
        """Never one transaction for the whole command: each job commits on its own."""
        return False

    def load_state(self) -> None:
        """The operation and these partitions' jobs (one query, no model machinery: it is the hot path)."""
        rows = list(
            OperationJob.objects.filter(operation_id=self.operation_id, partition__in=self.partitions).values(
                "pk", "partition", "status", "progress", "attempts", "started_at",
                "operation__status", "operation__type", "operation__arg", "operation__target",
            )
        )
        if not rows:
            raise PreconditionFailed(f"operation {self.operation_id} has no job {self.partitions[:1]}")
        first = rows[0]
        self.operation = Operation(
            pk=self.operation_id, status=first["operation__status"], type=first["operation__type"],
            arg=first["operation__arg"], target=first["operation__target"],
        )
        self.type = operation_type(self.operation.type)
        by_partition = {row["partition"]: row for row in rows}
        self.jobs = [
            OperationJob(
                pk=row["pk"], operation_id=self.operation_id, partition=row["partition"], key=self.key,
                status=row["status"], progress=row["progress"], attempts=row["attempts"], started_at=row["started_at"],
            )
            for partition in self.partitions if (row := by_partition.get(partition)) is not None
        ]

    def verify_precondition(self) -> None:
        """Jobs run while their operation runs and while some have no outcome yet."""
        if self.operation.status != OperationStatus.RUNNING:
            raise PreconditionFailed(f"operation {self.operation_id} is {self.operation.status}")
        if not any(job.status in JOB_UNFINISHED for job in self.jobs):
            raise PreconditionFailed(f"the jobs of operation {self.operation_id} on {self.key} have their outcomes")

    def execute(self) -> dict[str, Any]:
        """Run each unfinished job in turn."""
        ran = 0
        for job in self.jobs:
            if job.status not in JOB_UNFINISHED:
                continue  # ended in an earlier attempt of this command
            if self.type.atomic_jobs:
                with transaction.atomic():
                    finished = self._run(job)
            else:
                finished = self._run(job)
            if finished is None:
                break  # the operation stopped running (cancelled)
            ran += 1
        return {"jobs": ran}

    def _run(self, job: OperationJob) -> bool | None:
        """One job's attempt; whether its outcome was written (None: the operation stopped)."""
        kind = self.type
        job.attempts += 1
        if not kind.resumable and job.attempts > 1:
            job.progress = {}  # a volatile job starts over
        if not kind.atomic_jobs:
            with transaction.atomic():
                moved = OperationJob.objects.filter(
                    pk=job.pk, status__in=sorted(JOB_UNFINISHED), operation__status=OperationStatus.RUNNING
                ).update(
                    status=JobStatus.RUNNING, attempts=job.attempts, progress=job.progress,
                    started_at=job.started_at or timezone.now(),
                )
                if moved:
                    record_status(OPERATION_JOB_KIND, job.partition, job.status, JobStatus.RUNNING,
                                  parent=self.operation_id, reason=f"attempt {job.attempts}")
            if not moved:  # ended meanwhile (a zombie's outcome), or the operation stopped running
                running = Operation.objects.filter(pk=self.operation_id, status=OperationStatus.RUNNING).exists()
                return False if running else None
            job.status = JobStatus.RUNNING
        context = JobContext(job, self.operation)
        kind.start_or_resume_job(self.operation.arg, job.partition, context)
        if not context.completed:
            context.mark_complete(True)
        job.status = JobStatus.SUCCEEDED  # ended, whichever way: not run again by this command
        return context.written

    def rollback(self, error: str) -> None:
        """The last attempt failed: the job that kept failing is cleaned up and FAILED; the others are queued again."""
        operation = Operation.objects.get(pk=self.operation_id)
        jobs = {job.partition: job for job in OperationJob.objects.filter(operation=operation, partition__in=self.partitions)}
        unfinished = [p for p in self.partitions if p in jobs and jobs[p].status in JOB_UNFINISHED]
        if not unfinished:
            return
        failing, rest = unfinished[0], unfinished[1:]
        operation_type(operation.type).cancel_job_and_cleanup(operation.arg, failing)
        reason = (error.strip().splitlines() or ["failed"])[-1]
        JobContext(jobs[failing], operation).mark_complete(False, reason)
        if rest and operation.status == OperationStatus.RUNNING:
            enqueue(OperationJobXCommand(operation_id=self.operation_id, key=self.key, partitions=rest, kind=self.kind))


@dataclass
class OperationJobCancelXCommand(XCommand):
    """Clean up a cancelled job (on its partition's key, after anything the job was doing there)."""

    operation_id: int
    partition: str
    key: str = ""

    def job_key(self) -> str:
        """The job's key."""
        return self.key or self.partition

    def execute(self) -> None:
        """The type's cancel_job_and_cleanup."""
        operation = Operation.objects.get(pk=self.operation_id)
        operation_type(operation.type).cancel_job_and_cleanup(operation.arg, self.partition)
