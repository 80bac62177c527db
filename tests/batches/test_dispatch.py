"""Taking jobs: by priority then age, behind older jobs of the same object, never twice (threads race: PostgreSQL in CI)."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from batches.choices import JobStatus as J
from batches.commands.stage import BatchJobStageXCommand, fill_slots
from batches.dispatch import (
    ensure_slots,
    hand_over_statements,
    locked_with_head_statement,
    runnable_head,
    runnable_jobs,
)
from batches.models import Batch, BatchJob, Slot
from kernel import sqlbatch
from kernel.history import acting_as
from tests.support.batches import Ingest, settle
from tests.support.engine import run_pending_commands
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)


def stored_jobs(ingest: Ingest, priorities: list[int], keys: list[str] | None = None) -> list[BatchJob]:
    """A processing batch with jobs waiting in `pending`, as its start leaves them (no commands)."""
    batch = Batch.objects.create(
        profile=ingest.profile, collection=ingest.collection, owner=ingest.owner, submitter="ann", type="file",
        payload_url="file:///x", status="processing",
    )
    return [
        BatchJob.objects.create(
            batch=batch, number=n, priority=priority, object_key=(keys[n - 1] if keys else f"batch-job:{n}"),
            payload_url="file:///x", payload_type="file", working_dir="/tmp/x",
        )
        for n, priority in enumerate(priorities, start=1)
    ]


def test_the_lowest_priority_number_is_taken_first_then_the_oldest(ingest: Ingest, settings: object) -> None:
    jobs = stored_jobs(ingest, [5, 1, 9, 1, 5])
    assert [job.pk for job in runnable_jobs()] == [jobs[i].pk for i in (1, 3, 0, 4, 2)]
    ensure_slots()
    assert fill_slots(limit=2) == 2
    taken = set(BatchJob.objects.filter(dispatched=True).values_list("pk", flat=True))
    assert taken == {jobs[1].pk, jobs[3].pk}
    assert set(Slot.objects.exclude(job=None).values_list("job_id", flat=True)) == taken


def test_a_newer_job_of_an_object_waits_for_the_older_one(ingest: Ingest) -> None:
    """Two versions of one object in one batch: the second is blocked until the first ends, whatever its priority."""
    url = ingest.deposit.objects(1)
    first = ingest.submit(url, priority=9)
    second = ingest.submit(url, priority=0)  # same object (local id obj001), better priority
    run_pending_commands()  # both started; their stages run below
    older, newer = BatchJob.objects.get(batch=first), BatchJob.objects.get(batch=second)
    assert newer.blocked_by_id == older.pk and older.blocked_by_id is None
    settle()
    older.refresh_from_db()
    newer.refresh_from_db()
    assert (older.status, newer.status) == (J.COMPLETED, J.COMPLETED)
    older_end = max(e["at"] for e in older.history)
    newer_start = min(e["started"] for e in newer.history if "started" in e)
    assert newer_start > older_end, "the newer version ran after the older one ended"
    assert (older.inventory_version, newer.inventory_version) == (1, 2)


def test_racing_dispatchers_never_take_a_job_twice_nor_fill_a_slot_twice(ingest: Ingest, settings: object) -> None:
    """8 threads fill 4 slots from 40 runnable jobs at the same instant, 5 rounds: 4 distinct jobs each time."""
    jobs = stored_jobs(ingest, [n % 7 for n in range(40)])
    ensure_slots()
    for round_number in range(5):
        barrier = threading.Barrier(8)
        errors: list[BaseException] = []

        def fill(barrier: threading.Barrier = barrier, errors: list[BaseException] = errors) -> None:
            try:
                barrier.wait(timeout=10)
                fill_slots()
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=fill) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        locked = [e for e in errors if "locked" in str(e)]  # SQLite: a writer waiting too long (not a double take)
        assert not [e for e in errors if e not in locked], errors
        holders = list(Slot.objects.exclude(job=None).values_list("job_id", flat=True))
        dispatched = list(BatchJob.objects.filter(dispatched=True).values_list("pk", flat=True))
        assert len(holders) == len(set(holders)) == 4, (round_number, holders)
        assert sorted(holders) == sorted(dispatched)
        tokens = Counter(BatchJob.objects.filter(pk__in=holders).values_list("stage_token", flat=True))
        assert set(tokens) <= {1, 2, 3, 4, 5}
        # the stage commands queued match the jobs taken, one each
        queued = Counter(c.params["job_id"] for c in Command.objects.filter(name="batches.BatchJobStageXCommand"))
        assert all(queued[pk] >= 1 for pk in holders)
        BatchJob.objects.filter(pk__in=holders).update(dispatched=False, status=J.COMPLETED)
        Slot.objects.update(job=None)
    assert BatchJob.objects.filter(status=J.COMPLETED).count() == 20
    assert len(jobs) == 40


def test_the_runnable_head_is_the_first_runnable_job_asked_at_the_time_now(ingest: Ingest) -> None:
    """The head (compiled once) follows the taking order, skips an asleep job, and takes it once its time came."""
    jobs = stored_jobs(ingest, [5, 1, 3])
    assert runnable_head() == (1, jobs[1].pk)
    BatchJob.objects.filter(pk=jobs[1].pk).update(not_before=timezone.now() + timedelta(minutes=5))
    assert runnable_head() == (3, jobs[2].pk)
    BatchJob.objects.filter(pk=jobs[1].pk).update(not_before=timezone.now() - timedelta(seconds=1))
    assert runnable_head() == (1, jobs[1].pk) == tuple(runnable_jobs().values_list("priority", "id")[0])
    BatchJob.objects.update(dispatched=True)
    assert runnable_head() is None


def locked_read(job: BatchJob, status: str | None = None, token: int | None = None) -> list[tuple[object, ...]]:
    """The stage record's locked read of the job and the runnable head, as its batch runs it."""
    params = {"job": job.pk, "status": status or job.status, "token": job.stage_token if token is None else token,
              "now": timezone.now()}
    with transaction.atomic():
        return sqlbatch.run([locked_with_head_statement()], params)[0]


