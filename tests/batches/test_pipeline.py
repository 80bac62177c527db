"""A batch end to end in process: submission, expansion, every stage, the report; failures and resume."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from batches.choices import BatchStatus as B
from batches.choices import JobStatus as J
from batches.models import Batch, BatchJob, InventoryFile, MintedIdentifier
from batches.services import batch_verb, job_verb
from tests.batches.tasks import switch
from tests.support.batches import Ingest, settle

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_manifest_of_manifests_runs_to_a_report_naming_the_bad_digests(ingest: Ingest, mailoutbox: Any) -> None:
    url = ingest.deposit.objects(10, wrong={3, 7})
    batch = ingest.submit(url)
    assert batch.status == B.PENDING
    settle()
    batch.refresh_from_db()
    assert batch.status == B.FAILED
    jobs = {job.number: job for job in BatchJob.objects.filter(batch=batch)}
    assert {n for n, job in jobs.items() if job.status == J.FAILED} == {3, 7}
    assert all(job.status == J.COMPLETED for n, job in jobs.items() if n not in (3, 7))
    assert "digest" in jobs[3].error and jobs[3].last_successful_status == J.PROVISIONING
    assert jobs[1].primary_id.startswith("ark:/99999/fk4") and jobs[1].last_successful_status == J.NOTIFY
    assert InventoryFile.objects.count() == 16
    report = batch.reports.get()
    assert report.body["counts"]["completed"] == 8 and sorted(report.body["failed_jobs"]) == sorted(
        [jobs[3].pk, jobs[7].pk])
    assert "obj003" in report.text and "digest" in report.text
    settle()
    assert len(mailoutbox) == 1 and "8 completed, 2 failed" in mailoutbox[0].subject


def test_resume_after_a_processing_failure_restarts_at_processing(ingest: Ingest) -> None:
    ingest.work.mkdir(parents=True, exist_ok=True)
    switch("fail-processing").touch()
    batch = ingest.submit(ingest.deposit.objects(2))
    settle()
    job = BatchJob.objects.filter(batch=batch).order_by("number").first()
    assert job is not None and job.status == J.FAILED and job.last_successful_status == J.DOWNLOADING
    minted = MintedIdentifier.objects.count()
    assert Batch.objects.get(pk=batch.pk).status == B.FAILED
    switch("fail-processing").unlink()
    job_verb(job.pk, "resume", actor=ingest.owner)
    settle()
    job.refresh_from_db()
    assert job.status == J.COMPLETED and job.retry_count == 1
    assert MintedIdentifier.objects.count() == minted, "no identifier minted twice"
    stages = [entry["stage"] for entry in job.history]
    assert stages.count(J.DOWNLOADING) == 1, stages
    batch_verb(batch.pk, "update-report", actor=ingest.owner)
    settle()
    batch.refresh_from_db()
    assert batch.reports.count() == 2


def test_a_job_that_walked_its_stages_shows_when_it_last_changed(ingest: Ingest) -> None:
    """"Last change" follows the stages (compare-and-set updates set it, as saves do), not the creation time."""
    batch = ingest.submit(ingest.deposit.objects(1))
    settle()
    job = BatchJob.objects.get(batch=batch)
    assert job.status == J.COMPLETED and len(job.history) >= 5
    last_stage = max(datetime.fromisoformat(entry["at"]) for entry in job.history)
    assert job.last_modified >= last_stage > job.created_at
