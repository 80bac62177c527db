"""The bundles admin in a real browser (tests.support.browser: Debian's chromium, headless, at 1,280 × 900)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User

from bundles.models import BundleJob
from coordinators.models import CoordinatorAction
from tests.bundles.factories import minute
from tests.support.browser import check_page, log_in
from tests.support.bundles import run_actions

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]

def test_the_bundle_list_and_page_in_chromium(
    browser: Any, live_server: Any, screenshots: Path, make_bundle: Callable[..., BundleJob]
) -> None:
    """An admin sees the list, runs a verb, and opens a bundle of 3 coordinators: rows, a cell per action, no overflow."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support import expected_conditions  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support.select import Select  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support.wait import WebDriverWait  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    User.objects.create_superuser("admin", "admin@example.com", "a-long-password")
    waiting = make_bundle(name="daily-reports", start=False, kick_off=minute(90))
    bundle = make_bundle(
        {"ingest": "examples.noop", "transform": "examples.noop", "publish": "examples.fail"},
        name="nightly-pipeline", critical=("ingest",), window_minutes=(20, 30),
    )
    run_actions()
    actions = CoordinatorAction.objects.filter(job__bundle_id=bundle.pk)
    assert actions.filter(status="FAILED").exists() and actions.filter(status="SUCCEEDED").exists()

    log_in(browser, live_server.url, "admin", "a-long-password")
    browser.get(f"{live_server.url}/admin/bundles/bundlejob/")
    rows = browser.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")
    assert len(rows) == 2 and "nightly-pipeline" in browser.page_source
    check_page(browser, screenshots, "bundle-list")

    # A bulk verb as an operator runs it: tick a bundle, choose the verb, Go; the answer names the bundle.
    browser.find_element(By.CSS_SELECTOR, f"input[name=_selected_action][value='{waiting.pk}']").click()
    Select(browser.find_element(By.NAME, "action")).select_by_value("suspend_bundles")
    browser.find_element(By.NAME, "index").click()
    WebDriverWait(browser, 30).until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, ".messagelist")))
    assert f"Suspend queued for 1 bundle(s): {waiting.pk}" in browser.find_element(By.CSS_SELECTOR, ".messagelist").text
    check_page(browser, screenshots, "bundle-list-suspended")

    browser.get(f"{live_server.url}/admin/bundles/bundlejob/{quote(bundle.pk)}/change/")
    coordinators = browser.find_elements(By.CSS_SELECTOR, "tr.bundle-coordinator")
    assert [row.find_element(By.CSS_SELECTOR, ".coord-name").text for row in coordinators] == [
        "ingest", "publish", "transform"
    ]
    cells = browser.find_elements(By.CSS_SELECTOR, "#bundle-timeline a.tg-cell")
    assert sum(int(cell.get_attribute("data-count")) for cell in cells) == actions.count()  # one time axis
    first = cells[0]
    assert first.size["width"] >= 8 and first.size["height"] >= 12, first.size
    assert first.get_attribute("title").split(" ")[0] in {"ingest", "publish", "transform", "ingest:", "publish:",
                                                          "transform:"}
    assert len(browser.find_elements(By.CSS_SELECTOR, "#bundle-timeline .tg-axis span")) >= 2
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.timeline-coordinator")) == 3
    timeline = browser.find_element(By.ID, "bundle-timeline")
    browser.execute_script("arguments[0].scrollIntoView()", timeline)
    timeline.screenshot(str(screenshots / "bundle-timeline.png"))
    browser.execute_script("window.scrollTo(0, 0)")
    check_page(browser, screenshots, "bundle-page")