def test_the_locked_read_gives_the_job_as_it_is_and_the_runnable_head_or_nothing_once_it_moved(ingest: Ingest) -> None:
    """The job's history, priority and blocker with the best runnable job (asleep and dispatched ones skipped); no row for
    another status or a newer dispatch."""
    jobs = stored_jobs(ingest, [5, 2, 3])
    BatchJob.objects.filter(pk=jobs[0].pk).update(dispatched=True, stage_token=4, history=[{"stage": "pending", "to": "x"}])
    jobs[0].refresh_from_db()
    [(history, priority, blocked_by, best_priority, best_id)] = locked_read(jobs[0])
    assert sqlbatch.converted(BatchJob, "history", history) == [{"stage": "pending", "to": "x"}]
    assert (priority, blocked_by, best_priority, best_id) == (5, None, 2, jobs[1].pk)
    BatchJob.objects.filter(pk=jobs[1].pk).update(not_before=timezone.now() + timedelta(minutes=5))
    assert locked_read(jobs[0])[0][3:] == (3, jobs[2].pk)
    BatchJob.objects.filter(pk=jobs[2].pk).update(dispatched=True)
    assert locked_read(jobs[0])[0][3:] == (None, None)
    assert locked_read(jobs[0], token=3) == [] and locked_read(jobs[0], status=J.DOWNLOADING) == []


