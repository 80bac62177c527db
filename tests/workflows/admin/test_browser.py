"""The workflow admin in a real browser (Debian's chromium, headless, 1,280 × 900): the DAG drawn, the nodes listed, a rerun.

Fixtures and checks are the bundles admin's (tests/bundles/admin/test_browser.py): skipped
where chromium, chromium-driver or selenium is missing, a failure under CI; screenshots go to
$BROWSER_SCREENSHOTS when set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User

from tests.support.browser import check_page, log_in
from tests.workflows.api.factories import drive, pipeline_app, submit
from workflows.choices import WorkflowStatus
from workflows.models import WorkflowJob

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]


def test_a_failed_workflow_drawn_then_rerun_from_its_failed_node_in_chromium(
    browser: Any, live_server: Any, screenshots: Path, ann: User, tmp_path: Path,
) -> None:
    """The page draws every node as a visible box coloured by status and lists the nodes; the rerun action
    (list page) reruns the failed node and the page then shows the whole graph green."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support import expected_conditions  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support.select import Select  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support.wait import WebDriverWait  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    directory = pipeline_app(tmp_path)
    workflow = submit(directory, ann)
    drive()
    assert WorkflowJob.objects.get(pk=workflow.pk).status == WorkflowStatus.KILLED
    User.objects.create_superuser("admin", "admin@example.com", "a-long-password")
    log_in(browser, live_server.url, "admin", "a-long-password")

    url = f"{live_server.url}/admin/workflows/workflowjob/{quote(workflow.id)}/change/"
    browser.get(url)
    boxes = browser.find_elements(By.CSS_SELECTOR, "#workflow-graph svg g.node")
    assert len(boxes) == 9
    for box in boxes:  # drawn, not collapsed: each box has the size the layout gave it
        rect = box.find_element(By.TAG_NAME, "rect")
        assert rect.size["width"] >= 100 and rect.size["height"] >= 30, (box.get_attribute("data-node"), rect.size)
    fills = {box.get_attribute("data-node"): box.find_element(By.TAG_NAME, "rect").get_attribute("fill") for box in boxes}
    assert fills["check"] == "#c62828" and fills["extract"] == "#2e7d32" and fills["end"] == "#ffffff"
    rows = browser.find_elements(By.CSS_SELECTOR, "table.wf-nodes tbody tr")
    assert len(rows) == 7 and "FileNotFoundError" in browser.find_element(By.ID, "node-check").text
    graph = browser.find_element(By.ID, "workflow-graph")
    browser.execute_script("arguments[0].scrollIntoView()", graph)
    graph.screenshot(str(screenshots / "workflow-graph-failed.png"))
    table = browser.find_element(By.ID, "workflow-nodes")
    browser.execute_script("arguments[0].scrollIntoView()", table)
    table.screenshot(str(screenshots / "workflow-nodes-failed.png"))
    overflow = browser.execute_script(
        "const box = document.querySelector('#workflow-nodes .op-scroll'); return [box.scrollWidth, box.clientWidth];")
    assert overflow[0] <= overflow[1], f"the node table is {overflow[0]} px wide in a {overflow[1]} px box"
    browser.execute_script("window.scrollTo(0, 0)")
    check_page(browser, screenshots, "workflow-page-failed")

    (directory.parent / "work-nightly" / "flag").touch()
    browser.get(f"{live_server.url}/admin/workflows/workflowjob/")
    browser.find_element(By.CSS_SELECTOR, f"input[name=_selected_action][value='{workflow.id}']").click()
    Select(browser.find_element(By.NAME, "action")).select_by_value("rerun_failed_nodes")
    browser.find_element(By.NAME, "index").click()
    WebDriverWait(browser, 30).until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, ".messagelist")))
    assert f"queued for 1 workflow(s): {workflow.id}" in browser.find_element(By.CSS_SELECTOR, ".messagelist").text
    check_page(browser, screenshots, "workflow-list")
    drive()
    assert WorkflowJob.objects.get(pk=workflow.pk).status == WorkflowStatus.SUCCEEDED

    browser.get(url)
    statuses = {box.get_attribute("data-node"): box.get_attribute("data-status")
                for box in browser.find_elements(By.CSS_SELECTOR, "#workflow-graph svg g.node")}
    assert statuses == {":start:": "OK", "prepare": "OK", "split": "OK", "extract": "OK", "check": "OK", "merge": "OK",
                        "decide": "OK", "end": "OK", "fail": ""}  # the admin draws kill nodes, reached or not
    graph = browser.find_element(By.ID, "workflow-graph")
    browser.execute_script("arguments[0].scrollIntoView()", graph)
    graph.screenshot(str(screenshots / "workflow-graph-succeeded.png"))
    browser.execute_script("window.scrollTo(0, 0)")
    check_page(browser, screenshots, "workflow-page-succeeded")
