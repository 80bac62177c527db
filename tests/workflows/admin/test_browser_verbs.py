"""The object pages' buttons in a real browser (chromium, 1,280 × 900): mark a workflow node OK, confirm, see it done.

Fixtures and checks are tests/support/browser.py's; screenshots go to $BROWSER_SCREENSHOTS when set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User

from tests.support.browser import arrived, check_page, log_in
from tests.support.engine import run_pending_commands
from tests.workflows.test_engine import app, celery, submit
from workflows.choices import NodeStatus
from workflows.models import WorkflowNode

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]


def test_mark_a_node_ok_from_the_workflow_page_confirm_and_see_it_done_in_chromium(
    browser: Any, live_server: Any, screenshots: Path, tmp_path: Path,
) -> None:
    """The node's "mark OK" button opens a confirmation naming PREP -> OK; Confirm comes back to the page with the
    message; once the command ran the node is OK and the next node is queued."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    workflow = submit(app(tmp_path, celery("a", "examples.noop_any", ok="b") + celery("b", "examples.noop_any", ok="end")))
    User.objects.create_superuser("admin", "admin@example.com", "a-long-password")
    log_in(browser, live_server.url, "admin", "a-long-password")
    page = f"{live_server.url}/admin/workflows/workflowjob/{quote(workflow.id)}/change/"
    browser.get(page)
    bar = browser.find_element(By.ID, "object-verbs")
    assert bar.find_element(By.CSS_SELECTOR, '[data-verb="kill"]').tag_name == "a"
    assert "disabled" in bar.find_element(By.CSS_SELECTOR, '[data-verb="resume"]').get_attribute("class")
    check_page(browser, screenshots, "workflow-verbs", boxes=".op-scroll")
    browser.find_element(By.CSS_SELECTOR, '#node-a .node-verbs [data-verb="mark-ok"]').click()
    effect = browser.find_element(By.ID, "verb-effect").text
    assert f"node a of {workflow.id}: PREP -> OK" in effect
    check_page(browser, screenshots, "workflow-verb-confirm", boxes="#content-main")
    browser.find_element(By.ID, "verb-confirm").click()
    arrived(browser, page)  # the click returns before the redirect is followed
    assert "Mark OK of node a" in browser.find_element(By.CSS_SELECTOR, "ul.messagelist").text
    run_pending_commands()
    assert WorkflowNode.objects.get(workflow=workflow, name="a").status == NodeStatus.OK
    browser.get(page)
    assert "marked OK by admin" in browser.find_element(By.ID, "node-a").text
    assert browser.find_element(By.ID, "node-b").is_displayed()
    check_page(browser, screenshots, "workflow-verbs-done", boxes=".op-scroll")
