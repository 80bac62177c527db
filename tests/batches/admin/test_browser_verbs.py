"""A batch job's buttons in a real browser (chromium, 1,280 × 900): set its priority through the value's form, then
requeue it; each confirmed, each back on the page with the message.

Fixtures and checks are tests/support/browser.py's; screenshots go to $BROWSER_SCREENSHOTS when set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from batches.choices import JobStatus as J
from batches.models import BatchJob
from tests.support.batches import Ingest, settle
from tests.support.browser import arrived, check_page, log_in
from tests.support.engine import run_pending_commands

pytestmark = [pytest.mark.django_db(transaction=True)]

BOXES = ".batch-scroll, .op-scroll, #content-main"


def test_set_the_priority_of_a_failed_batch_job_then_requeue_it_in_chromium(
    browser: Any, live_server: Any, screenshots: Path, ingest: Ingest,
) -> None:
    """Set priority asks for the value, then names `priority N -> 1`; Requeue names `failed -> ...`; both come back to
    the page with their message and, once their commands ran, the page shows the new priority and status."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    User.objects.create_superuser("admin", "admin@example.com", "a-long-password")
    batch = ingest.submit(ingest.deposit.objects(3, wrong={2}), submitter="Map Library",
                          erc_what="Sanborn fire insurance maps, 1850-1899")
    settle()
    job = BatchJob.objects.get(batch=batch, number=2)
    assert job.status == J.FAILED
    log_in(browser, live_server.url, "admin", "a-long-password")
    page = f"{live_server.url}/admin/batches/batchjob/{job.pk}/change/"
    browser.get(page)
    bar = browser.find_element(By.ID, "object-verbs")
    assert "disabled" in bar.find_element(By.CSS_SELECTOR, '[data-verb="release"]').get_attribute("class")
    check_page(browser, screenshots, "batch-job-verbs", boxes=BOXES)

    bar.find_element(By.CSS_SELECTOR, '[data-verb="priority"]').click()
    field = browser.find_element(By.NAME, "priority")
    field.clear()
    field.send_keys("1")
    check_page(browser, screenshots, "batch-job-verb-form", boxes=BOXES)
    browser.find_element(By.CSS_SELECTOR, "input[type=submit][value=Review]").click()
    assert f"priority {job.priority} -> 1" in browser.find_element(By.ID, "verb-effect").text
    browser.find_element(By.ID, "verb-confirm").click()
    arrived(browser, page)
    assert f"Priority 1 of job {job.id_text} queued" in browser.find_element(By.CSS_SELECTOR, "ul.messagelist").text
    settle()
    assert BatchJob.objects.get(pk=job.pk).priority == 1

    browser.get(page)
    browser.find_element(By.CSS_SELECTOR, '#object-verbs [data-verb="requeue"]').click()
    effect = browser.find_element(By.ID, "verb-effect").text
    assert f"job {job.id_text} of batch {batch.id_text}: failed -> " in effect
    target = effect.rpartition(" -> ")[2].strip()
    check_page(browser, screenshots, "batch-job-verb-confirm", boxes=BOXES)
    browser.find_element(By.ID, "verb-confirm").click()
    arrived(browser, page)
    assert f"Requeue of job {job.id_text} queued" in browser.find_element(By.CSS_SELECTOR, "ul.messagelist").text
    check_page(browser, screenshots, "batch-job-verb-queued", boxes=BOXES)
    run_pending_commands(rounds=1)  # the requeue only: its follow-up would run the job again (and it would fail again)
    job.refresh_from_db()
    assert job.status == target != J.FAILED
    browser.get(page)
    assert f"job {job.pk} of batch {batch.pk} {target}" in browser.find_element(By.ID, "content").text
    check_page(browser, screenshots, "batch-job-verbs-done", boxes=BOXES)
