"""Native batch-job API: list in taking order with filters, detail with files and history, and the job verbs with their effects."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from batches.choices import BatchStatus as B
from batches.choices import JobStatus as J
from batches.models import Batch, BatchJob, Collection
from tests.batches.tasks import switch
from tests.coordinators.api.factories import api
from tests.support.batches import Ingest, batch_with_held_jobs, failed_batch, settle
from xcommands import engine
from xcommands.choices import CommandStatus
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)

JOBS = "/api/v1/batch-jobs/"


def job_of(batch: Batch, number: int) -> BatchJob:
    return BatchJob.objects.get(batch=batch, number=number)


def verb(account: User, job: BatchJob, name: str, body: dict[str, Any] | None = None) -> Any:
    return api(account).post(f"{JOBS}{job.pk}/{name}/", body or {}, format="json")


def test_list_is_in_taking_order_with_filters(ingest: Ingest, ann: User) -> None:
    """Jobs by priority, then id; status, priority (exact and range), profile, collection, batch, local and primary ids narrow it."""
    batch = failed_batch(ingest, count=4, wrong=frozenset({2}))
    jobs = {job.number: job for job in BatchJob.objects.filter(batch=batch)}
    BatchJob.objects.filter(pk=jobs[3].pk).update(priority=1)
    BatchJob.objects.filter(pk=jobs[4].pk).update(priority=9)
    other = failed_batch(ingest, count=1, wrong=frozenset({1}), prefix="zz")

    def numbers(query: str = "", batch_id: int = batch.pk) -> list[int]:
        joiner = "&" if query else ""
        response = api(ann).get(f"{JOBS}?batch={batch_id}{joiner}{query}")
        assert response.status_code == 200, response.content
        return [row["number"] for row in response.json()["results"]]

    assert numbers() == [3, 1, 2, 4]
    assert numbers("status=failed") == [2] and numbers("status=failed,completed") == [3, 1, 2, 4]
    assert numbers("priority=9") == [4] and numbers("priority_min=5") == [1, 2, 4]
    assert numbers("priority_max=5") == [3, 1, 2] and numbers("priority_min=2&priority_max=8") == [1, 2]
    assert numbers("local_id=obj002") == [2] and numbers("local_id=obj00") == []
    assert numbers(f"primary_id={jobs[1].primary_id}") == [1] and jobs[1].primary_id
    assert numbers("profile=demo") == numbers("collection=demo") == [3, 1, 2, 4]
    assert numbers("collection=nope") == []
    everything = [row["id"] for row in api(ann).get(JOBS).json()["results"]]
    assert set(everything) == {*(job.pk for job in jobs.values()), job_of(other, 1).pk}
    listed = api(ann).get(f"{JOBS}?local_id=zz001").json()["results"]
    assert [row["id"] for row in listed] == [job_of(other, 1).pk] and "history" not in listed[0]
    for bad in ("priority=100", "priority=-1", "priority=high", "priority_min=1e3", "batch=abc", "batch=" + "9" * 30,
                "status=running", "local_id=" + "x" * 300):
        assert api(ann).get(f"{JOBS}?{bad}").status_code == 400, bad


def test_list_reads_a_page_in_a_fixed_number_of_queries(ingest: Ingest, ann: User) -> None:
    """A page of 1 or 40 jobs costs the same queries."""
    batch = failed_batch(ingest, count=1, wrong=frozenset())
    BatchJob.objects.bulk_create([
        BatchJob(batch=batch, number=n, object_key=f"k{n}", payload_url="memory://x", payload_type="file",
                 working_dir="", status=J.COMPLETED)
        for n in range(2, 42)
    ])
    client = api(ann)
    client.get(f"{JOBS}?limit=1")
    counts = []
    for limit in (1, 40):
        with CaptureQueriesContext(connection) as captured:
            assert len(client.get(f"{JOBS}?limit={limit}").json()["results"]) == limit
        counts.append(len(captured))
    assert counts[0] == counts[1]


def test_detail_shows_files_identifiers_history_and_errors(ingest: Ingest, ann: User) -> None:
    """A failed job's detail: its files with digests, its error, its stage history, last success and space needed."""
    batch = failed_batch(ingest, count=2, wrong=frozenset({2}))
    failed, completed = job_of(batch, 2), job_of(batch, 1)
    detail = api(ann).get(f"{JOBS}{failed.pk}/").json()
    assert (detail["status"], detail["last_successful_status"], detail["retry_count"]) == ("failed", "provisioning", 0)
    assert "digest" in detail["error"] and detail["local_ids"] == ["obj002"] and detail["space_needed"] > 0
    assert [f["name"] for f in detail["files"]] == ["file0.txt", "file1.txt"]
    assert [entry["stage"] for entry in detail["history"]][:3] == ["pending", "estimating", "provisioning"]
    assert detail["history"][-1]["to"] == "failed" and detail["blocked_by"] is None
    assert detail["batch_url"].endswith(f"/api/v1/batches/{batch.pk}/") and detail["id_text"] == f"jid{failed.pk:07d}"
    done = api(ann).get(f"{JOBS}{completed.pk}/").json()
    assert done["status"] == "completed" and done["primary_id"].startswith("ark:/99999/fk4") and done["minted"]
    assert api(ann).get(f"{JOBS}999999/").status_code == 404
    assert api(ann).get(f"{JOBS}abc/").status_code == 404


