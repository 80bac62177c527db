"""Every transition of seed 002 (`transition.md`), batch and job, one test each (commands run in process)."""

from __future__ import annotations

import hashlib
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from batches.choices import BatchStatus as B
from batches.choices import JobStatus as J
from batches.commands import BatchStartXCommand, NeedsConfirmation
from batches.config import ingest_settings
from batches.definitions import Digest, ObjectSpec, parse_manifest, write_batch_manifest
from batches.models import Batch, BatchJob, InventoryFile, MintedIdentifier, Slot
from batches.services import batch_verb, hold_collection, job_verb, release_collection
from batches.stages import STAGE_FUNCTIONS, Outcome, StageFailed, free_bytes
from kernel.models import TaskTry
from kernel.permissions import JobPermissionDenied
from kernel.statemachine import IllegalTransition
from operations.choices import JobStatus as OperationJobStatus
from operations.models import OperationJob
from statusservice.batches import housekeeping
from tests.batches.tasks import switch
from tests.support.batches import Ingest, settle
from tests.support.engine import run_pending_commands
from xcommands.models import Command
from xcommands.queue import enqueue

pytestmark = pytest.mark.django_db(transaction=True)


def jobs_of(batch: Batch) -> list[BatchJob]:
    return list(BatchJob.objects.filter(batch=batch).order_by("number"))


def stages_run(job: BatchJob) -> list[str]:
    """The stages of the job's history that ran (not waits, not admin moves)."""
    return [entry["stage"] for entry in job.history if "started" in entry]


@pytest.fixture
def admin(ingest: Ingest) -> Any:
    return User.objects.create_superuser("ops", "ops@example.com", "pw")


# ---- batch transitions ------------------------------------------------------------------------


def test_submission_stores_a_pending_batch_and_nothing_else(ingest: Ingest) -> None:
    """API call -> pending: light; its objects are not jobs yet."""
    batch = ingest.submit(ingest.deposit.objects(2))
    assert (batch.status, BatchJob.objects.count()) == (B.PENDING, 0)
    assert "#%checkm_0.7" in batch.manifest


def test_pending_batch_of_a_held_collection_is_held_and_release_brings_it_back(ingest: Ingest, admin: Any) -> None:
    """Pending -> held (collection hold); held -> pending (admin release, collection released first) -> processing."""
    hold_collection("demo", actor=admin, reason="storage migration")
    batch = ingest.submit(ingest.deposit.objects(2))
    settle()
    batch.refresh_from_db()
    assert batch.status == B.HELD and "held" in batch.error and BatchJob.objects.count() == 0
    with pytest.raises(IllegalTransition, match="still held"):
        batch_verb(batch.pk, "release", actor=admin)
    _, batches, _ = release_collection("demo", actor=admin)
    assert batches == 1
    settle()
    batch.refresh_from_db()
    assert batch.status == B.COMPLETED and len(jobs_of(batch)) == 2


def test_pending_to_processing_creates_one_configured_job_per_object_and_the_operation(ingest: Ingest) -> None:
    """Pending -> processing: configuration, identifiers, priority, working directory; the batch's operation."""
    batch = ingest.submit(ingest.deposit.objects(3), priority=7)
    Command.objects.all().delete()  # run the start alone
    enqueue(BatchStartXCommand(batch_id=batch.pk))
    Command.objects.filter(name="batches.BatchJobStageXCommand").delete()
    run_pending_commands()
    batch.refresh_from_db()
    jobs = jobs_of(batch)
    assert batch.status == B.PROCESSING and batch.operation is not None
    assert [job.local_ids for job in jobs] == [["obj001"], ["obj002"], ["obj003"]]
    assert {job.priority for job in jobs} == {7} and {job.status for job in jobs} == {J.PENDING}
    assert all(job.working_dir.endswith(f"/{batch.pk}/{job.pk}") for job in jobs)
    assert all(job.object_key == f"object:demo:local:{job.local_ids[0]}" for job in jobs)
    assert all(job.last_successful_status == "" and job.retry_count == 0 for job in jobs)
    assert batch.operation.target == "collection:demo" and batch.operation.type == "batch"
    assert OperationJob.objects.filter(operation=batch.operation, status=OperationJobStatus.RUNNING).count() == 3


