"""A failed try on the action page in a real browser: the traceback open under it, its log, a download, nothing too wide."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User

from tests.support.browser import check_page, log_in
from tests.support.workflow_nodes import failed_action

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]


def test_a_failed_try_shows_its_traceback_and_log_on_the_action_page(
    browser: Any, live_server: Any, screenshots: Path, ann: User,
) -> None:
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    _, action, _ = failed_action(ann)
    User.objects.create_superuser("admin", "admin@example.com", "a-long-password")
    log_in(browser, live_server.url, "admin", "a-long-password")

    browser.get(f"{live_server.url}/admin/coordinators/coordinatoraction/{quote(action.pk)}/change/")
    tries = browser.find_element(By.ID, "tries")
    browser.execute_script("arguments[0].scrollIntoView()", tries)
    rows = tries.find_elements(By.CSS_SELECTOR, "tbody tr[id^=try-]")
    assert len(rows) == 1 and "error" in rows[0].text and "RuntimeError" in rows[0].text
    details = tries.find_element(By.CSS_SELECTOR, "details")
    assert details.get_attribute("open") is not None  # a failed try opens on its traceback
    logs = [pre.text for pre in tries.find_elements(By.CSS_SELECTOR, "pre.op-log")]
    assert "in _give_up" in logs[0] and "examples.fail: nothing usable for" in logs[1]
    assert all(pre.is_displayed() and pre.size["width"] > 300 for pre in tries.find_elements(By.CSS_SELECTOR, "pre.op-log"))
    link = rows[0].find_element(By.LINK_TEXT, "download")
    assert link.get_attribute("href").endswith("/download/")
    tries.screenshot(str(screenshots / "action-tries.png"))
    check_page(browser, screenshots, "action-page-failed-try", boxes="#tries")
