"""Starting and cancelling operations, and what they look like while they run.

`start_operation` records the operation, its jobs and each job's command in one transaction,
under the target's row lock: the check "nothing incompatible runs on this target" and the
insert cannot interleave with another start, so two incompatible starts never both pass.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from kernel import sqlbatch
from kernel.history import current_actor, record_status, record_statuses
from operations.choices import JOB_UNFINISHED, JobStatus, OperationStatus
from operations.commands import (
    JOBS_PER_COMMAND,
    JobContext,
    OperationCompleteXCommand,
    OperationJobCancelXCommand,
    OperationJobXCommand,
)
from operations.counts import failed_jobs, job_counts, skipped_jobs
from operations.models import OPERATION_JOB_KIND, Operation, OperationJob, OperationTarget
from operations.registry import operation_type
from xcommands.models import Command
from xcommands.queue import enqueue, enqueue_many

log = logging.getLogger(__name__)

MAX_PARTITION = 255


class OperationConflict(Exception):  # noqa: N818 - reads as the condition
    """An incompatible operation runs on the target (409 in the APIs), naming it."""

    def __init__(self, running: Operation, wanted: str) -> None:
        self.running = running
        super().__init__(
            f"operation {running.pk} ({running.type}, started {running.created_at:%Y-%m-%dT%H:%M:%SZ}) is running on "
            f"{running.target}; {wanted} cannot run beside it"
        )


def _lock_target(target: str) -> None:
    """Create the target's row if needed and lock it to the end of the transaction."""
    table = OperationTarget._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (name) VALUES (%s) ON CONFLICT (name) DO UPDATE SET name = excluded.name "  # noqa: S608
            "RETURNING id",
            [target],
        )


def start_operation(
    type_name: str, target: str, arg: Any, partitions: Sequence[str | tuple[str, str]], *, started_by: Any = None,
) -> Operation:
    """Record the operation and its jobs and queue each job on its key, atomically.

    `partitions` are partition names (each job runs under its partition's key) or
    (partition, key) pairs (several partitions' jobs sharing keys). Raises OperationConflict
    when an operation of an incompatible type runs on the target, ValueError for an unknown
    type or bad partitions.
    """
    kind = operation_type(type_name)
    if not target or len(target) > 255:
        raise ValueError("an operation's target must be 1 to 255 characters")
    pairs = [(p, p) if isinstance(p, str) else (p[0], p[1]) for p in partitions]
    unique = list(dict(pairs).items())
    if not unique:
        raise ValueError("an operation needs at least one partition")
    if any(not value or len(value) > MAX_PARTITION for pair in unique for value in pair):
        raise ValueError(f"partitions and keys must be 1 to {MAX_PARTITION} characters")
    with transaction.atomic():
        _lock_target(target)
        for running in Operation.objects.filter(target=target, status=OperationStatus.RUNNING).order_by("pk"):
            if not kind.compatible(operation_type(running.type)):
                raise OperationConflict(running, type_name)
        operation = Operation.objects.create(
            type=type_name, target=target, arg=arg, started_by=started_by, remaining=len(unique)
        )
        if kind.detached:  # driven elsewhere: running from the start, ended with end_job
            now = timezone.now()
            OperationJob.objects.bulk_create(
                (OperationJob(operation=operation, partition=p, key=k, status=JobStatus.RUNNING, started_at=now)
                 for p, k in unique),
                batch_size=2000,
            )
            return operation
        OperationJob.objects.bulk_create(OperationJob(operation=operation, partition=p, key=k) for p, k in unique)
        by_key: dict[str, list[str]] = {}
        for partition, key in unique:
            by_key.setdefault(key, []).append(partition)
        commands = [
            OperationJobXCommand(operation_id=operation.pk, key=key, partitions=chunk[i:i + JOBS_PER_COMMAND], kind=type_name)
            for key, chunk in by_key.items() for i in range(0, len(chunk), JOBS_PER_COMMAND)
        ]
        rows = enqueue_many(commands)
        if kind.max_retries != OperationJobXCommand.max_retries:
            Command.objects.filter(pk__in=[row.pk for row in rows]).update(max_retries=kind.max_retries)
    return operation


def end_job(operation_id: int, partition: str, success: bool, error: str = "") -> bool:
    """Write a detached job's outcome (once: a second call is a no-op); the last one queues the completion.

    Runs in the caller's transaction, so the outcome commits with whatever ended the job.
    """
    job = OperationJob.objects.filter(operation_id=operation_id, partition=partition).first()
    operation = Operation.objects.filter(pk=operation_id).only("pk", "target", "status").first()
    if job is None or operation is None:
        return False
    return JobContext(job, operation).mark_complete(success, error)