def test_processing_to_reporting_to_completed_when_every_job_completed(ingest: Ingest, mailoutbox: Any) -> None:
    batch = ingest.submit(ingest.deposit.objects(3))
    settle()
    batch.refresh_from_db()
    report = batch.reports.get()
    assert batch.status == B.COMPLETED and report.kind == "initial" and report.body["counts"]["completed"] == 3
    assert batch.finished_at is not None
    assert [m.subject for m in mailoutbox] == [f"Batch {batch.pk} report: 3 completed, 0 failed"]
    assert report.deliveries.get().status == "SENT"


def test_reporting_to_failed_when_a_job_failed(ingest: Ingest) -> None:
    batch = ingest.submit(ingest.deposit.objects(3, wrong={2}))
    settle()
    batch.refresh_from_db()
    assert batch.status == B.FAILED and batch.reports.get().body["counts"]["failed"] == 1


def test_failed_to_update_reporting_to_completed_after_the_failed_job_is_fixed(ingest: Ingest, mailoutbox: Any) -> None:
    """Failed -> update-reporting (admin) -> completed: the update report lists what completed since the first."""
    switch("fail-processing").parent.mkdir(parents=True, exist_ok=True)
    switch("fail-processing").touch()
    batch = ingest.submit(ingest.deposit.objects(2))
    settle()
    assert Batch.objects.get(pk=batch.pk).status == B.FAILED
    switch("fail-processing").unlink()
    for job in jobs_of(batch):
        job_verb(job.pk, "resume", actor=ingest.owner)
    settle()
    assert {job.status for job in jobs_of(batch)} == {J.COMPLETED}
    assert Batch.objects.get(pk=batch.pk).status == B.FAILED  # reported once; the admin says when to report again
    batch_verb(batch.pk, "update-report", actor=ingest.owner)
    settle()
    batch.refresh_from_db()
    update = batch.reports.order_by("number").last()
    assert batch.status == B.COMPLETED and update is not None and update.kind == "update"
    assert update.body["completed_since_last_report"] == 2 and update.body["unresolved"] == []
    assert "update report" in mailoutbox[-1].subject


def test_update_reporting_to_failed_when_jobs_are_still_unresolved(ingest: Ingest) -> None:
    batch = ingest.submit(ingest.deposit.objects(2, wrong={1}))
    settle()
    batch_verb(batch.pk, "update-report", actor=ingest.owner)
    settle()
    batch.refresh_from_db()
    update = batch.reports.order_by("number").last()
    assert batch.status == B.FAILED and update is not None and len(update.body["unresolved"]) == 1


def test_failed_batch_is_deleted_only_when_confirmed(ingest: Ingest) -> None:
    """Failed -> deleted (admin): its jobs deleted, working directories removed."""
    batch = ingest.submit(ingest.deposit.objects(2, wrong={1}))
    settle()
    failed = jobs_of(batch)[0]
    Path(failed.working_dir).mkdir(parents=True, exist_ok=True)
    with pytest.raises(NeedsConfirmation):
        batch_verb(batch.pk, "delete", actor=ingest.owner)
    batch_verb(batch.pk, "delete", actor=ingest.owner, confirmed=True)
    settle()
    batch.refresh_from_db()
    assert batch.status == B.DELETED and {job.status for job in jobs_of(batch)} == {J.DELETED}
    assert not Path(failed.working_dir).exists()


def test_held_batch_is_deleted(ingest: Ingest, admin: Any) -> None:
    hold_collection("demo", actor=admin)
    batch = ingest.submit(ingest.deposit.objects(1))
    settle()
    batch_verb(batch.pk, "delete", actor=admin, confirmed=True)
    settle()
    assert Batch.objects.get(pk=batch.pk).status == B.DELETED


