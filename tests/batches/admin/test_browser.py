"""The batches admin in a real browser: Debian's chromium, headless, through chromium-driver at 1,280 × 900.

Skipped, with the reason, where chromium, chromium-driver or selenium is missing; under CI a
missing browser fails instead (the `browser` fixture of the bundles' browser test). Screenshots
go to $BROWSER_SCREENSHOTS when set (to look at them), else to the test's tmp dir.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from batches.choices import BatchStatus as B
from batches.choices import JobStatus as J
from batches.models import BatchJob, Collection, ReportDelivery
from tests.support.batches import Ingest, MakeBatch, settle
from tests.support.browser import check_page, log_in

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_the_batch_list_a_batch_and_a_job_in_chromium(
    browser: Any, live_server: Any, screenshots: Path, ingest: Ingest, make_batch: MakeBatch  # noqa: F811
) -> None:
    """An admin sees bars per batch, runs a verb, opens a failed batch (jobs, report, delivery) and its failed job."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support import expected_conditions  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support.select import Select  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support.wait import WebDriverWait  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    User.objects.create_superuser("admin", "admin@example.com", "a-long-password")
    failed = ingest.submit(ingest.deposit.objects(12, wrong={3, 7}), submitter="Map Library",
                           erc_what="Sanborn fire insurance maps, 1850-1899")
    settle()
    job = BatchJob.objects.get(batch=failed, number=3)
    assert job.status == J.FAILED
    other = Collection.objects.create(name="letters", held=True, held_reason="storage maintenance")
    make_batch([J.COMPLETED] * 6 + [J.DOWNLOADING] * 2 + [J.PROVISIONING, J.PENDING] * 2 + [J.FAILED],
               submitter="digitization-lab", jobs={8: {"dispatched": True},
                                                    9: {"not_before": timezone.now() + timedelta(minutes=3)}})
    make_batch([], status=B.HELD, collection=other, submitter="letters-project",
               payload_url="s3://deposits/letters/2026-01/batch-manifest.checkm")

    log_in(browser, live_server.url, "admin", "a-long-password")
    browser.get(f"{live_server.url}/admin/batches/batch/")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")) == 3
    bars = browser.find_elements(By.CSS_SELECTOR, "#result_list .batch-progress .bar")
    assert len(bars) == 2 and all(bar.size["width"] >= 100 and bar.size["height"] >= 8 for bar in bars)
    check_page(browser, screenshots, "batch-list", boxes=".results, .batch-scroll")

    browser.find_element(By.CSS_SELECTOR, f"input[name=_selected_action][value='{failed.pk}']").click()
    Select(browser.find_element(By.NAME, "action")).select_by_value("update_report_batches")
    browser.find_element(By.NAME, "index").click()
    WebDriverWait(browser, 30).until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, ".messagelist")))
    assert f"Update-report queued for 1 batch(es): bid{failed.pk:07d}" in browser.find_element(
        By.CSS_SELECTOR, ".messagelist").text
    settle()

    # A delivery whose retries were spent shows its error and, for a job admin, a button to send it again.
    ReportDelivery.objects.filter(report__batch=failed, report__number=1).update(
        status="FAILED", last_error="SMTPRecipientsRefused: {'ops@example.com': (550, b'mailbox unavailable')}")
    browser.get(f"{live_server.url}/admin/batches/batch/{failed.pk}/change/")
    browser.find_element(By.CSS_SELECTOR, "button.resend").click()
    WebDriverWait(browser, 30).until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, ".messagelist")))
    assert "queued to be sent again" in browser.find_element(By.CSS_SELECTOR, ".messagelist").text
    ReportDelivery.objects.filter(report__batch=failed, report__number=1).update(status="FAILED")
    browser.get(f"{live_server.url}/admin/batches/batch/{failed.pk}/change/")
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.batch-job")) == 12
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.batch-report")) == 2
    segments = browser.find_elements(By.CSS_SELECTOR, "#batch-states .batch-bar span")
    assert len(segments) == 2 and segments[0].size["width"] > 4 * segments[1].size["width"]
    check_page(browser, screenshots, "batch-page", boxes=".results, .batch-scroll")

    browser.get(f"{live_server.url}/admin/batches/batchjob/{job.pk}/change/")
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.job-history-row")) == len(job.history)
    assert "does not match" in browser.find_element(By.CSS_SELECTOR, "pre.batch-error").text
    check_page(browser, screenshots, "job-page", boxes=".results, .batch-scroll")

    browser.get(f"{live_server.url}/admin/batches/batchjob/?status__exact=failed&batch={failed.pk}")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")) == 2
    browser.get(f"{live_server.url}/admin/batches/batchjob/")
    check_page(browser, screenshots, "job-list", boxes=".results, .batch-scroll")

    # Deleting asks first: the page lists the batch and what goes with it; confirming queues the delete.
    browser.get(f"{live_server.url}/admin/batches/batch/")
    browser.find_element(By.CSS_SELECTOR, f"input[name=_selected_action][value='{failed.pk}']").click()
    Select(browser.find_element(By.NAME, "action")).select_by_value("delete_batches")
    browser.find_element(By.NAME, "index").click()
    WebDriverWait(browser, 30).until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "li.batch-deletion")))
    assert "12 job(s) deleted" in browser.find_element(By.CSS_SELECTOR, "li.batch-deletion").text
    check_page(browser, screenshots, "batch-delete-confirmation", boxes=".results, .batch-scroll")
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    WebDriverWait(browser, 30).until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, ".messagelist")))
    assert f"Delete queued for 1 batch(es): bid{failed.pk:07d}" in browser.find_element(By.CSS_SELECTOR, ".messagelist").text


