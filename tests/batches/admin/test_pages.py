"""A batch's page (submission, jobs by state, its jobs, reports, deliveries) and a job's page (history, files, error)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client

from batches.choices import BatchStatus as B
from batches.choices import JobStatus as J
from batches.models import Batch, BatchJob, ReportDelivery
from tests.support.batches import Ingest, MakeBatch, settle
from tests.support.users import staff
from xcommands.models import Command

pytestmark = [pytest.mark.django_db(transaction=True)]

VIEWER = ("batches.view_batch", "batches.view_batchjob")


def page_of(batch: Batch) -> str:
    return f"/admin/batches/batch/{batch.pk}/change/"


def job_page(job: BatchJob) -> str:
    return f"/admin/batches/batchjob/{job.pk}/change/"


def summary(page: str) -> dict[str, str]:
    return dict(re.findall(r"<div(?: class=\"wide\")?><dt>(.*?)</dt><dd>(.*?)</dd></div>", page, re.S))


def failed_batch(ingest: Ingest) -> Batch:
    """3 objects, the second with a wrong digest: the batch failed and reported."""
    batch = ingest.submit(ingest.deposit.objects(3, wrong={2}), erc_what="Maps of 1850")
    settle()
    batch.refresh_from_db()
    assert batch.status == B.FAILED
    return batch


# --- a batch's page --------------------------------------------------------------------------


def test_a_batch_page_shows_its_submission_jobs_by_state_jobs_and_reports(operator: Client, ingest: Ingest) -> None:
    """Submission fields, operation link, counts per state, a row per job with its error, a row per report."""
    batch = failed_batch(ingest)
    page = operator.get(page_of(batch)).content.decode()
    fields = summary(page)
    assert list(fields)[:4] == ["Status", "Profile", "Collection", "Owner"]
    assert "failed" in fields["Status"] and "ann" in fields["Owner"] and "Maps of 1850" in fields["ERC what"]
    assert batch.payload_url in fields["Payload"] and "the CLI" not in fields["From"]
    assert f'/admin/operations/operation/{batch.operation_id}/change/' in fields["Operation"]
    counts = dict(re.findall(r'<tr class="batch-state"><td><a href="[^"]*status__exact=(\w+)">.*?</a></td>'
                             r'<td class="num count">(\d+)</td>', page, re.S))
    assert counts == {"completed": "2", "failed": "1"}
    assert page.count('<tr class="batch-job">') == 3
    assert "does not match the manifest" in page
    assert page.count('<tr class="batch-report">') == 1 and "2 of 3 completed, 1 failed" in page
    assert "mailto:ops@example.com" in page and 'title="SENT"' in page and ">sent<" in page
    assert operator.post(page_of(batch), {"status": "completed"}).status_code == 403
    assert Batch.objects.get(pk=batch.pk).status == B.FAILED


def test_reports_are_read_as_text_and_downloaded_as_csv_and_json(operator: Client, ingest: Ingest) -> None:
    """The text is shown; CSV and JSON are attachments named after the batch; other formats and numbers are 404."""
    batch = failed_batch(ingest)
    base = f"/admin/batches/batch/{batch.pk}/reports/1/"
    page = operator.get(page_of(batch)).content.decode()
    assert f'href="{base}text/"' in page and f'href="{base}csv/"' in page and f'href="{base}json/"' in page
    text = operator.get(base + "text/")
    assert text["Content-Type"].startswith("text/plain") and "obj002" in text.content.decode()
    csv = operator.get(base + "csv/")
    assert csv["Content-Disposition"] == f'attachment; filename="bid{batch.pk:07d}-report-1.csv"'
    assert csv.content.decode().splitlines()[0].startswith("outcome,job,number")
    body = json.loads(operator.get(base + "json/").content)
    assert body["counts"]["failed"] == 1 and body["batch"] == batch.pk
    assert operator.get(base + "xml/").status_code == 404
    assert operator.get(f"/admin/batches/batch/{batch.pk}/reports/9/text/").status_code == 404
    assert staff("intern").get(base + "text/").status_code == 403


def test_a_failed_delivery_is_sent_again_by_a_job_admin_only(operator: Client, ingest: Ingest) -> None:
    """A job admin's button makes it PENDING and queues its command (it is sent); others are refused; GET is refused."""
    batch = failed_batch(ingest)
    delivery = ReportDelivery.objects.get(report__batch=batch)
    ReportDelivery.objects.filter(pk=delivery.pk).update(status="FAILED", last_error="SMTPServerDisconnected: gone")
    page = operator.get(page_of(batch)).content.decode()
    url = f"/admin/batches/batch/{batch.pk}/deliveries/{delivery.pk}/resend/"
    assert f'formaction="{url}"' in page and "SMTPServerDisconnected: gone" in page

    carol = staff("carol", *VIEWER)
    Batch.objects.filter(pk=batch.pk).update(owner=User.objects.get(username="carol"))
    assert f'formaction="{url}"' not in carol.get(page_of(batch)).content.decode()
    before = Command.objects.count()
    page = carol.post(url, follow=True).content.decode()
    assert "job admins only" in page and Command.objects.count() == before
    assert ReportDelivery.objects.get(pk=delivery.pk).status == "FAILED"
    assert operator.get(url).status_code == 405

    sent = len(mail.outbox)
    page = operator.post(url, follow=True).content.decode()
    assert "queued to be sent again" in page and ReportDelivery.objects.get(pk=delivery.pk).status == "PENDING"
    settle()
    assert ReportDelivery.objects.get(pk=delivery.pk).status == "SENT" and len(mail.outbox) == sent + 1
    assert "not FAILED" in operator.post(url, follow=True).content.decode()