def end_job_statements(moved: str) -> list[str]:
    """`end_job` as statements of the caller's batch (`kernel.sqlbatch`), each acting only where `moved` holds.

    `moved`: a condition true only if the caller's batch did what ends the job (its outcome
    follows it, in the same transaction). The job's row is locked first, then its status record
    and outcome are written if the job has none yet and its operation runs, then the operation
    counts down. Parameters: those of `end_job_params`. The last statement answers (remaining,
    target) when this outcome was written and counted; `after_end_job` takes it from there.
    """
    unfinished = ", ".join(f"'{status}'" for status in sorted(JOB_UNFINISHED))
    open_job = (
        f"operation_id = %(oj_operation)s AND partition = %(oj_partition)s AND status IN ({unfinished})"  # noqa: S608 - constant SQL
        f" AND EXISTS (SELECT 1 FROM operations_operation WHERE id = %(oj_operation)s AND status = '{OperationStatus.RUNNING}')"
        f" AND {moved}"
    )
    return [
        "SELECT id FROM operations_operationjob WHERE operation_id = %(oj_operation)s AND partition = %(oj_partition)s"  # noqa: S608 - constant SQL
        f" AND {moved}" + sqlbatch.for_update(),
        "INSERT INTO kernel_statusrecord (kind, object_id, parent_id, from_status, to_status, at, by, reason)"  # noqa: S608 - constant SQL
        f" SELECT '{OPERATION_JOB_KIND}', partition, %(oj_parent)s, status, %(oj_status)s, %(oj_at)s, %(oj_by)s,"
        f" %(oj_reason)s FROM operations_operationjob WHERE {open_job}",
        "UPDATE operations_operationjob SET status = %(oj_status)s, error = %(oj_error)s, finished_at = %(oj_at)s"  # noqa: S608 - constant SQL
        f" WHERE {open_job}",
        f"UPDATE operations_operation SET remaining = remaining - 1 WHERE id = %(oj_operation)s AND status = '{OperationStatus.RUNNING}'"  # noqa: S608
        " AND EXISTS (SELECT 1 FROM operations_operationjob WHERE operation_id = %(oj_operation)s"
        " AND partition = %(oj_partition)s AND status = %(oj_status)s AND finished_at = %(oj_at)s) RETURNING remaining, target",
    ]


def end_job_params(operation_id: int, partition: str, success: bool, error: str = "") -> dict[str, Any]:
    """The parameters of `end_job_statements` for this outcome (written at the time now, by the current actor)."""
    return {
        "oj_operation": operation_id, "oj_partition": partition, "oj_parent": str(operation_id)[:140],
        "oj_status": JobStatus.SUCCEEDED if success else JobStatus.FAILED, "oj_error": error[:8000],
        "oj_reason": error[:4000], "oj_at": timezone.now(), "oj_by": current_actor()[:200],
    }


def after_end_job(operation_id: int, counted: list[tuple[Any, ...]]) -> bool:
    """After `end_job_statements` (the last one's rows): the last outcome queues the completion; whether one was written."""
    if not counted:
        log.info("operation %s: an outcome was not written (written already, or the operation no longer runs)",
                 operation_id)
        return False
    remaining, target = counted[0]
    if int(remaining) == 0:
        enqueue(OperationCompleteXCommand(operation_id=operation_id, target=target))
    return True


def reopen_job(operation_id: int, partition: str) -> bool:
    """Withdraw a failed (or cancelled) job's outcome while its operation runs: an admin gave it another chance.

    Under the operation's row lock, like the countdown, so a completion queued meanwhile finds
    an unfinished job and is skipped, and the job's next outcome counts down again. False (and
    nothing changes) when the operation has ended: the job then goes on outside it.
    """
    with transaction.atomic():
        operation = Operation.objects.select_for_update().filter(pk=operation_id, status=OperationStatus.RUNNING).first()
        if operation is None:
            return False
        ended = OperationJob.objects.filter(
            operation_id=operation_id, partition=partition, status__in=[JobStatus.FAILED, JobStatus.CANCELLED]
        )
        before = ended.values_list("status", flat=True).first()
        reopened = ended.update(status=JobStatus.RUNNING, error="", finished_at=None)
        if reopened:
            record_status(OPERATION_JOB_KIND, partition, before or "", JobStatus.RUNNING, parent=operation_id,
                          reason="given another chance")
            Operation.objects.filter(pk=operation_id).update(remaining=F("remaining") + 1)
        return bool(reopened)


def cancel_operation(operation_id: int) -> Operation:
    """Cancel a running operation: unfinished jobs CANCELLED and cleaned up; a finished one is refused (ValueError)."""
    now = timezone.now()
    with transaction.atomic():
        operation = Operation.objects.select_for_update().get(pk=operation_id)
        if operation.status != OperationStatus.RUNNING:
            raise ValueError(f"operation {operation_id} is {operation.status}; only a running one can be cancelled")
        unfinished = list(operation.jobs.filter(status__in=sorted(JOB_UNFINISHED)).values_list("partition", "key", "status"))
        operation.jobs.filter(status__in=sorted(JOB_UNFINISHED)).update(status=JobStatus.CANCELLED, finished_at=now)
        record_statuses((OPERATION_JOB_KIND, p, operation.pk, status, JobStatus.CANCELLED, now, "operation cancelled")
                        for p, _, status in unfinished)
        operation.status = OperationStatus.CANCELLED
        operation.finished_at = now
        operation.result = {"counts": job_counts(operation), "failed": failed_jobs(operation),
                            "skipped": skipped_jobs(operation), "result": None}
        operation.save(update_fields=["status", "finished_at", "result"])
        enqueue_many([OperationJobCancelXCommand(operation_id=operation.pk, partition=p, key=k) for p, k, _ in unfinished])
    return operation


def progress(operation: Operation) -> dict[str, Any]:
    """Jobs by status (done, failed, running, waiting), the failures and the skipped jobs so far."""
    counts = job_counts(operation)
    total = sum(counts.values())
    return {
        "total": total,
        "counts": counts,
        "done": total - sum(counts.get(s, 0) for s in JOB_UNFINISHED),
        "failed": failed_jobs(operation),
        "skipped": skipped_jobs(operation),
    }