def test_holding_a_collection_and_a_refused_profile_in_chromium(
    browser: Any, live_server: Any, screenshots: Path, ingest: Ingest  # noqa: F811
) -> None:
    """Hold asks for a reason on its own page; a profile naming an unregistered task is refused with the known ones."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support import expected_conditions  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support.select import Select  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support.wait import WebDriverWait  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    User.objects.create_superuser("admin", "admin@example.com", "a-long-password")
    log_in(browser, live_server.url, "admin", "a-long-password")
    browser.get(f"{live_server.url}/admin/batches/collection/")
    browser.find_element(By.CSS_SELECTOR, f"input[name=_selected_action][value='{ingest.collection.pk}']").click()
    Select(browser.find_element(By.NAME, "action")).select_by_value("hold_collections")
    browser.find_element(By.NAME, "index").click()
    WebDriverWait(browser, 30).until(expected_conditions.presence_of_element_located((By.NAME, "reason")))
    browser.find_element(By.NAME, "reason").send_keys("storage maintenance")
    check_page(browser, screenshots, "collection-hold-form", boxes=".results, .batch-scroll")
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    WebDriverWait(browser, 30).until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, ".messagelist")))
    assert "Held 1 collection(s): demo" in browser.find_element(By.CSS_SELECTOR, ".messagelist").text
    assert Collection.objects.get(pk=ingest.collection.pk).held_reason == "storage maintenance"
    check_page(browser, screenshots, "collection-list", boxes=".results, .batch-scroll")

    browser.get(f"{live_server.url}/admin/batches/profile/add/")
    browser.find_element(By.NAME, "name").send_keys("maps")
    Select(browser.find_element(By.NAME, "collection")).select_by_visible_text("demo [held]")
    task = browser.find_element(By.NAME, "task")
    task.clear()
    task.send_keys("examples.ingest_stroe")
    browser.find_element(By.NAME, "_save").click()
    WebDriverWait(browser, 30).until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, ".errorlist")))
    assert "examples.ingest_store" in browser.find_element(By.CSS_SELECTOR, ".errorlist").text
    check_page(browser, screenshots, "profile-refused", boxes=".results, .batch-scroll")