def test_a_newer_job_of_the_same_object_shows_what_it_waits_for(ingest: Ingest, ann: User) -> None:
    """Two batches of the same objects: the newer job is blocked_by the older one while that is in flight."""
    first = ingest.submit(ingest.deposit.objects(1, prefix="same"))
    second = ingest.submit(ingest.deposit.objects(1, prefix="same"))
    for _ in range(2):
        start = Command.objects.filter(status=CommandStatus.PENDING, key__startswith="batch:").order_by("seq").first()
        assert start is not None
        Command.objects.filter(pk=start.pk).update(not_before=timezone.now())
        engine.process(start.pk)
    older, newer = job_of(first, 1), job_of(second, 1)
    assert api(ann).get(f"{JOBS}{newer.pk}/").json()["blocked_by"] == older.pk
    settle()
    assert api(ann).get(f"{JOBS}{newer.pk}/").json()["blocked_by"] is None
    assert BatchJob.objects.get(pk=newer.pk).status == J.COMPLETED


def test_resume_restarts_a_failed_job_at_its_failed_stage(ingest: Ingest, ann: User) -> None:
    """resume/ of a job that failed in processing: 202, and once settled it completed with retry_count 1."""
    ingest.work.mkdir(parents=True, exist_ok=True)
    switch("fail-processing").touch()
    batch = failed_batch(ingest, count=1, wrong=frozenset(), expect=B.FAILED)
    job = job_of(batch, 1)
    assert (job.status, job.last_successful_status) == (J.FAILED, J.DOWNLOADING)
    switch("fail-processing").unlink()
    response = verb(ann, job, "resume")
    assert response.status_code == 202, response.content
    assert response.json()["id"] == job.pk and response.json()["status"] == "failed"  # as it was when queued
    settle()
    job.refresh_from_db()
    assert (job.status, job.retry_count) == (J.COMPLETED, 1)
    assert verb(ann, job, "resume").status_code == 409  # completed: nothing to resume


def test_a_job_that_failed_before_any_success_is_requeued_not_resumed(ingest: Ingest, ann: User) -> None:
    """A corrupt object manifest fails the job from pending: resume is 409 (naming requeue); requeue/ sends it back to pending."""
    url = ingest.deposit.objects(2)
    (ingest.deposit.root / "obj001.checkm").write_text("#%checkm_0.7\ngarbage\n")
    batch = ingest.submit(url)
    settle()
    job = job_of(batch, 1)
    assert (job.status, job.last_successful_status) == (J.FAILED, "")
    commands = Command.objects.count()
    refused = verb(ann, job, "resume")
    assert refused.status_code == 409 and "requeue" in refused.json()["detail"]
    assert Command.objects.count() == commands
    ingest.deposit.objects(2)  # the depositor fixed the manifest
    assert verb(ann, job, "requeue").status_code == 202
    settle()
    job.refresh_from_db()
    assert (job.status, job.retry_count) == (J.COMPLETED, 1)
    assert [entry["to"] for entry in job.history].count("pending") == 1


def test_delete_of_a_job_needs_confirmation_while_its_batch_is_not_complete(ingest: Ingest, ann: User) -> None:
    """A held job of a processing batch: delete/ without confirm is 409 and queues nothing; confirmed, it is deleted."""
    batch = batch_with_held_jobs(ingest)
    job = job_of(batch, 1)
    commands = Command.objects.count()
    assert api(ann).delete(f"{JOBS}{job.pk}/", {"confirm": True}, format="json").status_code == 405
    refused = verb(ann, job, "delete")
    assert refused.status_code == 409 and "never told" in refused.json()["detail"]
    assert Command.objects.count() == commands
    assert verb(ann, job, "delete", {"confirm": True}).status_code == 202
    settle()
    assert job_of(batch, 1).status == J.DELETED and job_of(batch, 2).status == J.HELD


def test_delete_of_a_failed_job_of_a_reported_batch_needs_no_confirmation(ingest: Ingest, ann: User) -> None:
    """The batch reported (failed): its depositor was told, so delete/ goes through at once; a completed job is 409."""
    batch = failed_batch(ingest)
    assert verb(ann, job_of(batch, 2), "delete").status_code == 202
    assert verb(ann, job_of(batch, 1), "delete", {"confirm": True}).status_code == 409
    settle()
    assert job_of(batch, 2).status == J.DELETED and job_of(batch, 1).status == J.COMPLETED


def test_release_and_priority_of_held_jobs(ingest: Ingest, ann: User) -> None:
    """priority/ changes a held job's priority; release/ is 202 for a held job (and it runs once the hold is lifted), 409 otherwise."""
    batch = batch_with_held_jobs(ingest)
    first, second = job_of(batch, 1), job_of(batch, 2)
    response = verb(ann, second, "priority", {"priority": 0})
    assert response.status_code == 202, response.content
    for bad in ({"priority": 100}, {"priority": -1}, {"priority": "top"}, {}):
        assert verb(ann, second, "priority", bad).status_code == 400, bad
    settle()
    assert job_of(batch, 2).priority == 0 and "priority 5 -> 0" in job_of(batch, 2).history[-1]["note"]
    Collection.objects.filter(pk=ingest.collection.pk).update(held=False)
    assert verb(ann, first, "release").status_code == 202
    assert verb(ann, second, "release").status_code == 202
    settle()
    assert {job_of(batch, 1).status, job_of(batch, 2).status} == {J.COMPLETED}
    assert Batch.objects.get(pk=batch.pk).status == B.COMPLETED
    assert verb(ann, first, "release").status_code == 409
    assert verb(ann, first, "requeue").status_code == 409
