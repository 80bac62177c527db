"""A job's stages in its slot: run in a row, recorded together, each still a try; a retry and a better job between two stages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from batches.choices import JobStatus as J
from batches.commands import stage as stage_module
from batches.config import ingest_settings
from batches.models import BatchJob
from batches.stages import STAGE_FUNCTIONS, Outcome
from kernel.models import StatusRecord, TaskTry
from tests.support.batches import Ingest, settle
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)

ORDER = [J.PENDING, J.ESTIMATING, J.PROVISIONING, J.DOWNLOADING, J.PROCESSING, J.RECORDING, J.NOTIFY]


def stage_tries(job: BatchJob) -> list[TaskTry]:
    return list(TaskTry.objects.filter(kind=TaskTry.Kind.STAGE, object_id=str(job.pk)).order_by("id"))


def compare_and_sets(sqls: list[str]) -> list[str]:
    """The job's compare-and-set updates among these statements: the ORM's, and the hot path's raw ones (`_record_onward`)."""
    # A batch of raw statements is one logged entry on PostgreSQL, its statements joined by ";\n".
    bare = [statement.replace('"', "") for sql in sqls for statement in sql.split(";\n")]
    return [sql for sql in bare if sql.startswith("UPDATE batches_batchjob SET") and "queued_at =" in sql.split(" WHERE ")[0]
            and "stage_token =" in sql.split(" WHERE ", 1)[-1]]


def test_stages_run_in_a_row_are_recorded_in_three_steps_and_each_is_still_a_try(ingest: Ingest) -> None:
    """Recorded before downloading, before processing and at the end; seven tries, transitions, history lines; no count query."""
    batch = ingest.submit(ingest.deposit.objects(1))
    ingest_settings()  # the row exists: the stage command reads it with the job
    with CaptureQueriesContext(connection) as queries:
        settle()
    job = BatchJob.objects.get(batch=batch)
    assert job.status == J.COMPLETED
    sqls = [query["sql"] for query in queries.captured_queries]
    moves = compare_and_sets(sqls)
    assert len(moves) == 3, "one compare-and-set per record"
    settings_reads = [sql for sql in sqls if "batches_ingestsettings" in sql]
    assert len(settings_reads) == 1 and "batches_batchjob j" in settings_reads[0], "read once, with the job"
    assert not [sql for sql in sqls if "COUNT(" in sql and "kernel_tasktry" in sql]
    tried = stage_tries(job)
    assert [t.name for t in tried] == ORDER
    assert [t.status for t in tried] == [*ORDER[1:], J.COMPLETED] and {t.attempt for t in tried} == {1}
    assert [r.to_status for r in StatusRecord.objects.filter(kind="batch-job", object_id=str(job.pk)).order_by("id")] == [
        *ORDER[1:], J.COMPLETED]
    ran = [entry for entry in job.history if "started" in entry]
    assert [entry["stage"] for entry in ran] == ORDER
    assert all(entry["at"] >= entry["started"] for entry in ran)
    assert job.last_successful_status == J.NOTIFY and not job.dispatched


