"""Live operator pages in a real browser (tests.support.browser: Debian's chromium, headless, at 1,280 × 900).

A page an operator watches fetches itself again every ADMIN_LIVE_SECONDS (1 here) and swaps its
read-only parts in place: a change made in the database meanwhile shows without a reload. Each
test marks the window first; the mark still being there proves the page was not loaded again.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User

from batches.models import Collection
from coordinators.choices import ActionStatus, JobStatus
from coordinators.models import CoordinatorAction, CoordinatorJob
from oozie.properties import WF_RERUN_FAIL_NODES
from operations.choices import JobStatus as OperationJobStatus
from operations.choices import OperationStatus
from operations.models import Operation, OperationJob
from tests.coordinators.admin.factories import make_jobs
from tests.support.browser import check_page, log_in
from tests.support.engine import run_pending_commands
from tests.workflows.api.factories import drive, pipeline_app, submit
from workflows.choices import WorkflowStatus
from workflows.models import WorkflowJob
from workflows.services import request_rerun

pytestmark = [pytest.mark.django_db(transaction=True)]

PASSWORD = "a-long-password"
WAIT = 15  # seconds a change may take to show (the pages refresh every second here)


@pytest.fixture
def operator(browser: Any, live_server: Any, settings: Any) -> Any:
    """A signed-in superuser's browser on pages that refresh every second."""
    settings.ADMIN_LIVE_SECONDS = 1
    User.objects.create_superuser("admin", "admin@example.com", PASSWORD)
    log_in(browser, live_server.url, "admin", PASSWORD)
    return browser


def mark(driver: Any) -> None:
    """Mark the window: a reload or a navigation forgets the mark."""
    driver.execute_script("window.__liveMark = 'kept';")


def assert_not_reloaded(driver: Any) -> None:
    assert driver.execute_script("return window.__liveMark") == "kept", "the page was loaded again"


def refreshes(driver: Any) -> int:
    """How many refetches the page has applied so far."""
    return int(driver.execute_script("return Number(document.documentElement.dataset.liveRefreshes || 0)"))


def wait_for(driver: Any, condition: Callable[[Any], Any], message: str) -> Any:
    from selenium.webdriver.support.wait import WebDriverWait  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    return WebDriverWait(driver, WAIT, poll_frequency=0.2).until(condition, message)


def wait_refreshes(driver: Any, count: int = 2) -> None:
    """Wait until the page has fetched itself `count` more times (so a change would have shown by now)."""
    start = refreshes(driver)
    wait_for(driver, lambda d: refreshes(d) >= start + count, f"the page did not refresh {count} times")


def cell_text(driver: Any, selector: str) -> str:
    return str(driver.execute_script("const el = document.querySelector(arguments[0]); return el ? el.textContent : ''", selector))


def job_row(pk: str) -> str:
    """The CSS selector of a job list row's status cell."""
    return f"#result_list tbody tr:has(input[value='{pk}']) .field-status_column"