def test_completed_batches_are_cleaned_up_after_the_retention_period(ingest: Ingest, settings: Any) -> None:
    """Completed -> automatic cleanup: rows, reports and directories go after BATCH_RETENTION_DAYS."""
    batch = ingest.submit(ingest.deposit.objects(1))
    settle()
    housekeeping(timezone.now())
    assert Batch.objects.filter(pk=batch.pk).exists()
    Batch.objects.filter(pk=batch.pk).update(finished_at=timezone.now() - timedelta(days=settings.BATCH_RETENTION_DAYS + 1))
    assert housekeeping(timezone.now())["expired_batches"] == 1
    assert not Batch.objects.filter(pk=batch.pk).exists() and not BatchJob.objects.exists()
    assert InventoryFile.objects.count() == 2  # the inventory stays: it is the record of what was ingested


# ---- job transitions --------------------------------------------------------------------------


def test_job_pending_to_failed_on_a_corrupt_object_manifest_cannot_be_resumed(ingest: Ingest) -> None:
    """Pending -> failed: no success behind it, so no resume (a requeue, or a new submission)."""
    url = ingest.deposit.objects(2)
    (ingest.deposit.root / "obj002.checkm").write_text("#%checkm_0.7\n#%fields | nfo:fileUrl\nfile:///x\n")  # no #%eof
    batch = ingest.submit(url)
    settle()
    job = jobs_of(batch)[1]
    assert job.status == J.FAILED and job.last_successful_status == "" and "truncated" in job.error
    with pytest.raises(IllegalTransition, match="requeue"):
        job_verb(job.pk, "resume", actor=ingest.owner)


def test_job_pending_to_held_when_its_collection_was_held_after_it_was_created(ingest: Ingest, admin: Any) -> None:
    """Pending -> held, and held -> pending (admin release) -> on through every stage."""
    batch = ingest.submit(ingest.deposit.objects(1))
    Command.objects.all().delete()
    enqueue(BatchStartXCommand(batch_id=batch.pk))
    Command.objects.filter(name="batches.BatchJobStageXCommand").delete()
    run_pending_commands()
    BatchJob.objects.filter(batch=batch).update(dispatched=False)
    Slot.objects.update(job=None)
    hold_collection("demo", actor=admin)
    settle()
    job = jobs_of(batch)[0]
    assert job.status == J.HELD
    with pytest.raises(IllegalTransition):
        job_verb(job.pk, "resume", actor=admin)
    release_collection("demo", actor=admin)
    settle()
    job.refresh_from_db()
    assert job.status == J.COMPLETED
    assert [e["to"] for e in job.history][:3] == [J.HELD, J.PENDING, J.ESTIMATING]


def test_estimating_sets_space_needed_and_demotes_a_very_large_job(ingest: Ingest) -> None:
    """Estimating -> provisioning: sizes from the manifest; above the large-job size, the large-job priority."""
    config = ingest_settings()
    config.large_job_bytes, config.large_job_priority = 30, 40
    config.save()
    url = ingest.deposit.objects(1, files=3)  # 3 files of 15 bytes: 45 > 30
    batch = ingest.submit(url)
    settle()
    job = jobs_of(batch)[0]
    assert job.status == J.COMPLETED and job.priority == 40
    estimate = next(e for e in job.history if e["stage"] == J.ESTIMATING)
    assert estimate["to"] == J.PROVISIONING and "priority 5 -> 40" in estimate["note"]