def test_a_storage_error_between_stages_records_those_before_it_and_the_retry_goes_on_from_there(
    ingest: Ingest, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Recording fails once (retried): processing, recorded with it, does not run again; the second try counts 2."""
    real = STAGE_FUNCTIONS[J.RECORDING]
    calls: list[int] = []

    def flaky_recording(job: BatchJob) -> Outcome:
        calls.append(job.pk)
        if len(calls) == 1:
            raise ConnectionError("inventory unavailable")
        return real(job)

    monkeypatch.setitem(STAGE_FUNCTIONS, J.RECORDING, flaky_recording)
    batch = ingest.submit(ingest.deposit.objects(1))
    settle()
    job = BatchJob.objects.get(batch=batch)
    assert job.status == J.COMPLETED and len(calls) == 2
    recording = [(t.status, t.attempt, t.error_code) for t in stage_tries(job) if t.name == J.RECORDING]
    assert recording == [("RETRY", 1, "ConnectionError"), (J.NOTIFY, 2, "")]
    assert [t.name for t in stage_tries(job)].count(J.PROCESSING) == 1
    assert [entry["stage"] for entry in job.history if "started" in entry].count(J.PROCESSING) == 1
    processed = (Path(ingest.work) / "processing-calls.log").read_text().splitlines()
    assert len(processed) == 1, "the profile's task ran once"


def better_job_after_estimating(ingest: Ingest, monkeypatch: pytest.MonkeyPatch) -> tuple[BatchJob, BatchJob]:
    """Two objects, one slot: while the older job estimates, the other's priority becomes better; both, completed."""
    real = STAGE_FUNCTIONS[J.ESTIMATING]
    first: list[BatchJob] = []

    def estimating(job: BatchJob) -> Outcome:
        if not first:
            first.append(job)
            BatchJob.objects.filter(batch=job.batch).exclude(pk=job.pk).update(priority=0)
        return real(job)

    monkeypatch.setitem(STAGE_FUNCTIONS, J.ESTIMATING, estimating)
    batch = ingest.submit(ingest.deposit.objects(2))
    settle()
    older, better = BatchJob.objects.filter(batch=batch).order_by("number")
    assert (older.status, better.status) == (J.COMPLETED, J.COMPLETED) and first[0].pk == older.pk
    return older, better


def started(job: BatchJob, stage: str) -> str:
    """When the job's `stage` started, as its history says."""
    return next(entry["started"] for entry in job.history if entry["stage"] == stage and "started" in entry)


def test_a_better_job_that_becomes_runnable_between_two_stages_takes_the_slot_then(
    ingest: Ingest, monkeypatch: pytest.MonkeyPatch, settings: Any,
) -> None:
    """One slot: the older job gives it up after estimating when the other job's priority becomes better meanwhile."""
    settings.BATCH_SLOTS = 1
    settings.BATCH_CHAIN_HEAD_SECONDS = 0  # the head is read before every chained stage
    older, better = better_job_after_estimating(ingest, monkeypatch)
    assert started(older, J.ESTIMATING) < started(better, J.PENDING) < started(older, J.PROVISIONING)
    assert older.last_successful_status == J.NOTIFY


def test_a_better_job_waits_for_the_slot_no_longer_than_the_head_is_kept_or_the_next_record(
    ingest: Ingest, monkeypatch: pytest.MonkeyPatch, settings: Any,
) -> None:
    """The head read with the job goes on for its quick stages (kept a minute here); the record before downloading reads it again."""
    settings.BATCH_SLOTS = 1
    settings.BATCH_CHAIN_HEAD_SECONDS = 60
    asked: list[int] = []
    monkeypatch.setattr(stage_module, "runnable_head", lambda: asked.append(1))
    older, better = better_job_after_estimating(ingest, monkeypatch)
    assert started(older, J.PROVISIONING) < started(better, J.PENDING) < started(older, J.DOWNLOADING)
    assert not asked, "no chained stage read the head on its own"


def test_without_chaining_every_stage_is_a_dispatch_of_its_own(ingest: Ingest, settings: Any) -> None:
    """BATCH_CHAIN_STAGES=false: seven stage commands for one object, each stage recorded as it ends."""
    settings.BATCH_CHAIN_STAGES = False
    batch = ingest.submit(ingest.deposit.objects(1))
    with CaptureQueriesContext(connection) as queries:
        settle()
    job = BatchJob.objects.get(batch=batch)
    assert job.status == J.COMPLETED
    commands = Command.objects.filter(name="batches.BatchJobStageXCommand", params__job_id=job.pk)
    assert sorted(commands.values_list("params__token", flat=True)) == list(range(1, 8))
    assert [t.name for t in stage_tries(job)] == ORDER
    moves = compare_and_sets([q["sql"] for q in queries.captured_queries])
    assert len(moves) == 7, "one compare-and-set per stage"