def test_a_job_list_shows_a_new_status_keeping_the_selection_and_the_scroll(
    operator: Any, live_server: Any, screenshots: Path
) -> None:
    """A status changed in the database shows in the open list within seconds, without a reload; the ticked row
    stays ticked ("1 of 50 selected"), the window stays scrolled where it was, the control says when it updated."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    jobs = make_jobs(60, 3, statuses=(JobStatus.RUNNING,))
    target, ticked = jobs[5], jobs[7]
    operator.get(f"{live_server.url}/admin/coordinators/coordinatorjob/?o=1")
    mark(operator)
    control = operator.find_element(By.ID, "live-control")
    assert control.find_element(By.ID, "live-toggle").text.endswith("Live")
    assert re.fullmatch(r"updated \d\d:\d\d:\d\d", control.find_element(By.ID, "live-updated").text)
    assert "running" in cell_text(operator, job_row(target.pk))
    row = operator.find_element(By.CSS_SELECTOR, f"#result_list tbody tr:has(input[value='{target.pk}'])")
    operator.find_element(By.CSS_SELECTOR, f"input.action-select[value='{ticked.pk}']").click()
    assert operator.find_element(By.CSS_SELECTOR, "span.action-counter").text == "1 of 50 selected"
    operator.execute_script("window.scrollTo(0, 400)")

    CoordinatorJob.objects.filter(pk=target.pk).update(status=JobStatus.SUSPENDED)
    wait_for(operator, lambda d: "suspended" in cell_text(d, job_row(target.pk)), "the new status did not show")

    assert_not_reloaded(operator)
    assert "suspended" in row.text  # the same row element, brought up to date (not replaced)
    assert operator.execute_script("return window.scrollY") == 400
    assert operator.find_element(By.CSS_SELECTOR, f"input.action-select[value='{ticked.pk}']").is_selected()
    assert operator.find_element(By.CSS_SELECTOR, "span.action-counter").text == "1 of 50 selected"
    assert len(operator.find_elements(By.CSS_SELECTOR, "tr.selected")) == 1
    check_page(operator, screenshots, "live-job-list")

    # Rows move (a job ahead of them goes): the ticked job is ticked wherever it now is, and ticking one more
    # counts two, so the admin's own selection code still knows every box.
    CoordinatorJob.objects.filter(pk=jobs[0].pk).delete()
    wait_for(operator, lambda d: not d.find_elements(By.CSS_SELECTOR, f"input.action-select[value='{jobs[0].pk}']"),
             "the deleted job stayed in the list")
    assert_not_reloaded(operator)
    assert operator.find_element(By.CSS_SELECTOR, f"input.action-select[value='{ticked.pk}']").is_selected()
    assert operator.find_element(By.CSS_SELECTOR, "span.action-counter").text == "1 of 50 selected"
    operator.find_element(By.CSS_SELECTOR, f"input.action-select[value='{jobs[9].pk}']").click()
    assert operator.find_element(By.CSS_SELECTOR, "span.action-counter").text == "2 of 50 selected"
    assert [box.get_attribute("value") for box in operator.find_elements(By.CSS_SELECTOR, "input.action-select:checked")] \
        == [ticked.pk, jobs[9].pk]


def test_typing_a_hidden_tab_and_pause_hold_the_refresh(operator: Any, live_server: Any) -> None:
    """While the operator types in the search box the list waits (the text stays); a hidden tab waits; paused, the
    list stops for good, on this page and after a reload too, until resumed."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    jobs = make_jobs(3, 2, statuses=(JobStatus.RUNNING,))
    job = jobs[0]
    url = f"{live_server.url}/admin/coordinators/coordinatorjob/"
    operator.get(url)
    mark(operator)
    search = operator.find_element(By.ID, "searchbar")
    search.send_keys("grid-j")
    CoordinatorJob.objects.filter(pk=job.pk).update(status=JobStatus.SUSPENDED)
    time.sleep(3)
    assert "running" in cell_text(operator, job_row(job.pk)), "the list changed under a typing operator"
    assert search.get_attribute("value") == "grid-j"
    operator.find_element(By.TAG_NAME, "h1").click()  # done typing: the field loses the focus
    wait_for(operator, lambda d: "suspended" in cell_text(d, job_row(job.pk)), "the list did not catch up")
    assert search.get_attribute("value") == "grid-j"
    assert_not_reloaded(operator)

    # A hidden tab does not fetch; shown again, it catches up at once.
    operator.execute_script("Object.defineProperty(document, 'hidden', {configurable: true, get: () => true})")
    time.sleep(1.5)  # a fetch already on its way lands
    before = refreshes(operator)
    CoordinatorJob.objects.filter(pk=job.pk).update(status=JobStatus.PREP)
    time.sleep(3)
    assert refreshes(operator) == before and "suspended" in cell_text(operator, job_row(job.pk))
    operator.execute_script("delete document.hidden; document.dispatchEvent(new Event('visibilitychange'))")
    wait_for(operator, lambda d: "prep" in cell_text(d, job_row(job.pk)), "the shown tab did not catch up")

    toggle = operator.find_element(By.ID, "live-toggle")
    toggle.click()
    assert toggle.text.endswith("Paused") and toggle.get_attribute("aria-pressed") == "false"
    CoordinatorJob.objects.filter(pk=job.pk).update(status=JobStatus.KILLED)
    time.sleep(3)
    assert "prep" in cell_text(operator, job_row(job.pk)), "a paused page changed"

    operator.get(url)  # paused stays paused on the next page
    assert "killed" in cell_text(operator, job_row(job.pk))
    assert operator.find_element(By.ID, "live-toggle").text.endswith("Paused")
    mark(operator)
    CoordinatorJob.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING)
    time.sleep(3)
    assert "killed" in cell_text(operator, job_row(job.pk)), "a page opened paused changed"
    operator.find_element(By.ID, "live-toggle").click()
    wait_for(operator, lambda d: "running" in cell_text(d, job_row(job.pk)), "resuming did not refresh")
    assert operator.find_element(By.ID, "live-toggle").text.endswith("Live")
    assert_not_reloaded(operator)


