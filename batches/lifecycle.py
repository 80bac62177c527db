"""What every job transition does besides the status: history, the operation's outcome, successors, cleanup.

Called inside the transaction that changes the job, so all of it commits together or not at
all (the seed's sequence "update the job, move its queue entry, move its batch queue entry"
becomes one transaction).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from batches.choices import JOB_ENDED, JOB_TRANSITIONS
from batches.choices import JobStatus as J
from batches.models import BATCH_JOB_KIND, BatchJob
from batches.stages import clean_working_dir
from kernel.history import record_status
from kernel.statemachine import check_transition
from operations.services import end_job

MAX_HISTORY = 200


def history_entry(stage: str, to: str | None, note: str = "", **times: Any) -> dict[str, Any]:
    """One line of a job's stage history."""
    entry: dict[str, Any] = {"stage": stage, "to": to or stage, "at": timezone.now().isoformat()}
    entry.update({k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in times.items() if v is not None})
    if note:
        entry["note"] = note[:1000]
    return entry


def appended(history: list[dict[str, Any]], entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The history with the entry added (the oldest dropped beyond MAX_HISTORY)."""
    return [*history, entry][-MAX_HISTORY:]


def move(job: BatchJob, to: str, *, note: str = "", fields: dict[str, Any] | None = None,
         expect_status: str | None = None, expect_token: int | None = None,
         refill: Callable[[], None] | None = None, **times: Any) -> bool:
    """Move the job to `to` (checked against the table) with a compare-and-set; False if it changed meanwhile.

    Ending it (completed, failed, deleted) writes its operation's outcome, lets newer jobs of
    the same object go (then calls `refill`, which fills the free slots), and (completed,
    deleted) removes its working directory after commit.
    """
    check_transition(JOB_TRANSITIONS, job.status, to, f"job {job.pk}")
    now = timezone.now()
    values: dict[str, Any] = dict(fields or {})
    values.update(status=to, queued_at=now, not_before=None, history=appended(
        job.history, history_entry(job.status, to, note, **times)
    ))
    if to == J.FAILED and "error" not in values:
        values["error"] = note
    query = BatchJob.objects.filter(pk=job.pk, status=expect_status or job.status)
    if expect_token is not None:
        query = query.filter(stage_token=expect_token)
    if not query.update(**values):
        return False
    previous = job.status
    record_status(BATCH_JOB_KIND, job.pk, previous, to, parent=job.batch_id, reason=note, at=now)
    for name, value in values.items():
        setattr(job, name, value)
    if to in JOB_ENDED and previous not in JOB_ENDED:
        ended(job, to, refill)
    if to in (J.COMPLETED, J.DELETED):
        BatchJob.objects.filter(pk=job.pk).update(cleaned_at=timezone.now())
        transaction.on_commit(lambda: clean_working_dir(job))
    return True


def ended(job: BatchJob, status: str, refill: Callable[[], None] | None = None) -> None:
    """The job ended: its operation's outcome is written, newer jobs of its object may go (`refill` fills the slots then)."""
    batch = job.batch
    if batch.operation_id is not None:
        end_job(batch.operation_id, str(job.pk), status == J.COMPLETED, job.error if status == J.FAILED else "")
    unblocked = BatchJob.objects.filter(blocked_by_id=job.pk).update(blocked_by=None)
    if unblocked and refill is not None:
        refill()
