"""Status history of every kind: each change of a workflow job or node, bundle, batch, batch job or operation is a
row of kernel.StatusRecord (from, to, when, by which command or user, why), written with the change.

The batch fixtures run a whole pipeline in process (tests/batches/conftest.py): a batch starts an operation
and its jobs, so one run moves every kind but workflows, which have their own pipeline here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

import bundles.services as bundle_services
from batches.choices import BatchStatus as B
from batches.choices import JobStatus as J
from batches.models import BATCH_JOB_KIND, BATCH_KIND
from bundles.models import BUNDLE_KIND, BundleJob
from kernel.history import acting_as, current_actor, record_statuses
from kernel.models import StatusRecord
from operations.choices import OperationStatus
from operations.models import OPERATION_JOB_KIND, OPERATION_KIND
from tests.support.batches import Ingest, failed_batch
from tests.support.engine import run_pending_commands
from tests.workflows.api.factories import drive, pipeline_app, submit
from workflows.choices import WorkflowStatus
from workflows.models import NODE_KIND, WORKFLOW_KIND, WorkflowJob

pytestmark = pytest.mark.django_db(transaction=True)


def changes(kind: str, object_id: object) -> list[tuple[str, str, str]]:
    """(from, to, by) of one object's records, oldest first."""
    rows = StatusRecord.objects.filter(kind=kind, object_id=str(object_id)).order_by("at", "id")
    return [(row.from_status, row.to_status, row.by) for row in rows]


def test_a_batch_its_jobs_and_its_operation_record_each_change_by_the_command_that_made_it(ingest: Ingest) -> None:
    """pending -> processing -> reporting -> failed for the batch, each job's stages to completed or failed, the
    operation RUNNING -> FAILED: every row names the command (and the user who queued it) and says why."""
    batch = failed_batch(ingest, count=3, wrong=frozenset({2}))
    assert batch.status == B.FAILED
    steps = changes(BATCH_KIND, batch.pk)
    assert [(old, new) for old, new, _ in steps] == [
        (B.PENDING, B.PROCESSING), (B.PROCESSING, B.REPORTING), (B.REPORTING, B.FAILED)]
    # Started and reported by the batch's commands; moved to reporting by the operation's completion.
    assert [by for _, _, by in steps] == [
        "batches.BatchStartXCommand", "operations.OperationCompleteXCommand", "batches.BatchReportXCommand"]
    failed_job = batch.jobs.get(number=2)
    job_steps = changes(BATCH_JOB_KIND, failed_job.pk)
    assert job_steps[0][0] == J.PENDING and job_steps[-1][1] == J.FAILED and len(job_steps) >= 3
    assert all(by for _, _, by in job_steps)
    record = StatusRecord.objects.filter(kind=BATCH_JOB_KIND, object_id=str(failed_job.pk), to_status=J.FAILED).get()
    assert record.parent_id == str(batch.pk) and record.reason  # why it failed: the stage's error
    done = batch.jobs.get(number=1)
    assert changes(BATCH_JOB_KIND, done.pk)[-1][1] == J.COMPLETED
    assert changes(OPERATION_KIND, batch.operation_id) == [
        (OperationStatus.RUNNING, OperationStatus.FAILED,
         StatusRecord.objects.get(kind=OPERATION_KIND, object_id=str(batch.operation_id)).by)]
    assert StatusRecord.objects.get(kind=OPERATION_KIND, object_id=str(batch.operation_id)).by.startswith("operations.")
    jobs = StatusRecord.objects.filter(kind=OPERATION_JOB_KIND, parent_id=str(batch.operation_id))
    assert sorted(jobs.values_list("to_status", flat=True)) == ["FAILED", "SUCCEEDED", "SUCCEEDED"]


def test_a_bundle_records_its_start_by_the_command_and_a_verb_by_the_user_who_queued_it(
    make_bundle: Callable[..., BundleJob], ann: User,
) -> None:
    """PREP -> RUNNING by the start command; a suspend ann asked for is `<command> (ann)`."""
    bundle = make_bundle(name="nightly", owner=ann)
    steps = changes(BUNDLE_KIND, bundle.pk)
    assert steps == [("PREP", "RUNNING", "bundles.BundleStartXCommand")]
    bundle_services.control_bundle(bundle.pk, "suspend", actor=ann)
    run_pending_commands()
    assert changes(BUNDLE_KIND, bundle.pk)[-1] == ("RUNNING", "SUSPENDED", "bundles.BundleSuspendXCommand (ann)")


def test_a_workflow_and_its_nodes_record_each_change(ann: User, tmp_path: Path, in_process_engine: None) -> None:
    """The job PREP -> RUNNING -> KILLED (a node failed, the kill node ended it); each action node PREP -> RUNNING by
    its worker, then its end; the failed node's record says why."""
    with acting_as("api (ann)"):  # as the API's request names its user (project.middleware)
        workflow = submit(pipeline_app(tmp_path), ann)
    drive()
    assert WorkflowJob.objects.get(pk=workflow.pk).status == WorkflowStatus.KILLED
    steps = changes(WORKFLOW_KIND, workflow.pk)
    assert [(old, new) for old, new, _ in steps] == [("PREP", "RUNNING"), ("RUNNING", "KILLED")]
    assert steps[0][2] == "api (ann)" and steps[1][2].startswith("worker w1@host")  # ended by the failed node's report
    check = changes(NODE_KIND, f"{workflow.pk}@check")
    assert [(old, new) for old, new, _ in check] == [("PREP", "RUNNING"), ("RUNNING", "ERROR")]
    assert check[0][2].startswith("worker ")
    failed = StatusRecord.objects.get(kind=NODE_KIND, object_id=f"{workflow.pk}@check", to_status="ERROR")
    assert "FileNotFoundError" in failed.reason and failed.parent_id == workflow.pk


def test_a_change_rolled_back_leaves_no_record_and_an_unmoved_status_none(ann: User) -> None:
    """The record is written in the change's transaction: a rollback takes both; from == to records nothing."""
    now = timezone.now()
    with pytest.raises(RuntimeError), transaction.atomic():
        record_statuses([("batch", 1, "", "pending", "held", now, "")])
        raise RuntimeError("rolled back")
    record_statuses([("batch", 1, "", "held", "held", now, "")])
    assert not StatusRecord.objects.exists()


def test_the_actor_is_named_for_a_block_resolved_once_and_restored() -> None:
    """acting_as names who changes statuses; a lazy name is looked up on first use only; the outer one comes back."""
    calls: list[int] = []

    def lookup() -> str:
        calls.append(1)
        return "cmd (ann)"

    assert current_actor() == ""
    with acting_as("outer"):
        with acting_as("cmd", lookup):
            assert current_actor() == "cmd (ann)" and current_actor() == "cmd (ann)"
        assert current_actor() == "outer"
    assert calls == [1] and current_actor() == ""
