"""The operator pages in a real browser: Debian's chromium, headless, through chromium-driver at 1,280 × 900.

Skipped, with the reason, where chromium, chromium-driver or selenium is missing; under CI a
missing browser fails instead (the `browser` fixture of the bundles' browser test). Screenshots
go to $BROWSER_SCREENSHOTS when set (to look at them), else to the test's tmp dir.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User
from django.utils import timezone

from coordinators.models import SLAEvent, SLARegistration
from kernel.display import short_action_id
from tests.coordinators.admin.factories import add_workflow_runs, make_jobs
from tests.support.browser import check_page, log_in
from xcommands.choices import CommandStatus
from xcommands.models import Command

pytestmark = [pytest.mark.django_db(transaction=True)]


def one_line_rows(driver: Any) -> list[float]:
    """The height of each result row of a change list (one line of text is about 30 px with padding)."""
    return list(driver.execute_script(
        "return [...document.querySelectorAll('#result_list tbody tr')].map(r => r.getBoundingClientRect().height)"
    ))


def test_dashboard_grid_lists_gantt_and_action_page_in_chromium(
    browser: Any, live_server: Any, screenshots: Path  # noqa: F811
) -> None:
    """An operator opens the dashboard, the grid of 60 jobs, the job list, a job, its Gantt view, the action list
    and an action: the content is there, every page fits 1,280 px, list rows are one line, no console error."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    User.objects.create_superuser("admin", "admin@example.com", "a-long-password")
    jobs = make_jobs(60, 40, name="hourly-ingest-from-the-partner-warehouse")
    job = jobs[1]
    now = timezone.now()
    Command.objects.create(
        key=job.pk, seq=1, name="coordinators.CoordActionStartXCommand", params={"job_id": job.pk, "number": 38},
        status=CommandStatus.PARKED, enqueued_at=now, not_before=now, attempts=4,
        last_error="Traceback (most recent call last):\nOSError: [Errno 28] No space left on device",
    )
    for action in job.actions.filter(number__range=(30, 36)):  # these waited 40 minutes for their inputs
        action.submitted_at = action.created_time + timedelta(minutes=40)
        action.started_at = action.submitted_at + timedelta(seconds=1)
        action.ended_at = action.started_at + timedelta(minutes=2, seconds=5)
        action.save(update_fields=["submitted_at", "started_at", "ended_at"])
    record = SLARegistration.objects.create(
        action=job.actions.get(number=7), job=job, version="0.2", app_name=job.app_name, user="ann",
        nominal_time=now, sla_status="MISS",
    )
    SLAEvent.objects.create(registration=record, job=job, event_type="END_MISS", occurred_at=now)
    base = live_server.url
    log_in(browser, base, "admin", "a-long-password")

    assert browser.find_element(By.ID, "operator-pages").is_displayed()
    assert "View site" not in browser.find_element(By.ID, "user-tools").text
    check_page(browser, screenshots, "index", boxes=".results, .op-scroll")

    browser.get(f"{base}/admin/dashboard/")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Dashboard"
    assert "running with error" in browser.find_element(By.ID, "status-coordinator_jobs").text
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.late-action")) == 10
    assert "No space left on device" in browser.find_element(By.ID, "parked").text
    assert "end miss" in browser.find_element(By.ID, "sla").text
    check_page(browser, screenshots, "dashboard", boxes=".results, .op-scroll")

    browser.get(f"{base}/admin/coordinators/coordinatorjob/grid/")
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.grid-row")
    assert len(rows) == 50
    cells = rows[0].find_elements(By.CSS_SELECTOR, "a.tg-cell.action")
    assert len(cells) == 40  # the default range (48 hours of an hourly job) holds all 40 actions
    assert cells[-1].size["width"] >= 8 and cells[-1].size["height"] >= 12, cells[-1].size
    assert "#40" in cells[-1].get_attribute("title") and "waiting" in cells[-1].get_attribute("title")
    check_page(browser, screenshots, "grid", boxes=".results, .op-scroll")

    browser.get(f"{base}/admin/coordinators/coordinatorjob/")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Coordinator jobs"
    heights = one_line_rows(browser)
    assert len(heights) == 50 and max(heights) < 40, heights
    check_page(browser, screenshots, "job-list", boxes=".results, .op-scroll")

    browser.get(f"{base}/admin/coordinators/coordinatorjob/{quote(job.pk)}/change/")
    assert "GANTT" in browser.find_element(By.CSS_SELECTOR, ".object-tools").text.upper()
    check_page(browser, screenshots, "job-page", boxes=".results, .op-scroll")

    browser.get(f"{base}/admin/coordinators/coordinatorjob/{quote(job.pk)}/gantt/")
    bars = browser.find_elements(By.CSS_SELECTOR, "tr.gantt-row")
    assert len(bars) == 40  # all alive in the default range (the last 48 hours)
    run = bars[29].find_element(By.CSS_SELECTOR, ".seg.run")  # action 30
    wait = bars[29].find_element(By.CSS_SELECTOR, ".seg.wait")
    assert run.size["width"] >= 2 and wait.size["width"] > 3 * run.size["width"], (wait.size, run.size)
    assert wait.location["x"] + wait.size["width"] <= run.location["x"] + 1, "the wait comes before the run"
    assert browser.find_element(By.ID, "median-run").text == "2 min 5 s"
    check_page(browser, screenshots, "gantt", boxes=".results, .op-scroll")

    browser.get(f"{base}/admin/coordinators/coordinatoraction/")  # every job's: with the job column
    heights = one_line_rows(browser)
    assert len(heights) == 100 and max(heights) < 40, heights
    assert browser.find_elements(By.CSS_SELECTOR, "#result_list tbody .field-job_name a")
    check_page(browser, screenshots, "action-list-all", boxes=".results, .op-scroll")

    browser.get(f"{base}/admin/coordinators/coordinatoraction/?job={quote(job.pk)}")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Coordinator actions"
    heights = one_line_rows(browser)
    assert len(heights) == 40 and max(heights) < 40, heights
    first = browser.find_element(By.CSS_SELECTOR, "#result_list tbody tr .field-short_id a")
    assert first.text == short_action_id(job.actions.order_by("number").first().pk)  # type: ignore[union-attr]
    check_page(browser, screenshots, "action-list", boxes=".results, .op-scroll")

    first.click()
    assert "View coordinator action" in browser.find_element(By.TAG_NAME, "h1").text
    assert browser.find_element(By.CSS_SELECTOR, ".field-pending_text .readonly").text == "no"
    check_page(browser, screenshots, "action-page", boxes=".results, .op-scroll")

    browser.get(f"{base}/admin/xcommands/command/")
    link = browser.find_element(By.CSS_SELECTOR, "#result_list .field-target a")
    assert link.text == short_action_id(f"{job.pk}@38")
    check_page(browser, screenshots, "commands", boxes=".results, .op-scroll")


