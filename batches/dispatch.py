"""Which job goes next: BATCH_SLOTS slots, each held by one job while one of its stages runs.

The seed's consumers take jobs from each state's queue sorted by priority (`XX-JID`). Here a
job waiting in a stage's queue is taken when a slot frees: the runnable job with the lowest
priority number, then the oldest, whatever its stage. A stage that ends hands its slot to the
next job in the same transaction (no gap, no separate dispatcher); a beat service fills any
slot left free by a race (a job that became runnable while every slot was busy and none
freed after it committed). Jobs are locked with SKIP LOCKED, so two dispatchers never take
the same job and never wait for each other.

Runnable: in a stage's queue, no slot, not blocked by an older job of the same object, not
asleep (`not_before`, a provisioning job waiting for space). A deleted batch's jobs are
deleted, so they are never runnable.

This module answers the questions (which slots, which jobs in which order, may a job keep
its slot); `batches.commands.stage` hands the slots over and runs the stages.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from batches.choices import QUEUES
from batches.config import slots
from batches.models import BatchJob, Slot
from kernel import sqlbatch

log = logging.getLogger(__name__)

def ensure_slots() -> None:
    """Create missing slot rows up to BATCH_SLOTS (idempotent); slots above it are left to drain."""
    wanted = slots()
    have = set(Slot.objects.values_list("number", flat=True))
    missing = [Slot(number=n) for n in range(1, wanted + 1) if n not in have]
    if missing:
        Slot.objects.bulk_create(missing, ignore_conflicts=True)


def runnable_jobs(now: datetime | None = None) -> Any:
    """Runnable jobs in taking order (the partial index `batch_job_runnable_idx`)."""
    return (
        BatchJob.objects.filter(status__in=sorted(QUEUES), dispatched=False, blocked_by__isnull=True)
        .filter(Q(not_before__isnull=True) | Q(not_before__lte=now or timezone.now()))
        .order_by("priority", "id")
    )


_COMPILED_AT = datetime(2000, 1, 1, tzinfo=UTC)  # the `now` the head's query is compiled with, replaced at each run
_head_query: dict[str, tuple[str, list[Any], int]] = {}  # per database vendor: SQL, parameters, where `now` goes


def runnable_head() -> tuple[int, int] | None:
    """(priority, id) of the best runnable job (the head of the partial index), or None.

    A stage command asks before each stage it runs, so the query is compiled once per process
    (compiling costs more than running it) and run with the time now.
    """
    query = _head_query.get(connection.vendor)
    if query is None:
        sql, params = runnable_jobs(_COMPILED_AT).values_list("priority", "id")[:1].query.sql_with_params()
        params = list(params)
        query = _head_query[connection.vendor] = (sql, params, params.index(connection.ops.adapt_datetimefield_value(_COMPILED_AT)))
    sql, params, at = query
    run = list(params)
    run[at] = connection.ops.adapt_datetimefield_value(timezone.now())
    with connection.cursor() as cursor:
        cursor.execute(sql, run)
        row = cursor.fetchone()
    return None if row is None else (int(row[0]), int(row[1]))


def _runnable(alias: str) -> str:
    """`runnable_jobs`' condition on `alias` at %(now)s, the partial index's predicate written out for the plan."""
    statuses = ", ".join(f"'{status}'" for status in sorted(QUEUES))
    return (f"{alias}.status IN ({statuses}) AND NOT {alias}.dispatched AND {alias}.blocked_by_id IS NULL"
            f" AND ({alias}.not_before IS NULL OR {alias}.not_before <= %(now)s)")


def _head(column: str) -> str:
    """The best runnable job's `column` (`runnable_jobs`)."""
    return f"(SELECT h.{column} FROM batches_batchjob h WHERE {_runnable('h')} ORDER BY h.priority, h.id LIMIT 1)"  # noqa: S608 - constant SQL


def head_columns() -> str:
    """The select list of the best runnable job's (priority, id), NULLs when none (parameter `now`); `Planned` statements only."""
    return f"{_head('priority')}, {_head('id')}"


def hand_over_statements(moved: str) -> list[str]:
    """The end of a stage's batch that gives the job's slot up (`kernel.sqlbatch`), acting only where `moved` holds.

    The job's slot (id, number), locked, and the best runnable job (id, status, object key,
    token), locked unless another dispatcher holds it (SKIP LOCKED, as `fill_slots` takes
    jobs). Parameters `job` and `now`; `batches.commands.stage.hand_over` gives the slot.
    """
    return [
        f"SELECT s.id, s.number FROM batches_slot s WHERE s.job_id = %(job)s AND {moved}" + sqlbatch.for_update(),  # noqa: S608 - constant SQL
        sqlbatch.Planned(
            f"SELECT h.id, h.status, h.object_key, h.stage_token FROM batches_batchjob h WHERE {_runnable('h')}"  # noqa: S608 - constant SQL
            f" AND {moved} ORDER BY h.priority, h.id LIMIT 1" + sqlbatch.for_update(skip_locked=True)
        ),
    ]


def locked_with_head_statement() -> str:
    """The job's (history, priority, blocked_by_id), locked, with the head of the runnable jobs (priority, id).

    One statement of a batch (`kernel.sqlbatch`), parameters `job`, `status`, `token`, `now`: no
    row when the job is no longer in `status` under `token`; (None, None) for no runnable job.
    Its constants stay in its text (`sqlbatch.Planned`), so that its plan reads the head from
    the partial index of runnable jobs.
    """
    return sqlbatch.Planned(
        f"SELECT j.history, j.priority, j.blocked_by_id, {head_columns()}"  # noqa: S608 - constant SQL
        " FROM batches_batchjob j WHERE j.id = %(job)s AND j.status = %(status)s AND j.stage_token = %(token)s"
        + sqlbatch.for_update()
    )


def keeps_slot(job: BatchJob, slot_number: int | None, best: tuple[int, int] | None) -> bool:
    """Whether a job that just moved to its next stage may run it in the slot it holds (BATCH_CHAIN_STAGES).

    Yes unless a better runnable job waits (`best`, the head of the runnable jobs: a lower
    priority number, or the same and older), the job may not run now (blocked, asleep), or
    its slot (`slot_number`, read when its stage command loaded it: a held slot keeps its
    number) is above BATCH_SLOTS (draining).
    """
    if not settings.BATCH_CHAIN_STAGES or job.blocked_by_id is not None or job.not_before:
        return False
    if slot_number is None or slot_number > slots():
        return False
    return best is None or best > (job.priority, job.pk)