def test_the_dashboard_grid_and_gantt_follow_the_jobs(operator: Any, live_server: Any, screenshots: Path) -> None:
    """The dashboard's counts, the grid's cells and a Gantt view's statuses follow the database without a reload."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    jobs = make_jobs(4, 3, statuses=(JobStatus.RUNNING,))
    operator.get(f"{live_server.url}/admin/dashboard/")
    mark(operator)
    assert "killed" not in operator.find_element(By.ID, "status-coordinator_jobs").text
    CoordinatorJob.objects.filter(pk__in=[jobs[0].pk, jobs[1].pk]).update(status=JobStatus.KILLED)
    wait_for(operator, lambda d: re.search(r"killed\s*2", d.find_element(By.ID, "status-coordinator_jobs").text),
             "the dashboard did not count the killed jobs")
    assert_not_reloaded(operator)
    check_page(operator, screenshots, "live-dashboard", boxes=".results, .op-scroll")

    operator.get(f"{live_server.url}/admin/coordinators/coordinatorjob/grid/")
    mark(operator)
    action = CoordinatorAction.objects.get(job=jobs[2], number=1)
    cell = f"tr.grid-row[data-job='{jobs[2].pk}'] a.tg-cell[href*='{quote(action.pk)}']"
    assert operator.find_element(By.CSS_SELECTOR, cell).get_attribute("data-status") != ActionStatus.KILLED
    CoordinatorAction.objects.filter(pk=action.pk).update(status=ActionStatus.KILLED)
    wait_for(operator, lambda d: d.find_element(By.CSS_SELECTOR, cell).get_attribute("data-status") == ActionStatus.KILLED,
             "the grid did not show the killed action")
    assert_not_reloaded(operator)
    check_page(operator, screenshots, "live-grid", boxes=".results, .op-scroll")

    operator.get(f"{live_server.url}/admin/coordinators/coordinatorjob/{quote(jobs[3].pk)}/gantt/")
    mark(operator)
    row = "tr.gantt-row[data-number='1']"
    assert "failed" not in operator.find_element(By.CSS_SELECTOR, row).text
    CoordinatorAction.objects.filter(job=jobs[3], number=1).update(status=ActionStatus.FAILED)
    wait_for(operator, lambda d: "failed" in d.find_element(By.CSS_SELECTOR, row).text, "the Gantt view did not follow")
    assert_not_reloaded(operator)


def test_an_operation_page_shows_its_progress(operator: Any, live_server: Any, screenshots: Path) -> None:
    """An operation's page follows its jobs as they end: the progress figures, the failed job and why, the status."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    admin = User.objects.get(username="admin")
    operation = Operation.objects.create(type="coordinators.suspend", target="coordinators", started_by=admin, remaining=4)
    for n in range(4):
        OperationJob.objects.create(operation=operation, partition=f"job-{n}", key=f"job-{n}")
    operator.get(f"{live_server.url}/admin/operations/operation/{operation.pk}/change/")
    mark(operator)
    progress = operator.find_element(By.CSS_SELECTOR, ".field-progress_bar")
    assert "0/4" in progress.text

    OperationJob.objects.filter(operation=operation, partition__in=["job-0", "job-1"]).update(
        status=OperationJobStatus.SUCCEEDED)
    OperationJob.objects.filter(operation=operation, partition="job-2").update(
        status=OperationJobStatus.FAILED, error="the job was killed meanwhile")
    wait_for(operator, lambda d: "3/4, 1 failed" in d.find_element(By.CSS_SELECTOR, ".field-progress_bar").text,
             "the progress did not follow the jobs")
    assert "3/4, 1 failed" in progress.text  # the element the test found first: updated in place
    assert "the job was killed meanwhile" in operator.find_element(By.CSS_SELECTOR, ".field-failures").text
    Operation.objects.filter(pk=operation.pk).update(status=OperationStatus.FAILED)
    wait_for(operator, lambda d: "failed" in d.find_element(By.CSS_SELECTOR, ".field-status_badge").text.lower(),
             "the status did not follow")
    wait_for(operator, lambda d: "[FAILED]" in d.find_element(By.CSS_SELECTOR, "div.breadcrumbs").text,
             "the breadcrumbs did not follow")
    assert operator.find_element(By.ID, "live-toggle").is_displayed()  # the control stays in the breadcrumbs
    assert_not_reloaded(operator)
    check_page(operator, screenshots, "live-operation")


