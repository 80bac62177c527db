"""Seed 003's rules, one by one, with commands run in process."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from kernel import sqlbatch
from kernel.models import StatusRecord
from operations.choices import JobStatus, OperationStatus
from operations.commands import JobContext, OperationCompleteXCommand
from operations.models import Operation, OperationJob
from operations.services import (
    OperationConflict,
    after_end_job,
    cancel_operation,
    end_job_params,
    end_job_statements,
    progress,
    start_operation,
)
from statusservice.operations import lost_completions
from tests.operations.types import COMPLETIONS
from tests.support.engine import run_all, run_pending_commands
from xcommands.keyed import TaskNotAllowed, enqueue_job
from xcommands.models import Command
from xcommands.queue import enqueue


def result_of(operation: Operation) -> dict[str, Any]:
    """The stored completion result (present once the operation finished)."""
    assert operation.result is not None
    return dict(operation.result)


pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]


@pytest.fixture(autouse=True)
def _fresh_completions() -> None:
    COMPLETIONS.clear()


def statuses(operation: Operation) -> dict[str, str]:
    return dict(operation.jobs.values_list("partition", "status"))


def test_start_records_the_operation_its_jobs_and_their_commands_at_once() -> None:
    """One job per partition, each queued on its partition's key; the operation RUNNING, who started it kept."""
    ann = User.objects.create_user("ann")
    operation = start_operation("test.steps", "table-1", {"steps": 2}, ["p1", "p2", "p2", "p3"], started_by=ann)
    assert (operation.status, operation.started_by) == (OperationStatus.RUNNING, ann)
    assert statuses(operation) == {"p1": JobStatus.ABSENT, "p2": JobStatus.ABSENT, "p3": JobStatus.ABSENT}
    assert sorted(Command.objects.values_list("key", flat=True)) == ["p1", "p2", "p3"]


def test_every_job_ends_and_the_operation_completes_once_with_its_result() -> None:
    """All jobs succeed -> the completion logic runs and the operation SUCCEEDED with its result and counts."""
    operation = start_operation("test.steps", "table-1", {"steps": 3}, ["p1", "p2"])
    run_all()
    operation.refresh_from_db()
    assert operation.status == OperationStatus.SUCCEEDED and operation.finished_at is not None
    assert result_of(operation)["counts"] == {JobStatus.SUCCEEDED: 2} and result_of(operation)["failed"] == []
    assert result_of(operation)["result"] == {"target": "table-1", "success": True}
    assert COMPLETIONS == [("table-1", True)]
    assert [job.progress["done"] for job in operation.jobs.all()] == [3, 3]


def test_a_failed_job_fails_the_operation_and_is_reported() -> None:
    """A job that ends unsuccessfully: the operation FAILED; the failed job and why are in the result."""
    operation = start_operation("test.steps", "table-1", {"fail": ["p2"]}, ["p1", "p2"])
    run_all()
    operation.refresh_from_db()
    assert operation.status == OperationStatus.FAILED
    assert result_of(operation)["failed"] == [{"partition": "p2", "error": "p2 is not valid"}]
    assert COMPLETIONS == [("table-1", False)]


def test_a_job_outcome_is_written_once() -> None:
    """mark_complete on a job that already has its outcome (a retried or zombie attempt) is a no-op, not an error."""
    operation = start_operation("test.steps", "table-1", {}, ["p1", "p2"])
    job = operation.jobs.get(partition="p1")
    assert JobContext(job, operation).mark_complete(False, "first") is True
    assert JobContext(job, operation).mark_complete(True) is False
    job.refresh_from_db()
    assert (job.status, job.error) == (JobStatus.FAILED, "first")


def test_completion_waits_for_every_job_and_is_idempotent() -> None:
    """No completion while a job runs; two completions queued: the operation is marked once, one result."""
    operation = start_operation("test.steps", "table-1", {}, ["p1", "p2"])
    Command.objects.filter(key="p2").delete()  # p2's job is held back: it has not run yet
    JobContext(operation.jobs.get(partition="p1"), operation).mark_complete(True)
    early = enqueue(OperationCompleteXCommand(operation_id=operation.pk, target="table-1"))
    run_pending_commands()
    early.refresh_from_db()
    assert early.status == "SKIPPED" and "unfinished" in str(early.history[-1]["note"])
    JobContext(operation.jobs.get(partition="p2"), operation).mark_complete(True)  # queues the completion
    enqueue(OperationCompleteXCommand(operation_id=operation.pk, target="table-1"))  # and a second one
    run_all()
    operation.refresh_from_db()
    assert operation.status == OperationStatus.SUCCEEDED and COMPLETIONS == [("table-1", True)]
    completions = Command.objects.filter(name=OperationCompleteXCommand.command_name).order_by("seq")
    assert [c.status for c in completions] == ["SKIPPED", "SUCCEEDED", "SKIPPED"]


def test_a_job_resumes_from_its_progress_after_its_attempt_died() -> None:
    """An attempt that dies mid-job is retried by the engine; the next one resumes where the progress says."""
    operation = start_operation("test.steps", "table-1", {"steps": 4, "crash_once": ["p1"]}, ["p1"])
    run_all()
    job = OperationJob.objects.get(operation=operation, partition="p1")
    assert job.status == JobStatus.SUCCEEDED and job.attempts == 2
    assert job.progress == {"done": 4, "visits": [0, 1, 2, 3], "starts": [0, 1]}  # the second attempt began at step 1