def test_provisioning_waits_while_space_is_short_and_goes_on_when_it_frees(ingest: Ingest) -> None:
    """Provisioning never fails: it waits (no slot held, not before the sleep) until the reserve allows it."""
    config = ingest_settings()
    config.reserve_bytes = free_bytes() * 4
    config.provision_sleep_seconds = 60
    config.save()
    batch = ingest.submit(ingest.deposit.objects(2))
    settle()
    jobs = jobs_of(batch)
    assert {job.status for job in jobs} == {J.PROVISIONING} and not any(job.dispatched for job in jobs)
    assert all(job.not_before is not None and job.not_before > timezone.now() + timedelta(seconds=50) for job in jobs)
    BatchJob.objects.filter(batch=batch).update(not_before=timezone.now())  # the sleep is over: looked at again
    settle()
    waits = [e for e in jobs_of(batch)[0].history if e.get("waits")]
    assert len(waits) == 1 and waits[0]["tries"] == 2 and "waits for space" in waits[0]["note"]
    config.reserve_bytes = 0
    config.save()
    BatchJob.objects.filter(batch=batch).update(not_before=timezone.now())
    settle()
    assert {job.status for job in jobs_of(batch)} == {J.COMPLETED}


def test_downloading_fails_after_its_retries_and_resume_downloads_again(ingest: Ingest, settings: Any) -> None:
    """Downloading -> failed (a file that keeps failing); failed -> downloading (admin resume)."""
    settings.BATCH_DOWNLOAD_RETRIES = 1
    url = ingest.deposit.objects(1)
    missing = ingest.deposit.root / "obj001" / "file1.txt"
    content = missing.read_bytes()
    missing.unlink()
    batch = ingest.submit(url)
    settle()
    job = jobs_of(batch)[0]
    assert job.status == J.FAILED and job.last_successful_status == J.PROVISIONING
    assert "2 attempt(s)" in job.error
    done = [f for f in job.files if f.get("done")]
    assert [f["name"] for f in done] == ["file0.txt"], "the file that arrived is recorded"
    missing.write_bytes(content)
    job_verb(job.pk, "resume", actor=ingest.owner)
    settle()
    job.refresh_from_db()
    assert job.status == J.COMPLETED and job.retry_count == 1
    assert stages_run(job).count(J.DOWNLOADING) == 2 and stages_run(job).count(J.PROVISIONING) == 1
    resumed = [e for e in job.history if e.get("note", "").startswith("resume")]
    assert resumed and resumed[0]["to"] == J.DOWNLOADING


def test_a_digest_mismatch_fails_at_once_without_retry(ingest: Ingest, settings: Any) -> None:
    settings.BATCH_DOWNLOAD_RETRIES = 5
    batch = ingest.submit(ingest.deposit.objects(1, wrong={1}))
    settle()
    job = jobs_of(batch)[0]
    assert job.status == J.FAILED and "does not match the manifest" in job.error
    assert stages_run(job).count(J.DOWNLOADING) == 1


def test_processing_fails_and_resume_restarts_at_processing_without_downloading_or_minting(ingest: Ingest) -> None:
    """Processing -> failed; failed -> processing (admin resume): the files and the minted id are kept."""
    switch("fail-processing").parent.mkdir(parents=True, exist_ok=True)
    switch("fail-processing").touch()
    batch = ingest.submit(ingest.deposit.objects(1))
    settle()
    job = jobs_of(batch)[0]
    assert job.status == J.FAILED and job.last_successful_status == J.DOWNLOADING and "storage unavailable" in job.error
    minted = list(MintedIdentifier.objects.values_list("identifier", flat=True))
    assert minted == [job.primary_id]
    stamps = {f: os.stat(Path(job.working_dir) / "producer" / f).st_mtime_ns for f in ("file0.txt", "file1.txt")}
    switch("fail-processing").unlink()
    job_verb(job.pk, "resume", actor=ingest.owner)
    settle()
    job.refresh_from_db()
    assert job.status == J.COMPLETED and job.primary_id == minted[0]
    assert list(MintedIdentifier.objects.values_list("identifier", flat=True)) == minted
    assert stages_run(job).count(J.DOWNLOADING) == 1 and stages_run(job).count(J.PROCESSING) == 2
    assert stamps  # the working directory was there to resume from (it is removed on completion)
    # Every run of every stage is a try of the job; the failed processing stays beside the one that worked.
    tried = list(TaskTry.objects.filter(kind="stage", object_id=str(job.pk)).order_by("id"))
    assert [t.name for t in tried].count(J.PROCESSING) == 2 and all(t.job_id == str(batch.pk) for t in tried)
    failed = [t for t in tried if t.status == J.FAILED]
    assert len(failed) == 1 and failed[0].name == J.PROCESSING and "storage unavailable" in failed[0].error_message
    assert "Traceback (most recent call last)" in failed[0].traceback