def test_an_editable_page_keeps_what_the_operator_typed(operator: Any, live_server: Any) -> None:
    """On a page with editable fields only the read-only values refresh: the typed description stays."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    collection = Collection.objects.create(name="partner-feeds", description="as created")
    operator.get(f"{live_server.url}/admin/batches/collection/{quote(collection.pk)}/change/")
    mark(operator)
    description = operator.find_element(By.NAME, "description")
    description.clear()
    description.send_keys("typed by the operator")
    operator.find_element(By.TAG_NAME, "h1").click()
    Collection.objects.filter(pk=collection.pk).update(held=True, held_reason="the partner asked")
    wait_for(operator, lambda d: "the partner asked" in d.find_element(By.CSS_SELECTOR, ".field-held_reason").text,
             "the read-only value did not refresh")
    assert operator.find_element(By.NAME, "description").get_attribute("value") == "typed by the operator"
    assert_not_reloaded(operator)


@pytest.mark.usefixtures("in_process_engine")
def test_a_bulk_verb_shows_its_effect_without_a_reload(operator: Any, live_server: Any, screenshots: Path) -> None:
    """After "Suspend queued for 2 job(s)" the list, not reloaded, shows the jobs suspended once the commands ran;
    the verb's message stays on the page."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support.select import Select  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    jobs = make_jobs(3, 2, statuses=(JobStatus.RUNNING,))
    operator.get(f"{live_server.url}/admin/coordinators/coordinatorjob/")
    for job in jobs[:2]:
        operator.find_element(By.CSS_SELECTOR, f"input.action-select[value='{job.pk}']").click()
    Select(operator.find_element(By.NAME, "action")).select_by_value("suspend_jobs")
    operator.find_element(By.NAME, "index").click()
    wait_for(operator, lambda d: d.find_elements(By.CSS_SELECTOR, ".messagelist"), "the verb did not answer")
    mark(operator)
    assert "Suspend queued for 2 job(s)" in operator.find_element(By.CSS_SELECTOR, ".messagelist").text
    assert "running" in cell_text(operator, job_row(jobs[0].pk))

    run_pending_commands()  # a worker runs the queued commands
    assert set(CoordinatorJob.objects.filter(pk__in=[j.pk for j in jobs[:2]]).values_list("status", flat=True)) == {
        JobStatus.SUSPENDED}
    wait_for(operator, lambda d: all("suspended" in cell_text(d, job_row(job.pk)) for job in jobs[:2]),
             "the list did not show the verb's effect")
    assert "running" in cell_text(operator, job_row(jobs[2].pk))
    assert "Suspend queued for 2 job(s)" in operator.find_element(By.CSS_SELECTOR, ".messagelist").text
    assert_not_reloaded(operator)
    check_page(operator, screenshots, "live-job-list-after-verb")


