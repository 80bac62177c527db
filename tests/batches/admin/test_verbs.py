"""Bulk verbs on batches and jobs: through batches.services, refusals reported per object, deletes confirmed first."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

import batches.services as services
from batches.admin import verbs
from batches.choices import BatchStatus as B
from batches.choices import JobStatus as J
from batches.models import Batch, BatchJob
from batches.services import hold_collection, release_collection
from tests.support.batches import Ingest, MakeBatch, settle
from tests.support.users import staff
from xcommands.models import Command

pytestmark = [pytest.mark.django_db(transaction=True)]

BATCHES = "/admin/batches/batch/"
JOBS = "/admin/batches/batchjob/"
BATCH_OPERATOR = ("batches.view_batch", "batches.change_batch", "batches.view_batchjob", "batches.change_batchjob")


def bulk(client: Client, url: str, action: str, ids: list[int], **extra: str) -> str:
    """Choose the action in the list for these rows and press Go; the page it lands on."""
    response = client.post(url, {"action": action, "_selected_action": ids, "index": "0", **extra}, follow=True)
    assert response.status_code == 200
    return response.content.decode()


def follow_up(client: Client, url: str, action: str, ids: list[int], **extra: str) -> str:
    """Send an intermediate page's form (confirmation, value): the same action without `index`."""
    response = client.post(url, {"action": action, "_selected_action": ids, **extra}, follow=True)
    assert response.status_code == 200
    return response.content.decode()


def failed_batch(ingest: Ingest) -> tuple[Batch, BatchJob]:
    """A batch of 3 objects run to its report: object 2 has a wrong digest, so the batch failed."""
    batch = ingest.submit(ingest.deposit.objects(3, wrong={2}))
    settle()
    batch.refresh_from_db()
    job = BatchJob.objects.get(batch=batch, number=2)
    assert (batch.status, job.status, job.last_successful_status) == (B.FAILED, J.FAILED, J.PROVISIONING)
    return batch, job


def spy(monkeypatch: pytest.MonkeyPatch, name: str) -> list[tuple[Any, ...]]:
    """Record each call of batches.services.<name> (verb, actor, confirmed), then call it."""
    calls: list[tuple[Any, ...]] = []
    real = getattr(services, name)

    def recorded(ids: Any, verb: str, *, actor: Any, **kwargs: Any) -> Any:
        calls.append((verb, actor.get_username(), kwargs.get("confirmed", False)))
        return real(ids, verb, actor=actor, **kwargs)

    monkeypatch.setattr(services, name, recorded)
    return calls


# --- batches ---------------------------------------------------------------------------------


