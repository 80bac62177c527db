"""A coordinator job's buttons in a real browser (chromium, 1,280 × 900): suspend, confirm, see it SUSPENDED.

Fixtures and checks are tests/support/browser.py's; screenshots go to $BROWSER_SCREENSHOTS when set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User

from coordinators.choices import JobStatus
from coordinators.models import CoordinatorJob, StatusChange
from tests.coordinators.sla.factories import materialized_job
from tests.support.browser import arrived, check_page, log_in
from tests.support.engine import run_pending_commands

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]

BOXES = ".op-scroll, .results, #content-main"


def test_suspend_a_coordinator_job_from_its_page_confirm_and_see_it_suspended_in_chromium(
    browser: Any, live_server: Any, screenshots: Path,
) -> None:
    """The job page's Suspend opens a confirmation naming RUNNING -> SUSPENDED; Confirm comes back to the page with
    the message; once the command ran the page shows SUSPENDED, Resume is enabled and Suspend disabled."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    job = materialized_job(actions=3, name="hourly-ingest-from-the-partner-warehouse")
    User.objects.create_superuser("admin", "admin@example.com", "a-long-password")
    log_in(browser, live_server.url, "admin", "a-long-password")
    page = f"{live_server.url}/admin/coordinators/coordinatorjob/{quote(job.pk)}/change/"
    browser.get(page)
    bar = browser.find_element(By.ID, "object-verbs")
    assert bar.find_element(By.CSS_SELECTOR, '[data-verb="suspend"]').tag_name == "a"
    assert "disabled" in bar.find_element(By.CSS_SELECTOR, '[data-verb="resume"]').get_attribute("class")
    check_page(browser, screenshots, "coordinator-verbs", boxes=BOXES)
    bar.find_element(By.CSS_SELECTOR, '[data-verb="suspend"]').click()
    effect = browser.find_element(By.ID, "verb-effect").text
    assert f"coordinator job {job.pk} (hourly-ingest-from-the-partner-warehouse): RUNNING -> SUSPENDED" in effect
    check_page(browser, screenshots, "coordinator-verb-confirm", boxes=BOXES)
    browser.find_element(By.ID, "verb-confirm").click()
    arrived(browser, page)
    assert f"Suspend of coordinator job {job.pk} queued" in browser.find_element(By.CSS_SELECTOR, "ul.messagelist").text
    check_page(browser, screenshots, "coordinator-verb-queued", boxes=BOXES)
    run_pending_commands()
    assert CoordinatorJob.objects.get(pk=job.pk).status == JobStatus.SUSPENDED
    assert "admin" in StatusChange.objects.get(object_id=job.pk, to_status=JobStatus.SUSPENDED).by
    browser.get(page)
    assert "suspended SUSPENDED" in browser.find_element(By.ID, "content-main").text  # the status field
    bar = browser.find_element(By.ID, "object-verbs")
    assert bar.find_element(By.CSS_SELECTOR, '[data-verb="resume"]').tag_name == "a"
    assert "disabled" in bar.find_element(By.CSS_SELECTOR, '[data-verb="suspend"]').get_attribute("class")
    check_page(browser, screenshots, "coordinator-verbs-done", boxes=BOXES)