@pytest.mark.usefixtures("in_process_engine")
def test_a_workflow_graph_follows_its_rerun(operator: Any, live_server: Any, screenshots: Path, ann: User,
                                            tmp_path: Path) -> None:
    """The workflow page, left open, redraws its graph and its nodes as a rerun of the failed node runs."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    directory = pipeline_app(tmp_path)
    workflow = submit(directory, ann)
    drive()
    assert WorkflowJob.objects.get(pk=workflow.pk).status == WorkflowStatus.KILLED
    operator.get(f"{live_server.url}/admin/workflows/workflowjob/{quote(workflow.id)}/change/")
    mark(operator)
    check = "#workflow-graph svg g.node[data-node='check']"
    assert operator.find_element(By.CSS_SELECTOR, check).get_attribute("data-status") != "OK"
    operator.execute_script("document.getElementById('workflow-nodes').scrollIntoView()")
    scrolled = operator.execute_script("return window.scrollY")

    (directory.parent / "work-nightly" / "flag").touch()
    request_rerun(workflow.id, {WF_RERUN_FAIL_NODES: "true"}, check=lambda run: None)
    drive()
    wait_for(operator, lambda d: d.find_element(By.CSS_SELECTOR, check).get_attribute("data-status") == "OK",
             "the graph did not follow the rerun")
    wait_for(operator, lambda d: "succeeded" in d.find_element(By.CSS_SELECTOR, "h2.object-heading").text,
             "the heading did not follow the rerun")
    assert "FileNotFoundError" not in operator.find_element(By.ID, "node-check").text
    assert operator.execute_script("return window.scrollY") == scrolled
    assert_not_reloaded(operator)
    operator.execute_script("window.scrollTo(0, 0)")
    check_page(operator, screenshots, "live-workflow-page")


def test_a_new_row_joins_the_selection(operator: Any, live_server: Any) -> None:
    """A job created while the list is open appears in it; the ticked row stays ticked, and the admin's selection
    code knows the new row: ticking it counts, "select all" ticks every row."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    jobs = make_jobs(3, 2, statuses=(JobStatus.RUNNING,))
    operator.get(f"{live_server.url}/admin/coordinators/coordinatorjob/")
    mark(operator)
    operator.find_element(By.CSS_SELECTOR, f"input.action-select[value='{jobs[1].pk}']").click()
    counter = operator.find_element(By.CSS_SELECTOR, "span.action-counter")
    assert counter.text == "1 of 3 selected"

    late = make_jobs(1, 2, name="late-job")[0]
    wait_for(operator, lambda d: d.find_elements(By.CSS_SELECTOR, f"input.action-select[value='{late.pk}']"),
             "the new job did not appear")
    assert_not_reloaded(operator)
    assert len(operator.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")) == 4
    assert operator.find_element(By.CSS_SELECTOR, f"input.action-select[value='{jobs[1].pk}']").is_selected()
    assert counter.text == "1 of 4 selected"
    operator.find_element(By.CSS_SELECTOR, f"input.action-select[value='{late.pk}']").click()
    assert counter.text == "2 of 4 selected"
    operator.find_element(By.ID, "action-toggle").click()
    assert counter.text == "4 of 4 selected"
    assert len(operator.find_elements(By.CSS_SELECTOR, "input.action-select:checked")) == 4
    assert len(operator.find_elements(By.CSS_SELECTOR, "#result_list tbody tr.selected")) == 4