@pytest.mark.parametrize("stage", [J.RECORDING, J.NOTIFY])
def test_recording_and_notify_fail_and_resume_at_the_same_stage(ingest: Ingest, monkeypatch: pytest.MonkeyPatch,
                                                                 stage: str) -> None:
    """Recording -> failed, failed -> recording; notify -> failed, failed -> notify."""
    real = STAGE_FUNCTIONS[stage]

    def broken(job: BatchJob) -> Outcome:
        raise StageFailed(f"{stage} service unavailable")

    monkeypatch.setitem(STAGE_FUNCTIONS, stage, broken)
    batch = ingest.submit(ingest.deposit.objects(1))
    settle()
    job = jobs_of(batch)[0]
    before: str = {str(J.RECORDING): str(J.PROCESSING), str(J.NOTIFY): str(J.RECORDING)}[stage]
    assert job.status == J.FAILED and job.last_successful_status == before
    monkeypatch.setitem(STAGE_FUNCTIONS, stage, real)
    job_verb(job.pk, "resume", actor=ingest.owner)
    settle()
    job.refresh_from_db()
    assert job.status == J.COMPLETED
    resumed = [e for e in job.history if e.get("note", "").startswith("resume")]
    assert resumed[0]["to"] == stage
    assert stages_run(job).count(J.PROCESSING) == 1


def test_notify_fails_when_the_callback_does_not_answer(ingest: Ingest) -> None:
    ingest.profile.callback_url = "http://127.0.0.1:9/ingest-callback"
    ingest.profile.save()
    batch = ingest.submit(ingest.deposit.objects(1))
    settle()
    job = jobs_of(batch)[0]
    assert job.status == J.FAILED and job.last_successful_status == J.RECORDING and "callback" in job.error


def test_completed_job_loses_its_working_directory_and_keeps_its_data(ingest: Ingest) -> None:
    """Completed -> (deleted queue entry): the working directory goes, the job's data stays for reporting."""
    batch = ingest.submit(ingest.deposit.objects(1))
    settle()
    job = jobs_of(batch)[0]
    assert job.status == J.COMPLETED and job.cleaned_at is not None and not Path(job.working_dir).exists()
    assert job.primary_id and job.files and job.inventory_version == 1


def test_failed_job_is_deleted_with_confirmation_while_its_batch_is_not_complete(ingest: Ingest) -> None:
    """Failed -> deleted (admin); held -> deleted (admin)."""
    switch("fail-processing").parent.mkdir(parents=True, exist_ok=True)
    switch("fail-processing").touch()
    batch = ingest.submit(ingest.deposit.objects(1))
    settle()
    job = jobs_of(batch)[0]
    Batch.objects.filter(pk=batch.pk).update(status=B.UPDATE_REPORTING)  # not complete yet
    with pytest.raises(NeedsConfirmation, match="never told"):
        job_verb(job.pk, "delete", actor=ingest.owner)
    job_verb(job.pk, "delete", actor=ingest.owner, confirmed=True)
    settle()
    job.refresh_from_db()
    assert job.status == J.DELETED and not Path(job.working_dir).exists()


def test_held_job_is_deleted_and_no_longer_holds_up_its_batch(ingest: Ingest, admin: Any) -> None:
    batch = ingest.submit(ingest.deposit.objects(2))
    Command.objects.all().delete()
    enqueue(BatchStartXCommand(batch_id=batch.pk))
    Command.objects.filter(name="batches.BatchJobStageXCommand").delete()
    run_pending_commands()
    BatchJob.objects.filter(batch=batch).update(dispatched=False)
    Slot.objects.update(job=None)
    hold_collection("demo", actor=admin)
    settle()
    first, second = jobs_of(batch)
    assert (first.status, second.status) == (J.HELD, J.HELD)
    job_verb(first.pk, "delete", actor=admin, confirmed=True)
    release_collection("demo", actor=admin)
    settle()
    batch.refresh_from_db()
    first.refresh_from_db()
    assert first.status == J.DELETED
    assert batch.status == B.COMPLETED and batch.reports.get().body["counts"]["deleted"] == 1