def test_a_batch_page_pages_its_jobs_in_a_fixed_number_of_queries(
    operator: Client, make_batch: MakeBatch, django_assert_max_num_queries: Any
) -> None:
    """50 jobs a page in number order; 3 or 120 jobs cost the same queries; hostile page numbers are harmless."""
    small = make_batch([J.COMPLETED, J.FAILED, J.PENDING])
    large = make_batch([J.COMPLETED] * 100 + [J.FAILED] * 10 + [J.DOWNLOADING] * 10)
    operator.get(page_of(small))
    with django_assert_max_num_queries(14) as few:
        assert operator.get(page_of(small)).status_code == 200
    with django_assert_max_num_queries(len(few.captured_queries)):
        page = operator.get(page_of(large)).content.decode()
    assert page.count('<tr class="batch-job">') == 50 and "jobs 1–50 of 120" in page
    last = operator.get(page_of(large), {"jobs": "3"}).content.decode()
    assert last.count('<tr class="batch-job">') == 20 and "jobs 101–120 of 120" in last
    for hostile in ("x", "-3", "9" * 40):
        assert operator.get(page_of(large), {"jobs": hostile}).status_code == 200, hostile


def test_restricted_reads_hide_a_batch_from_others(settings: Any, make_batch: MakeBatch) -> None:
    """With COORD_RESTRICT_READS, staff who may not modify the batch get 403 on its page and its job's page."""
    settings.COORD_RESTRICT_READS = True
    batch = make_batch([J.FAILED], status=B.FAILED)
    job = BatchJob.objects.get(batch=batch)
    dave = staff("dave", *VIEWER)
    assert dave.get(page_of(batch)).status_code == 403
    assert dave.get(job_page(job)).status_code == 403
    Batch.objects.filter(pk=batch.pk).update(acl="dave")
    assert dave.get(page_of(batch)).status_code == 200
    assert dave.get(job_page(job)).status_code == 200


# --- a job's page ----------------------------------------------------------------------------


def test_a_failed_jobs_page_shows_its_history_files_and_whole_error(operator: Client, ingest: Ingest) -> None:
    """A row per history entry with its times; files with size and digest; the error in full; where resume restarts."""
    batch = failed_batch(ingest)
    job = BatchJob.objects.get(batch=batch, number=2)
    page = operator.get(job_page(job)).content.decode()
    assert page.count('<tr class="job-history-row">') == len(job.history) >= 4
    stages = re.findall(r'<tr class="job-history-row">\s*<td class="nowrap">(\w+)</td>', page)
    assert stages == [entry["stage"] for entry in job.history]
    assert re.search(r'<td class="num nowrap">\d\.\d\d s</td>', page)
    assert '<pre class="batch-error">' in page and job.error.replace("'", "&#x27;") in page
    assert page.count('<tr class="job-file">') == 2 and "md5:00000000000000000000000000000000" in page
    fields = summary(page)
    assert "resume restarts at downloading" in fields["Resume"] and fields["Last success"] == "provisioning"
    assert "obj002" in fields["Local ids"]
    assert operator.post(job_page(job), {"status": "completed"}).status_code == 403


def test_a_waiting_jobs_page_says_why_and_counts_its_waits(operator: Client, make_batch: MakeBatch) -> None:
    """A job waiting for space: the reason in the summary, the waits counted on its history line."""
    history = [
        {"stage": "pending", "to": "estimating", "at": "2026-01-05T10:00:01+00:00", "started": "2026-01-05T10:00:00+00:00"},
        {"stage": "provisioning", "to": "provisioning", "at": "2026-01-05T10:00:09+00:00", "waits": True, "tries": 3,
         "note": "waits for space: 10 bytes free, needs 90 + reserve 0"},
    ]
    batch = make_batch([J.PROVISIONING], jobs={1: {"history": history, "space_needed": 90}})
    job = BatchJob.objects.get(batch=batch)
    page = operator.get(job_page(job)).content.decode()
    assert "waits for a slot since" in summary(page)["Waits for"]
    assert "waits for space: 10 bytes free" in page and '<td class="num">3</td>' in page
    assert "1.00 s" in page and "90 B" in page


def test_staff_without_job_permissions_get_403(make_batch: MakeBatch) -> None:
    """Django's model permissions apply to the pages too."""
    batch = make_batch([J.FAILED])
    intern = staff("intern")
    assert intern.get(page_of(batch)).status_code == 403
    assert intern.get(job_page(BatchJob.objects.get(batch=batch))).status_code == 403
