"""A bundle's buttons in a real browser (chromium, 1,280 × 900): suspend, confirm, see it SUSPENDED.

Fixtures and checks are tests/support/browser.py's; screenshots go to $BROWSER_SCREENSHOTS when set.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User

from bundles.choices import BundleStatus
from bundles.models import BundleJob
from tests.support.browser import arrived, check_page, log_in
from tests.support.bundles import settle

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]

BOXES = ".bundle-scroll, #content-main"


def test_suspend_a_bundle_from_its_page_confirm_and_see_it_suspended_in_chromium(
    browser: Any, live_server: Any, screenshots: Path, make_bundle: Callable[..., BundleJob],
) -> None:
    """Suspend opens a confirmation naming RUNNING -> SUSPENDED; Confirm comes back to the page with the message; once
    the commands ran the page shows SUSPENDED (its coordinators too) and offers Resume instead of Suspend."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    bundle = make_bundle({"ingest-from-the-partner-warehouse": "examples.noop", "transform": "examples.noop",
                          "publish": "examples.noop"}, name="nightly-pipeline-of-the-partner-warehouse")
    assert bundle.status == BundleStatus.RUNNING
    User.objects.create_superuser("admin", "admin@example.com", "a-long-password")
    log_in(browser, live_server.url, "admin", "a-long-password")
    page = f"{live_server.url}/admin/bundles/bundlejob/{quote(bundle.pk)}/change/"
    browser.get(page)
    bar = browser.find_element(By.ID, "object-verbs")
    assert "disabled" in bar.find_element(By.CSS_SELECTOR, '[data-verb="resume"]').get_attribute("class")
    check_page(browser, screenshots, "bundle-verbs", boxes=BOXES)
    bar.find_element(By.CSS_SELECTOR, '[data-verb="suspend"]').click()
    assert "RUNNING -> SUSPENDED" in browser.find_element(By.ID, "verb-effect").text
    check_page(browser, screenshots, "bundle-verb-confirm", boxes=BOXES)
    browser.find_element(By.ID, "verb-confirm").click()
    arrived(browser, page)
    assert f"Suspend of bundle job {bundle.pk} queued" in browser.find_element(By.CSS_SELECTOR, "ul.messagelist").text
    check_page(browser, screenshots, "bundle-verb-queued", boxes=BOXES)
    settle()
    assert BundleJob.objects.get(pk=bundle.pk).status == BundleStatus.SUSPENDED
    browser.get(page)
    assert f"{bundle.pk} nightly-pipeline-of-the-partner-warehouse suspended" in browser.find_element(By.ID, "content").text
    summary = browser.find_element(By.ID, "bundle-summary").text
    assert "Status\nsuspended" in summary, summary
    bar = browser.find_element(By.ID, "object-verbs")
    assert bar.find_element(By.CSS_SELECTOR, '[data-verb="resume"]').tag_name == "a"
    assert "disabled" in bar.find_element(By.CSS_SELECTOR, '[data-verb="suspend"]').get_attribute("class")
    check_page(browser, screenshots, "bundle-verbs-done", boxes=BOXES)
