"""What every job transition does besides the status: history, the operation's outcome, successors, cleanup.

Called inside the transaction that changes the job, so all of it commits together or not at
all (the seed's sequence "update the job, move its queue entry, move its batch queue entry"
becomes one transaction).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from batches.choices import JOB_ENDED, JOB_TRANSITIONS
from batches.choices import JobStatus as J
from batches.models import BATCH_JOB_KIND, BatchJob
from batches.stages import clean_working_dir
from kernel.history import Change, record_status, record_statuses
from kernel.statemachine import check_transition
from operations.services import after_end_job, end_job, end_job_params, end_job_statements

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
    return advance(job, [Step(to, note, dict(fields or {}), times)], expect_status=expect_status,
                   expect_token=expect_token, refill=refill)


@dataclass
class Step:
    """One transition of a job: where to, why, the fields it sets, its times (`started`, `waited_since`, `at`)."""

    to: str
    note: str = ""
    fields: dict[str, Any] = field(default_factory=dict)
    times: dict[str, Any] = field(default_factory=dict)


def advance(job: BatchJob, steps: list[Step], *, expect_status: str | None = None, expect_token: int | None = None,
            refill: Callable[[], None] | None = None, waits: tuple[str, datetime] | None = None,
            also: dict[str, Any] | None = None) -> bool:
    """Record several transitions of the job at once: one compare-and-set, one history line and status record each.

    As `move`, step after step (each checked against the table), in one UPDATE and one INSERT
    of status records. `waits` (why, until when): after the last step the job waits in its
    queue (a "waits" line, `not_before`); `also`: more fields written with them (its slot
    given up: `dispatched`). False (nothing written) if the job's status or token changed
    meanwhile.
    """
    planned = transition(job, steps, waits=waits, also=also)
    query = BatchJob.objects.filter(pk=job.pk, status=expect_status or job.status)
    if expect_token is not None:
        query = query.filter(stage_token=expect_token)
    if not query.update(**planned.values):
        return False
    if len(planned.changes) == 1:
        kind, object_id, parent, old, new, at, reason = planned.changes[0]
        record_status(kind, object_id, old, new, parent=parent, reason=reason, at=at)
    else:
        record_statuses(planned.changes)
    applied(job, planned, refill)
    return True


@dataclass
class Transition:
    """What `advance` writes for some steps: the job's new field values and the status records."""

    values: dict[str, Any]
    changes: list[Change]
    status: str
    now: datetime


def transition(job: BatchJob, steps: list[Step], *, waits: tuple[str, datetime] | None = None,
               also: dict[str, Any] | None = None) -> Transition:
    """The steps from the job's status (each checked against the table): its new values, history and records."""
    if not steps:
        raise ValueError("advance: no step")
    now = timezone.now()
    status, history = job.status, job.history
    values: dict[str, Any] = {}
    changes: list[Change] = []
    for step in steps:
        check_transition(JOB_TRANSITIONS, status, step.to, f"job {job.pk}")
        values.update(step.fields)
        entry = history_entry(status, step.to, step.note, **step.times)
        history = appended(history, entry)
        changes.append((BATCH_JOB_KIND, job.pk, job.batch_id, status, step.to,
                        step.times.get("at") or now, step.note))
        if step.to == J.FAILED and "error" not in step.fields:
            values["error"] = step.note
        status = step.to
    values.update(status=status, queued_at=now, not_before=None, history=history)
    if status in (J.COMPLETED, J.DELETED):
        values["cleaned_at"] = now  # its working directory goes after commit (below)
    if waits is not None:
        values.update(not_before=waits[1], history=waited(history, status, waits[0]))
    values.update(also or {})
    return Transition(values, changes, status, now)


def applied(job: BatchJob, planned: Transition, refill: Callable[[], None] | None = None, *,
            ended_in_batch: list[list[tuple[Any, ...]]] | None = None) -> None:
    """The transition was written: the job in memory follows, and an end does what ends do (`ended`, the cleanup).

    `ended_in_batch`: the rows of `ended_statements`, when the batch that wrote the transition
    ran them (`ended` is then not run again).
    """
    previous = job.status
    for name, value in planned.values.items():
        setattr(job, name, value)
    status = planned.status
    if ended_in_batch is not None:
        _after_ended(job, ended_in_batch, refill)
    elif status in JOB_ENDED and previous not in JOB_ENDED:
        ended(job, status, refill)
    if status in (J.COMPLETED, J.DELETED):
        transaction.on_commit(lambda: clean_working_dir(job))


def waited(history: list[dict[str, Any]], stage: str, note: str) -> list[dict[str, Any]]:
    """The history with one "waits" line; repeated waits update the last line instead of adding lines."""
    if history and history[-1].get("waits") and history[-1].get("stage") == stage:
        last = dict(history[-1])
        last.update(at=timezone.now().isoformat(), note=note[:1000], tries=int(last.get("tries", 1)) + 1)
        return [*history[:-1], last]
    entry = history_entry(stage, stage, note)
    entry["waits"] = True
    entry["tries"] = 1
    return appended(history, entry)


def ends(job: BatchJob, planned: Transition) -> bool:
    """Whether this transition ends the job (what `ended` does follows it)."""
    return planned.status in JOB_ENDED and job.status not in JOB_ENDED


def ended_statements(job: BatchJob, planned: Transition, moved: str) -> tuple[list[str], dict[str, Any]]:
    """`ended` as statements of the batch that ends the job (`kernel.sqlbatch`), each acting only where `moved` holds.

    `moved`: true only if that batch's compare-and-set moved the job. Its operation's outcome
    (`operations.services.end_job_statements`), then the newer jobs of its object let go
    (`unblocked_*` parameters). `applied(..., ended_in_batch=rows)` does the rest.
    """
    statements: list[str] = []
    params: dict[str, Any] = {"unblocked_job": job.pk, "unblocked_at": planned.now}
    if job.batch.operation_id is not None:
        statements += end_job_statements(moved)
        params.update(end_job_params(job.batch.operation_id, str(job.pk), planned.status == J.COMPLETED,
                                     str(planned.values.get("error", job.error)) if planned.status == J.FAILED else ""))
    statements.append("UPDATE batches_batchjob SET blocked_by_id = NULL, last_modified = %(unblocked_at)s"  # noqa: S608 - constant SQL
                      f" WHERE blocked_by_id = %(unblocked_job)s AND {moved} RETURNING id")
    return statements, params


def _after_ended(job: BatchJob, rows: list[list[tuple[Any, ...]]], refill: Callable[[], None] | None) -> None:
    """After `ended_statements` ran (their rows): the operation's completion queued by its last outcome, the slots refilled."""
    if job.batch.operation_id is not None:
        after_end_job(job.batch.operation_id, rows[-2])
    if rows[-1] and refill is not None:
        refill()


def ended(job: BatchJob, status: str, refill: Callable[[], None] | None = None) -> None:
    """The job ended: its operation's outcome is written, newer jobs of its object may go (`refill` fills the slots then)."""
    batch = job.batch
    if batch.operation_id is not None:
        end_job(batch.operation_id, str(job.pk), status == J.COMPLETED, job.error if status == J.FAILED else "")
    unblocked = BatchJob.objects.filter(blocked_by_id=job.pk).update(blocked_by=None)
    if unblocked and refill is not None:
        refill()