def test_requeue_starts_a_failed_job_over_and_its_running_batch_waits_for_it(
    ingest: Ingest, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Failed -> pending (requeue, ours); its failure is withdrawn from the running batch's operation."""
    real = STAGE_FUNCTIONS[J.PROVISIONING]
    stall = {"on": True}

    def stalled(job: BatchJob) -> Outcome:  # object 1 waits for space (a minute a look) until the test lets it go
        return Outcome(None, wait_seconds=60, note="stalled") if stall["on"] and job.number == 1 else real(job)

    monkeypatch.setitem(STAGE_FUNCTIONS, J.PROVISIONING, stalled)
    url = ingest.deposit.objects(2)
    manifest = ingest.deposit.root / "obj002.checkm"
    good = manifest.read_text()
    manifest.write_text("#%checkm_0.7\n")
    batch = ingest.submit(url)
    settle(rounds=20)
    first, second = jobs_of(batch)
    assert second.status == J.FAILED and first.status == J.PROVISIONING
    assert Batch.objects.get(pk=batch.pk).status == B.PROCESSING
    manifest.write_text(good)
    job_verb(second.pk, "requeue", actor=ingest.owner)
    settle(rounds=20)
    second.refresh_from_db()
    assert second.status == J.COMPLETED and second.retry_count == 1
    assert Batch.objects.get(pk=batch.pk).status == B.PROCESSING, "object 1 is still in flight"
    stall["on"] = False
    BatchJob.objects.filter(pk=first.pk).update(not_before=timezone.now())  # its wait for space is over
    settle()
    batch.refresh_from_db()
    assert batch.status == B.COMPLETED, "the requeued job's failure no longer counts"
    assert batch.reports.get().body["counts"] == {"jobs": 2, "completed": 2, "failed": 0, "deleted": 0, "unresolved": 0}


def test_others_may_not_act_on_a_batch(ingest: Ingest) -> None:
    batch = ingest.submit(ingest.deposit.objects(1, wrong={1}))
    settle()
    mallory = User.objects.create_user("mallory")
    with pytest.raises(JobPermissionDenied):
        job_verb(jobs_of(batch)[0].pk, "resume", actor=mallory)
    with pytest.raises(JobPermissionDenied):
        batch_verb(batch.pk, "update-report", actor=mallory)
    with pytest.raises(JobPermissionDenied):
        hold_collection("demo", actor=mallory)


def test_job_pending_to_failed_when_its_object_manifest_does_not_match_the_depositors_digest(ingest: Ingest) -> None:
    """Pending -> failed (seed: "payload digest does not match depositor digest"); the good one goes on."""
    url = ingest.deposit.objects(2)
    rows = parse_manifest((ingest.deposit.root / "obj-batch.checkm").read_bytes(), base_url=url).objects
    good = hashlib.md5((ingest.deposit.root / "obj001.checkm").read_bytes()).hexdigest()  # noqa: S324
    specs = [
        ObjectSpec(local_ids=rows[0].local_ids, manifest_url=rows[0].manifest_url, manifest_digest=Digest("md5", good)),
        ObjectSpec(local_ids=rows[1].local_ids, manifest_url=rows[1].manifest_url, manifest_digest=Digest("md5", "1" * 32)),
    ]
    (ingest.deposit.root / "obj-batch.checkm").write_text(write_batch_manifest(specs))
    batch = ingest.submit(url)
    settle()
    first, second = jobs_of(batch)
    assert first.status == J.COMPLETED
    assert second.status == J.FAILED and second.last_successful_status == "" and "does not match" in second.error
    assert [e["stage"] for e in second.history] == [J.PENDING]
