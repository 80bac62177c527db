"""Buttons on a batch's and a batch job's page: allowed verbs per status, the confirmation, the service, 403s."""

from __future__ import annotations

from typing import cast

import pytest
from django.test import Client
from lxml import html

from batches.choices import BatchStatus as B
from batches.choices import JobStatus as J
from batches.models import Batch, BatchJob
from tests.support.batches import MakeBatch
from tests.support.engine import run_pending_commands
from tests.support.users import staff
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)


def buttons(client: Client, url: str) -> dict[str, str]:
    response = client.get(url)
    assert response.status_code == 200
    bar = cast(html.HtmlElement, html.fromstring(response.content)).get_element_by_id("object-verbs")
    return {e.get("data-verb", ""): (e.get("title", "") if "disabled" in e.get("class", "") else "")
            for e in bar.find_class("object-verb")}


def job_url(job: BatchJob, suffix: str = "change/") -> str:
    return f"/admin/batches/batchjob/{job.pk}/{suffix}"


def test_a_failed_job_offers_resume_requeue_priority_and_delete_a_held_one_release(operator: Client,
                                                                                   make_batch: MakeBatch) -> None:
    """The buttons follow the job's status; a disabled one says why."""
    batch = make_batch([J.FAILED, J.HELD])
    failed, held = BatchJob.objects.filter(batch=batch).order_by("number")
    shown = buttons(operator, job_url(failed))
    assert {verb for verb, reason in shown.items() if not reason} >= {"requeue", "priority", "delete"}
    assert "only a held job can be released" in shown["release"]
    assert buttons(operator, job_url(held))["release"] == ""


def test_requeue_confirms_the_move_and_the_service_requeues(operator: Client, make_batch: MakeBatch) -> None:
    """failed -> pending on the page; POST confirm queues the service's command, which moves the job."""
    batch = make_batch([J.FAILED])
    job = BatchJob.objects.get(batch=batch)
    assert "failed -&gt; pending" in operator.get(job_url(job, "verb/requeue/")).content.decode()
    response = operator.post(job_url(job, "verb/requeue/"), {"confirm": "yes"}, follow=True)
    assert f"Requeue of job {job.id_text} queued" in response.content.decode()
    run_pending_commands()
    job.refresh_from_db()
    assert job.status != J.FAILED


def test_priority_asks_for_the_value_and_refuses_a_bad_one(operator: Client, make_batch: MakeBatch) -> None:
    """A form first; 100 is refused (400) and nothing queued; 1 is confirmed and set."""
    batch = make_batch([J.HELD])
    job = BatchJob.objects.get(batch=batch)
    assert 'name="priority"' in operator.get(job_url(job, "verb/priority/")).content.decode()
    before = Command.objects.count()
    assert operator.post(job_url(job, "verb/priority/"), {"priority": "100", "confirm": "yes"}).status_code == 400
    assert Command.objects.count() == before
    review = operator.post(job_url(job, "verb/priority/"), {"priority": "1"}).content.decode()
    assert f"priority {job.priority} -&gt; 1" in review
    operator.post(job_url(job, "verb/priority/"), {"priority": "1", "confirm": "yes"})
    run_pending_commands()
    job.refresh_from_db()
    assert job.priority == 1


def test_a_held_batch_offers_release_and_delete(operator: Client, make_batch: MakeBatch) -> None:
    """held: release and delete enabled, update-report disabled with the reason."""
    batch = make_batch([], status=B.HELD)
    shown = buttons(operator, f"/admin/batches/batch/{batch.pk}/change/")
    assert shown["release"] == "" and shown["delete"] == "" and "needs failed" in shown["update-report"]


def test_a_staff_user_who_may_not_act_gets_403_and_nothing_changes(make_batch: MakeBatch) -> None:
    """The models' permissions without the batch's: disabled buttons, 403, the job stays failed."""
    batch = make_batch([J.FAILED])
    job = BatchJob.objects.get(batch=batch)
    helper = staff("helper", "batches.view_batchjob", "batches.change_batchjob", "batches.view_batch",
                   "batches.change_batch")
    shown = buttons(helper, job_url(job))
    assert all(shown.values()) and "you may not act" in shown["requeue"]  # every one disabled
    assert helper.post(job_url(job, "verb/requeue/"), {"confirm": "yes"}).status_code == 403
    assert helper.post(f"/admin/batches/batch/{batch.pk}/verb/delete/", {"confirm": "yes"}).status_code == 403
    run_pending_commands()
    job.refresh_from_db()
    assert job.status == J.FAILED and Batch.objects.filter(pk=batch.pk).exists()