def test_a_volatile_job_starts_over() -> None:
    """A type whose jobs are not resumable starts a job over on its next attempt (progress reset)."""
    operation = start_operation("test.volatile", "table-1", {"steps": 4, "crash_once": ["p1"]}, ["p1"])
    run_all()
    job = OperationJob.objects.get(operation=operation, partition="p1")
    assert job.status == JobStatus.SUCCEEDED and job.attempts == 2
    assert job.progress["visits"] == [0, 1, 2, 3]


def test_incompatible_operations_are_refused_and_compatible_ones_run_together() -> None:
    """runOps: an exclusive operation refuses anything beside it; two compatible ones share the target."""
    first = start_operation("test.steps", "table-1", {}, ["p1"])
    second = start_operation("test.steps", "table-1", {}, ["p2"])  # compatible with itself
    with pytest.raises(OperationConflict, match=f"operation {first.pk} \\(test.steps"):
        start_operation("test.exclusive", "table-1", {}, ["p3"])
    assert start_operation("test.exclusive", "table-2", {}, ["p3"]).status == OperationStatus.RUNNING
    assert Operation.objects.count() == 3 and second.status == OperationStatus.RUNNING
    run_all()
    assert start_operation("test.exclusive", "table-1", {}, ["p4"]).status == OperationStatus.RUNNING


def test_cancel_cancels_unfinished_jobs_and_runs_their_cleanup() -> None:
    """Cancel: the operation and its unfinished jobs CANCELLED; the jobs' commands then find nothing to do."""
    operation = start_operation("test.steps", "table-1", {}, ["p1", "p2"])
    JobContext(operation.jobs.get(partition="p1"), operation).mark_complete(True)
    cancel_operation(operation.pk)
    run_all()
    operation.refresh_from_db()
    assert operation.status == OperationStatus.CANCELLED
    assert statuses(operation) == {"p1": JobStatus.SUCCEEDED, "p2": JobStatus.CANCELLED}
    assert COMPLETIONS == [] and Command.objects.filter(name="operations.OperationJobCancelXCommand").count() == 1
    with pytest.raises(ValueError, match="only a running one"):
        cancel_operation(operation.pk)


def test_a_lost_completion_is_found_by_the_service() -> None:
    """Every job ended but no completion ran (it was lost): the beat service queues it, once."""
    operation = start_operation("test.steps", "table-1", {}, ["p1"])
    run_all()
    Operation.objects.filter(pk=operation.pk).update(
        status=OperationStatus.RUNNING, finished_at=None, result=None, created_at=timezone.now() - timedelta(minutes=5)
    )
    assert lost_completions(timezone.now()) == 1
    assert lost_completions(timezone.now()) == 0  # queued already
    run_all()
    operation.refresh_from_db()
    assert operation.status == OperationStatus.SUCCEEDED


def test_progress_while_it_runs() -> None:
    """Counts by status, how many are done, and the failures so far."""
    operation = start_operation("test.steps", "table-1", {}, ["p1", "p2", "p3"])
    JobContext(operation.jobs.get(partition="p1"), operation).mark_complete(False, "bad")
    state = progress(operation)
    assert (state["total"], state["done"]) == (3, 1)
    assert state["counts"] == {JobStatus.ABSENT: 2, JobStatus.FAILED: 1}
    assert state["failed"] == [{"partition": "p1", "error": "bad"}]


def test_keys_of_completions_are_reserved() -> None:
    """Nobody queues keyed jobs under `operation:`: they could hold up a target's completions."""
    with pytest.raises(TaskNotAllowed, match="reserved"):
        enqueue_job("operation:table-1", "examples.noop")


def end_in_batch(operation: Operation, partition: str, success: bool, error: str = "", *, moved: bool = True) -> bool:
    """`end_job_statements` run in a batch whose own write did (or did not) happen, then `after_end_job`."""
    condition = "1 = 1" if moved else "1 = 0"
    with transaction.atomic():
        rows = sqlbatch.run(end_job_statements(condition),
                            end_job_params(operation.pk, partition, success, error))
        return after_end_job(operation.pk, rows[-1])


def test_an_outcome_written_in_the_callers_batch_is_written_once_and_the_last_one_queues_the_completion() -> None:
    """As `end_job`: the outcome and its status record once, nothing where the caller's write did not happen, the
    countdown, and the completion queued by the last outcome only; an ended operation takes no outcome."""
    operation = start_operation("test.steps", "table-1", {}, ["p1", "p2"])
    Command.objects.all().delete()  # the jobs are driven by hand here
    assert end_in_batch(operation, "p1", True, moved=False) is False
    assert statuses(operation)["p1"] == JobStatus.ABSENT
    assert end_in_batch(operation, "p1", False, "bad 'input'") is True
    assert end_in_batch(operation, "p1", True) is False  # written once
    job = operation.jobs.get(partition="p1")
    assert (job.status, job.error) == (JobStatus.FAILED, "bad 'input'") and job.finished_at is not None
    records = list(StatusRecord.objects.filter(kind="operation-job", object_id="p1").values_list(
        "parent_id", "from_status", "to_status", "reason"))
    assert records == [(str(operation.pk), JobStatus.ABSENT, JobStatus.FAILED, "bad 'input'")]
    assert not Command.objects.filter(name=OperationCompleteXCommand.command_name).exists()
    operation.refresh_from_db()
    assert operation.remaining == 1
    assert end_in_batch(operation, "p2", True) is True
    assert Command.objects.filter(name=OperationCompleteXCommand.command_name, key__contains="table-1").count() == 1
    run_all()
    operation.refresh_from_db()
    assert operation.status == OperationStatus.FAILED and COMPLETIONS == [("table-1", False)]
    other = start_operation("test.steps", "table-2", {}, ["q1"])
    cancel_operation(other.pk)
    assert end_in_batch(other, "q1", True) is False and statuses(other) == {"q1": JobStatus.CANCELLED}