def _positional(statement: str) -> tuple[str, tuple[str, ...]]:
    """The statement as the server prepares it, `$n` for its named parameters (constants made parameters unless Planned)."""
    text, names, constants = sqlbatch._server_form(statement)
    order = (*names, *constants)
    for number, name in enumerate(order, start=1):
        text = text.replace(f"%({name})s", f"${number}")
    return text, order


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's generic plans of prepared statements")
def test_the_generic_plans_of_the_locked_read_and_the_hand_over_take_the_head_from_the_partial_index(ingest: Ingest) -> None:
    """Planned once for any values (as the batch prepares them), both reads find the head through `batch_job_runnable_idx`;
    with its status list sent as parameters the same plan could not (why the statement is `Planned`)."""
    stored_jobs(ingest, [5] * 50)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE batches_batchjob")
    plans = []
    for name, text in [(f"{kind}_{number}", form) for number, statement in
                       enumerate([locked_with_head_statement(), hand_over_statements("1 = 1")[1]])
                       for kind, form in (("planned", statement), ("unplanned", str(statement)))]:
        sql, order = _positional(text)
        with connection.cursor() as cursor:
            cursor.execute("SET plan_cache_mode = force_generic_plan")
            cursor.execute(f"PREPARE {name} AS {sql}")
            args = ", ".join("NULL" for _ in order)
            cursor.execute(f"EXPLAIN EXECUTE {name}({args})")
            plans.append("\n".join(row[0] for row in cursor.fetchall()))
            cursor.execute(f"DEALLOCATE {name}")
    for planned, unplanned in (plans[0:2], plans[2:4]):  # the locked read, the hand-over's read
        assert "batch_job_runnable_idx" in planned, planned
        assert "batch_job_runnable_idx" not in unplanned, unplanned


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's planner")
def test_sqlite_finds_the_head_of_the_locked_read_through_the_partial_index(ingest: Ingest) -> None:
    """The status list written out as the index's own condition: SQLite can take it (ADR 0039), and does once it has statistics."""
    stored_jobs(ingest, [5] * 50)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
        cursor.execute(f"EXPLAIN QUERY PLAN {locked_with_head_statement()}",
                       {"job": 1, "status": "pending", "token": 0, "now": "2026-01-01 00:00:00"})
        steps = [str(row[3]) for row in cursor.fetchall()]
    assert any("batch_job_runnable_idx" in step for step in steps), steps


def run_stage(job: BatchJob) -> None:
    """The job's notify stage under token 1, in this thread (the actor it names is this block's only)."""
    with acting_as("test"):
        BatchJobStageXCommand(job_id=job.pk, stage=J.NOTIFY, token=1).run()


def ending_in_slot(job: BatchJob, number: int) -> BatchJob:
    """The job in its last stage (notify), dispatched in slot `number` under token 1."""
    BatchJob.objects.filter(pk=job.pk).update(status=J.NOTIFY, dispatched=True, stage_token=1)
    Slot.objects.filter(number=number).update(job=job, since=timezone.now())
    return BatchJob.objects.get(pk=job.pk)


def test_a_stage_that_ends_hands_its_slot_to_the_best_runnable_job_in_the_same_transaction(ingest: Ingest) -> None:
    """The job completes; its slot goes to the lowest priority number waiting (dispatched, its token raised, its stage
    queued under its object's key); an asleep job is passed over."""
    ensure_slots()
    ending, worse, better, asleep = stored_jobs(ingest, [5, 4, 2, 1])
    BatchJob.objects.filter(pk=asleep.pk).update(not_before=timezone.now() + timedelta(minutes=5))
    ending = ending_in_slot(ending, 1)
    run_stage(ending)
    assert BatchJob.objects.get(pk=ending.pk).status == J.COMPLETED
    assert Slot.objects.get(number=1).job_id == better.pk
    taken = BatchJob.objects.get(pk=better.pk)
    assert (taken.dispatched, taken.stage_token) == (True, 1)
    queued = Command.objects.get(name="batches.BatchJobStageXCommand")
    assert (queued.key, queued.params["job_id"], queued.params["token"]) == (better.object_key, better.pk, 1)
    assert not BatchJob.objects.get(pk=worse.pk).dispatched and not BatchJob.objects.get(pk=asleep.pk).dispatched


def test_a_stage_that_ends_in_a_slot_above_the_slots_frees_it_and_takes_nobody(ingest: Ingest, settings: object) -> None:
    """Slots above BATCH_SLOTS drain: the ending job's slot is freed, the waiting job keeps waiting for a slot in range."""
    ensure_slots()
    ending, waiting = stored_jobs(ingest, [5, 1])
    ending = ending_in_slot(ending, 2)
    settings.BATCH_SLOTS = 1  # type: ignore[attr-defined]
    run_stage(ending)
    assert BatchJob.objects.get(pk=ending.pk).status == J.COMPLETED
    assert Slot.objects.get(number=2).job_id is None and not BatchJob.objects.get(pk=waiting.pk).dispatched
    assert not Command.objects.filter(name="batches.BatchJobStageXCommand").exists()