def test_update_report_then_a_confirmed_delete_of_a_failed_batch(
    operator: Client, ingest: Ingest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each verb is services.batch_verb as the operator; delete shows what goes, queues nothing, then runs once confirmed."""
    calls = spy(monkeypatch, "batch_verb")
    batch, _ = failed_batch(ingest)
    page = bulk(operator, BATCHES, "update_report_batches", [batch.pk])
    assert f"Update-report queued for 1 batch(es): bid{batch.pk:07d}" in page
    settle()
    assert batch.reports.count() == 2 and Batch.objects.get(pk=batch.pk).status == B.FAILED

    before = Command.objects.count()
    page = bulk(operator, BATCHES, "delete_batches", [batch.pk])
    assert "Yes, delete 1 batch(es)" in page and "depositor is never told" in page
    assert "2/3" in page and "1 failed" in page and "3 job(s) deleted" in page
    assert Command.objects.count() == before and Batch.objects.get(pk=batch.pk).status == B.FAILED
    page = follow_up(operator, BATCHES, "delete_batches", [batch.pk], confirm="yes")
    assert f"Delete queued for 1 batch(es): bid{batch.pk:07d}" in page
    settle()
    assert Batch.objects.get(pk=batch.pk).status == B.DELETED
    assert set(BatchJob.objects.filter(batch=batch).values_list("status", flat=True)) == {J.DELETED}
    assert calls == [("update-report", "operator", False), ("delete", "operator", False), ("delete", "operator", True)]


def test_refusals_are_reported_per_batch_and_the_rest_goes_through(operator: Client, ingest: Ingest,
                                                                   make_batch: MakeBatch) -> None:
    """A status that does not allow the verb is a warning naming the batch and why; the others are queued or asked."""
    failed, _ = failed_batch(ingest)
    running = make_batch([J.DOWNLOADING])
    page = bulk(operator, BATCHES, "delete_batches", [failed.pk, running.pk])
    assert f"Delete refused for bid{running.pk:07d}: batch {running.pk} is processing; delete needs failed or held" in page
    assert f"bid{failed.pk:07d}" in page and "Yes, delete 1 batch(es)" in page
    page = bulk(operator, BATCHES, "update_report_batches", [failed.pk, running.pk])
    assert "Update-report queued for 1 batch(es)" in page and f"Update-report refused for bid{running.pk:07d}" in page


def test_a_held_batch_is_released_with_its_collection_not_before(operator: Client, ingest: Ingest) -> None:
    """While its collection is held, releasing the batch is refused with the reason; releasing the collection releases it."""
    hold_collection("demo", actor=User.objects.get(username="operator"), reason="maintenance")
    batch = ingest.submit(ingest.deposit.objects(2))
    settle()
    assert Batch.objects.get(pk=batch.pk).status == B.HELD
    page = bulk(operator, BATCHES, "release_batches", [batch.pk])
    assert "collection demo is still held: release the collection first" in page
    page = bulk(operator, "/admin/batches/collection/", "release_collections", [ingest.collection.pk])
    assert "Released demo: 1 held batch(es) and 0 held job(s) queued for release" in page
    settle()
    assert Batch.objects.get(pk=batch.pk).status == B.COMPLETED


def test_releasing_a_held_batch_once_its_collection_is_free(operator: Client, ingest: Ingest) -> None:
    """The collection released without its batches: the batch's own release queues it, and it runs to the end."""
    admin = User.objects.get(username="operator")
    hold_collection("demo", actor=admin)
    batch = ingest.submit(ingest.deposit.objects(2))
    settle()
    release_collection("demo", actor=admin, release_held=False)
    assert Batch.objects.get(pk=batch.pk).status == B.HELD
    assert f"Release queued for 1 batch(es): bid{batch.pk:07d}" in bulk(operator, BATCHES, "release_batches", [batch.pk])
    settle()
    assert Batch.objects.get(pk=batch.pk).status == B.COMPLETED


def test_others_act_only_on_batches_they_own_or_are_named_in(ingest: Ingest, make_batch: MakeBatch) -> None:
    """Owner, ACL and job admins may act; another operator is refused per batch; view-only staff get no actions."""
    carol = staff("carol", *BATCH_OPERATOR)
    mine = make_batch([J.FAILED], status=B.FAILED, owner=User.objects.get(username="carol"))
    shared = make_batch([J.FAILED], status=B.FAILED, acl="carol")
    theirs = make_batch([J.FAILED], status=B.FAILED)
    before = Command.objects.count()
    page = bulk(carol, BATCHES, "update_report_batches", [mine.pk, shared.pk, theirs.pk])
    assert f"Update-report queued for 2 batch(es): bid{mine.pk:07d}, bid{shared.pk:07d}" in page
    assert f"Update-report refused for bid{theirs.pk:07d}: user &#x27;carol&#x27; may not modify" in page
    assert Command.objects.count() == before + 2
    admin = staff("erin", *BATCH_OPERATOR, "coordinators.change_coordinatorjob")
    assert "Update-report queued for 1 batch(es)" in bulk(admin, BATCHES, "update_report_batches", [theirs.pk])
    viewer = staff("frank", "batches.view_batch", "batches.view_batchjob")
    assert 'value="delete_batches"' not in viewer.get(BATCHES).content.decode()
    assert 'value="resume_jobs"' not in viewer.get(JOBS).content.decode()
    before = Command.objects.count()
    bulk(viewer, BATCHES, "update_report_batches", [theirs.pk])
    assert Command.objects.count() == before


def test_a_selection_larger_than_the_limit_does_nothing(operator: Client, make_batch: MakeBatch,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each object is checked and queued in the request: too many at once is refused whole, with the limit."""
    monkeypatch.setattr(verbs, "MAX_SELECTION", 2)
    batches = [make_batch([J.FAILED], status=B.FAILED) for _ in range(3)]
    before = Command.objects.count()
    page = bulk(operator, BATCHES, "update_report_batches", [b.pk for b in batches])
    assert "Select at most 2 at a time" in page and Command.objects.count() == before


# --- jobs ------------------------------------------------------------------------------------


def test_resume_and_requeue_go_through_job_verb_and_refusals_name_the_job(
    operator: Client, ingest: Ingest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each is services.job_verb as the operator: resume restarts after the last success, requeue from the start."""
    calls = spy(monkeypatch, "job_verb")
    batch, job = failed_batch(ingest)
    done = BatchJob.objects.get(batch=batch, number=1)
    page = bulk(operator, JOBS, "resume_jobs", [job.pk, done.pk])
    assert f"Resume queued for 1 job(s): jid{job.pk:07d}" in page
    assert f"Resume refused for jid{done.pk:07d}: job {done.pk} is completed; only a failed job can be resumed" in page
    settle()
    job.refresh_from_db()
    assert job.status == J.FAILED and job.retry_count == 1
    assert [h["to"] for h in job.history][-2:] == [J.DOWNLOADING, J.FAILED]  # resumed at downloading: the digest again
    assert f"Requeue queued for 1 job(s): jid{job.pk:07d}" in bulk(operator, JOBS, "requeue_jobs", [job.pk])
    settle()
    job.refresh_from_db()
    assert job.retry_count == 2 and J.ESTIMATING in [h["to"] for h in job.history[-6:]]
    assert calls == [("resume", "operator", False)] * 2 + [("requeue", "operator", False)]


def test_releasing_a_held_job(operator: Client, make_batch: MakeBatch) -> None:
    """A held job (its collection released) goes back to pending through the services; the history names who."""
    batch = make_batch([J.HELD, J.FAILED])
    held, failed = BatchJob.objects.filter(batch=batch).order_by("number")
    page = bulk(operator, JOBS, "release_jobs", [held.pk, failed.pk])
    assert f"Release queued for 1 job(s): jid{held.pk:07d}" in page
    assert f"Release refused for jid{failed.pk:07d}: job {failed.pk} is failed; only a held job can be released" in page
    settle()
    held.refresh_from_db()
    assert held.status != J.HELD and held.history[0]["note"] == "release by operator"


def test_deleting_a_job_of_a_batch_still_running_asks_first(operator: Client, make_batch: MakeBatch) -> None:
    """The service wants a confirmation (the depositor will not hear of the job): the page lists it, then it goes."""
    batch = make_batch([J.FAILED, J.DOWNLOADING])
    failed, running = BatchJob.objects.filter(batch=batch).order_by("number")
    before = Command.objects.count()
    page = bulk(operator, JOBS, "delete_jobs", [failed.pk, running.pk])
    assert f"Delete refused for jid{running.pk:07d}: job {running.pk} is downloading" in page
    assert "Yes, delete 1 job(s)" in page and f"batch {batch.pk} is processing: deleting job {failed.pk}" in page
    assert Command.objects.count() == before
    page = follow_up(operator, JOBS, "delete_jobs", [failed.pk], confirm="yes")
    assert f"Delete queued for 1 job(s): jid{failed.pk:07d}" in page
    settle()
    assert BatchJob.objects.get(pk=failed.pk).status == J.DELETED
    assert BatchJob.objects.get(pk=running.pk).status != J.DELETED  # not confirmed for it: it went on


def test_deleting_a_job_of_a_reported_batch_needs_no_confirmation(operator: Client, ingest: Ingest) -> None:
    """Its batch has reported (failed): the job is deleted at once, no confirmation page."""
    _, job = failed_batch(ingest)
    page = bulk(operator, JOBS, "delete_jobs", [job.pk])
    assert f"Delete queued for 1 job(s): jid{job.pk:07d}" in page and "Yes, delete" not in page
    settle()
    assert BatchJob.objects.get(pk=job.pk).status == J.DELETED


def test_set_priority_asks_for_the_number_and_refuses_a_bad_one(operator: Client, make_batch: MakeBatch) -> None:
    """An intermediate form asks for 0..99; out of range is shown again with the error, nothing queued; then queued."""
    batch = make_batch([J.PENDING, J.HELD])
    ids = list(BatchJob.objects.filter(batch=batch).values_list("pk", flat=True))
    page = bulk(operator, JOBS, "set_priority", ids)
    assert 'name="priority"' in page and 'name="apply" value="yes"' in page
    before = Command.objects.count()
    page = follow_up(operator, JOBS, "set_priority", ids, apply="yes", priority="120")
    assert "less than or equal to 99" in page and Command.objects.count() == before
    page = follow_up(operator, JOBS, "set_priority", ids, apply="yes", priority="1")
    assert "Priority 1 queued for 2 job(s)" in page
    settle(rounds=1)
    assert set(BatchJob.objects.filter(pk__in=ids).values_list("priority", flat=True)) == {1}