def test_grid_and_gantt_in_time_in_chromium(browser: Any, live_server: Any, screenshots: Path) -> None:
    """The grid puts a 500-action job and a job running workflows on one time axis with a row per workflow node;
    a range typed in the from/to inputs reaches action 1, whose square opens its page at its tries; "all" shows the
    whole history aggregated; the Gantt's axis spans exactly the range shown. Every page fits 1,280 px."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support.wait import WebDriverWait  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    User.objects.create_superuser("admin", "admin@example.com", "a-long-password")
    long_job = make_jobs(1, 500, name="long-hourly-job")[0]
    workflow_job = make_jobs(1, 30, name="workflow-job")[0]
    add_workflow_runs(workflow_job, ("extract", "transform", "load"))
    base = live_server.url
    log_in(browser, base, "admin", "a-long-password")

    browser.get(f"{base}/admin/coordinators/coordinatorjob/grid/")
    ticks = browser.find_elements(By.CSS_SELECTOR, "#grid-axis span")
    assert len(ticks) >= 3 and all(t.text for t in ticks)
    grid = browser.find_element(By.ID, "grid")
    axis_start, axis_end = grid.get_attribute("data-start"), grid.get_attribute("data-end")
    moments = [t.get_attribute("data-at") for t in ticks]
    assert moments == sorted(moments) and axis_start <= moments[0] and moments[-1] <= axis_end
    nodes = browser.find_elements(By.CSS_SELECTOR, f"tr.grid-node[data-job='{workflow_job.pk}']")
    assert [n.get_attribute("data-node") for n in nodes] == ["extract", "transform", "load"]
    load = nodes[2].find_elements(By.CSS_SELECTOR, "a.tg-cell.node")
    assert load and "#node-load" in load[0].get_attribute("href")
    track = nodes[2].find_element(By.CSS_SELECTOR, ".tg-track")
    assert track.location["x"] <= load[0].location["x"] <= track.location["x"] + track.size["width"]
    long_row = browser.find_element(By.CSS_SELECTOR, f"tr.grid-row[data-job='{long_job.pk}']")
    titles = [c.get_attribute("title") for c in long_row.find_elements(By.CSS_SELECTOR, "a.tg-cell")]
    assert titles and not any(" #1 · " in t for t in titles)
    check_page(browser, screenshots, "grid-in-time", boxes=".op-scroll")

    # A range typed in: the first two days of the long job.
    first = long_job.actions.get(number=1).nominal_time
    browser.execute_script(
        "document.getElementById('range-from').value = arguments[0];"
        "document.getElementById('range-to').value = arguments[1];",
        timezone.localtime(first - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M"),
        timezone.localtime(first + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M"),
    )
    browser.find_element(By.ID, "range-show").click()
    WebDriverWait(browser, 30).until(lambda d: "from=" in d.current_url)
    grid = browser.find_element(By.ID, "grid")
    assert grid.get_attribute("data-start") != axis_start
    long_row = browser.find_element(By.CSS_SELECTOR, f"tr.grid-row[data-job='{long_job.pk}']")
    square = next(c for c in long_row.find_elements(By.CSS_SELECTOR, "a.tg-cell")
                  if " #1 · " in c.get_attribute("title"))
    check_page(browser, screenshots, "grid-first-days", boxes=".op-scroll")
    square.click()
    WebDriverWait(browser, 30).until(lambda d: "/coordinatoraction/" in d.current_url)
    assert browser.current_url.endswith("/change/#tries")
    assert "View coordinator action" in browser.find_element(By.TAG_NAME, "h1").text
    assert browser.find_element(By.CSS_SELECTOR, ".field-number .readonly").text == "1"

    # The whole history: aggregated squares that count every action.
    browser.get(f"{base}/admin/coordinators/coordinatorjob/grid/?q={long_job.app_name}")
    browser.find_element(By.ID, "range-all").click()
    WebDriverWait(browser, 30).until(lambda d: "from=" in d.current_url)
    squares = browser.find_elements(By.CSS_SELECTOR, f"tr.grid-row[data-job='{long_job.pk}'] a.tg-cell")
    assert len(squares) <= 60 and sum(int(s.get_attribute("data-count")) for s in squares) == 500
    assert any(s.text.isdigit() and int(s.text) > 1 for s in squares)  # the count is written in the square
    check_page(browser, screenshots, "grid-whole-history", boxes=".op-scroll")

    # The Gantt: one axis, exactly the range shown.
    browser.get(f"{base}/admin/coordinators/coordinatorjob/{quote(workflow_job.pk)}/gantt/")
    axis = browser.find_element(By.ID, "gantt-axis")
    shown_from = browser.find_element(By.ID, "range-from").get_attribute("value")
    shown_to = browser.find_element(By.ID, "range-to").get_attribute("value")
    assert axis.get_attribute("data-start").replace(" ", "T").startswith(shown_from)
    assert axis.get_attribute("data-end").replace(" ", "T").startswith(shown_to)
    labels = axis.find_elements(By.CSS_SELECTOR, "span")
    assert len(labels) >= 3
    left, right = axis.location["x"], axis.location["x"] + axis.size["width"]
    assert all(left - 60 <= s.location["x"] <= right + 1 for s in labels)
    runs = browser.find_elements(By.CSS_SELECTOR, ".gantt-track .seg.run")
    assert runs and all(left - 1 <= r.location["x"] <= right + 1 for r in runs)
    check_page(browser, screenshots, "gantt-in-time", boxes=".op-scroll")
