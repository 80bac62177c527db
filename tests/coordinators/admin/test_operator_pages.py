"""The operator pages: dashboard, grid, Gantt view, readable lists, command links, bulk change and rerun failed."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from coordinators.admin.gantt import GANTT_MAX_ROWS
from coordinators.choices import ActionStatus, JobStatus
from coordinators.models import CoordinatorJob, SLAEvent, SLARegistration
from kernel.display import (
    human_duration,
    number_ranges,
    short_action_id,
    short_job_id,
    status_words,
)
from tests.coordinators.admin.factories import add_workflow_runs, make_jobs
from tests.support.engine import run_pending_commands
from xcommands.choices import CommandStatus
from xcommands.models import Command

JOBS = "/admin/coordinators/coordinatorjob/"
ACTIONS = "/admin/coordinators/coordinatoraction/"
GRID = f"{JOBS}grid/"
DASHBOARD = "/admin/dashboard/"


def gantt(job: CoordinatorJob) -> str:
    return f"{JOBS}{quote(job.pk)}/gantt/"


# --- display rules (no database) -------------------------------------------------------------


@pytest.mark.parametrize(("seconds", "text"), [
    pytest.param(0.017225, "17 ms", id="milliseconds"),
    pytest.param(4.25, "4.2 s", id="seconds-with-a-tenth"),
    pytest.param(3.0, "3 s", id="whole-seconds"),
    pytest.param(42, "42 s", id="under-a-minute"),
    pytest.param(125, "2 min 5 s", id="minutes-and-seconds"),
    pytest.param(120, "2 min", id="whole-minutes"),
    pytest.param(3 * 3600 + 12 * 60 + 9, "3 h 12 min", id="hours-drop-seconds"),
    pytest.param(2 * 86400 + 4 * 3600, "2 d 4 h", id="days"),
    pytest.param(None, "-", id="none"),
])
def test_durations_read_in_human_units(seconds: float | None, text: str) -> None:
    """A duration shows at most two units, never `0:00:00.017225`."""
    assert human_duration(timedelta(seconds=seconds) if seconds is not None else None) == text


@pytest.mark.parametrize(("status", "words"), [
    pytest.param("RUNNINGWITHERROR", "running with error", id="running-with-error"),
    pytest.param("DONEWITHERROR", "done with error", id="done-with-error"),
    pytest.param("PREPSUSPENDED", "prep suspended", id="prep-suspended"),
    pytest.param("TIMEDOUT", "timed out", id="timed-out"),
    pytest.param("NOT_STARTED", "not started", id="sla-not-started"),
    pytest.param("SUCCEEDED", "succeeded", id="plain"),
])
def test_statuses_read_as_words(status: str, words: str) -> None:
    """Oozie's run-together status names are written as words."""
    assert status_words(status) == words


def test_ids_are_shortened_and_numbers_compressed() -> None:
    """`0000123-C@7` stands for the full action id; rerun scopes are ranges."""
    assert short_job_id("0000123-261122093000123-C") == "0000123-C"
    assert short_action_id("0000123-261122093000123-C@7") == "0000123-C@7"
    assert short_job_id("odd") == "odd"
    assert number_ranges([7, 1, 2, 3, 10, 9]) == "1-3,7,9-10"
    assert number_ranges([]) == ""


# --- pages -----------------------------------------------------------------------------------

def db_test(test: Any) -> Any:
    """A test on the database whose commands (if any) run in process."""
    return pytest.mark.django_db(transaction=True)(pytest.mark.usefixtures("in_process_engine")(test))


def squares(page: str, kind: str = "action") -> list[dict[str, str]]:
    """The squares of a grid page: status, count, bucket and link of each, in page order."""
    return [
        {"href": html.unescape(href), "status": status, "count": count, "bucket": bucket}
        for href, status, count, bucket in re.findall(
            rf'<a class="tg-cell {kind}" href="([^"]*)" title="[^"]*" aria-label="[^"]*" data-status="(\w+)" '
            r'data-count="(\d+)" data-bucket="(\d+)"', page)
    ]


def rows_of(page: str, css: str) -> list[str]:
    """The HTML of each table row of a class."""
    return re.findall(rf'<tr class="{css}[^"]*"(.*?)</tr>', page, re.S)


def link_named(page: str, element_id: str) -> str:
    """The (unescaped) query string of a range control."""
    found = re.search(rf'<a href="([^"]*)" id="{element_id}"', page)
    assert found is not None, element_id
    return found.group(1).replace("&amp;", "&")


@db_test
def test_grid_puts_a_page_of_jobs_on_one_time_axis_with_a_bounded_number_of_queries(
    operator: Client, django_assert_max_num_queries: Any
) -> None:
    """300 hourly jobs x 25 actions: 50 rows a page on one axis of hourly buckets, a square per action, newest on
    the right, and the same few queries on any page."""
    make_jobs(300, 25)
    with django_assert_max_num_queries(9) as first:
        response = operator.get(GRID)
    page = response.content.decode()
    assert response.status_code == 200
    assert page.count('class="grid-row tg-job"') == 50
    found = squares(page)
    assert len(found) == 50 * 25 and {s["count"] for s in found} == {"1"}
    assert "jobs page 1 of 6" in page and "300 jobs" in page
    assert "buckets of 1 h" in page  # the default range: 48 nominal times of the (hourly) jobs
    row = squares(rows_of(page, "grid-row")[0])
    assert [s["status"] for s in row][-2:] == ["RUNNING", "WAITING"]
    assert [int(s["bucket"]) for s in row] == sorted(int(s["bucket"]) for s in row)  # oldest on the left
    assert row[-1]["href"].endswith("#tries") and "/admin/coordinators/coordinatoraction/" in row[-1]["href"]
    with django_assert_max_num_queries(len(first.captured_queries)):
        last = operator.get(GRID, {"p": 6}).content.decode()
    assert last.count('class="grid-row tg-job"') == 50 and "jobs page 6 of 6" in last


@db_test
def test_the_range_reaches_the_first_action_of_a_long_job_and_all_of_it_aggregated(operator: Client) -> None:
    """A 500-action job opens on its newest actions; "first" reaches action 1 in one click; "all" shows the 500 as
    at most 60 buckets, each with the worst status and a count, linking to the action list of its nominal times."""
    job = make_jobs(1, 500)[0]
    newest = operator.get(GRID).content.decode()
    numbers = [int(n) for n in re.findall(r"#(\d+) · ", newest)]
    assert max(numbers) == 500 and min(numbers) > 400 and f"{quote(job.pk + '@1')}/change" not in newest
    first = operator.get(GRID + link_named(newest, "range-first")).content.decode()
    assert f"{quote(job.pk + '@1')}/change/#tries" in first
    whole = operator.get(GRID + link_named(newest, "range-all")).content.decode()
    found = squares(whole)
    assert 0 < len(found) <= 60 and sum(int(s["count"]) for s in found) == 500
    many = next(s for s in found if int(s["count"]) > 1 and s["status"] == "FAILED")  # PATTERN fails every 16th
    assert many["href"].startswith(ACTIONS + "?job=")
    listed = operator.get(many["href"]).content.decode()
    assert listed.count('name="_selected_action"') == int(many["count"])  # the rows of the result list
    zoomed = operator.get(GRID + link_named(whole, "range-zoom-in")).content.decode()
    assert sum(int(s["count"]) for s in squares(zoomed)) < 500


@db_test
def test_a_bad_range_is_refused_with_the_reason_and_the_page_keeps_the_default(operator: Client) -> None:
    """A from/to that is not a time, a range that ends before it starts or lies outside the years allowed: a 400 that
    says why, with the default range drawn; other nonsense parameters fall back to their defaults."""
    make_jobs(6, 30)
    default = operator.get(GRID).content.decode()
    for bad, reason in [
        ({"from": "yesterday"}, "from: &#x27;yesterday&#x27; is not a date"),
        ({"from": "2026-03-02T10:00", "to": "2026-03-01T10:00"}, "to must come after from"),
        ({"from": "1900-01-01", "to": "1900-02-01"}, "the range must lie between"),
        ({"to": "2026-02-30"}, "to: &#x27;2026-02-30&#x27; is not a date"),
    ]:
        response = operator.get(GRID, bad)
        page = response.content.decode()
        assert response.status_code == 400, bad
        assert reason in page and 'id="range-error"' in page, bad
        assert len(squares(page)) == len(squares(default)) == 6 * 30
    for bad in ({"p": "x"}, {"status": "NOPE"}, {"n": "many"}, {"back": "-4"}):
        response = operator.get(GRID, bad)
        assert response.status_code == 200, bad
        assert response.content.decode().count('class="grid-row tg-job"') == 6


@db_test
def test_the_grid_filters_jobs_and_keeps_the_range(operator: Client) -> None:
    """Status and name filters narrow the rows; the range form keeps them, the filter form keeps the range."""
    jobs = make_jobs(6, 30)
    failed_job = jobs[1]  # RUNNINGWITHERROR (every third from the second)
    page = operator.get(GRID, {"status": JobStatus.RUNNINGWITHERROR}).content.decode()
    assert page.count('class="grid-row tg-job"') == 2 and failed_job.app_name in page
    assert "running with error" in page
    assert 'form="range-form" name="status" value="RUNNINGWITHERROR"' in page
    page = operator.get(GRID, {"q": jobs[0].app_name, "from": "2020-01-01T00:00", "to": "2020-01-02T00:00"}).content.decode()
    assert page.count('class="grid-row tg-job"') == 1 and not squares(page)
    assert 'name="from" value="2020-01-01T00:00"' in page and "no action in this range" in page


@db_test
def test_workflow_runs_get_a_row_per_action_node_under_their_job(operator: Client) -> None:
    """A job whose actions run a workflow application has a row per action node (not start/end) under its row;
    a node square opens its run at the node, and a bucket of many runs the action list of that bucket."""
    with_runs, plain = make_jobs(2, 12)
    runs = add_workflow_runs(with_runs, ("extract", "load"))
    page = operator.get(GRID).content.decode()
    node_rows = rows_of(page, "grid-node")
    assert [re.search(r'data-node="([^"]+)"', row).group(1) for row in node_rows] == ["extract", "load"]  # type: ignore[union-attr]
    assert all(f'data-job="{with_runs.pk}"' in row for row in node_rows)
    load = squares(node_rows[1], "node")
    assert len(load) == len(runs) and "ERROR" in {s["status"] for s in load}  # action 7 failed in its load
    one = runs[0]
    assert f"/admin/workflows/workflowjob/{quote(one.pk)}/change/#node-load" in node_rows[1]
    assert ":start:" not in page
    whole = operator.get(GRID + link_named(page, "range-zoom-out") + "&q=" + with_runs.app_name).content.decode()
    assert rows_of(whole, "grid-node") and plain.app_name not in whole


@db_test
def test_operator_pages_need_view_permissions(client: Client) -> None:
    """Staff without the coordinator permissions get a 403 on the grid and Gantt, an empty dashboard; others a login."""
    job = make_jobs(1, 3)[0]
    assert client.get(DASHBOARD).status_code == 302
    assert client.get(GRID).status_code == 302
    staff = User.objects.create_user("clerk", is_staff=True)
    client.force_login(staff)
    assert client.get(GRID).status_code == 403
    assert client.get(gantt(job)).status_code == 403
    page = client.get(DASHBOARD).content.decode()
    assert 'id="late"' not in page and 'id="status-coordinator_jobs"' not in page
    staff.user_permissions.add(*Permission.objects.filter(
        codename__in=["view_coordinatorjob", "view_coordinatoraction"]))
    staff = User.objects.get(pk=staff.pk)
    client.force_login(staff)
    assert client.get(GRID).status_code == 200
    assert client.get(gantt(job)).status_code == 200
    assert 'id="late"' in client.get(DASHBOARD).content.decode()


@db_test
def test_gantt_shows_wait_and_run_per_action_on_the_range_axis(
    operator: Client, django_assert_max_num_queries: Any
) -> None:
    """Each action alive in the range is a row with a wait bar and a run bar, in human units; the axis is the range
    shown (its ticks inside it), the same for any range, and bars beyond it are cut at its ends."""
    job = make_jobs(1, 120, wait=timedelta(seconds=30), run=timedelta(minutes=2, seconds=5))[0]
    with django_assert_max_num_queries(9):
        response = operator.get(gantt(job))
    page = response.content.decode()
    assert response.status_code == 200
    numbers = [int(n) for n in re.findall(r'class="gantt-row" data-number="(\d+)"', page)]
    assert numbers[-1] == 120 and 40 <= len(numbers) <= 52 and 1 not in numbers  # the last 48 hours
    assert ">30 s<" in page and ">2 min 5 s<" in page
    assert '<dd id="median-run">2 min 5 s</dd>' in page and '<dd id="median-wait">30 s</dd>' in page
    start, end = re.search(r'id="gantt-axis" data-start="([^"]+)" data-end="([^"]+)"', page).groups()  # type: ignore[union-attr]
    shown_from = re.search(r'name="from" id="range-from" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    assert start.startswith(shown_from.replace("T", "T")[:16])
    ticks = [float(t) for t in re.findall(r'<span class="[^"]*" style="left:([\d.]+)%" title', page)]
    assert ticks and all(0 <= t <= 100 for t in ticks)

    first = job.actions.get(number=1)
    whole = operator.get(gantt(job), {
        "from": (first.created_time - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M"),
        "to": (timezone.now() + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M"),
    }).content.decode()
    assert whole.count('class="gantt-row"') == 120 and "120 actions alive in the range" in whole
    narrow = operator.get(gantt(job), {
        "from": (first.created_time + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M"),
        "to": (first.created_time + timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M"),
    }).content.decode()
    rows = re.findall(r'class="gantt-row" data-number="(\d+)"', narrow)
    assert rows[:3] == ["1", "2", "3"] and "cut-left" in narrow  # action 1 started before the range, ran into it
    assert operator.get(f"{JOBS}{quote('0000000-000-C')}/gantt/").status_code == 404
    assert operator.get(gantt(job), {"from": "soon"}).status_code == 400


@db_test
def test_a_gantt_of_a_long_range_shows_the_newest_rows_and_says_so(operator: Client) -> None:
    """More than GANTT_MAX_ROWS actions alive in the range: the newest GANTT_MAX_ROWS, and the page says how many."""
    job = make_jobs(1, GANTT_MAX_ROWS + 30)[0]
    page = operator.get(gantt(job)).content.decode()
    whole = operator.get(gantt(job) + link_named(page, "range-all")).content.decode()
    assert whole.count('class="gantt-row"') == GANTT_MAX_ROWS
    assert f"{GANTT_MAX_ROWS + 30} actions alive in the range: the {GANTT_MAX_ROWS} newest" in whole
    first = operator.get(gantt(job) + link_named(page, "range-first")).content.decode()
    assert 'data-number="1"' in first


@db_test
def test_dashboard_shows_statuses_late_actions_parked_commands_workers_and_sla_misses(operator: Client) -> None:
    """One page answers what runs, what waits and why: counts by status, late actions with their first missing
    input, parked commands linked to their job, queue depth, workers heard of, today's SLA misses."""
    job = make_jobs(3, 5)[0]
    now = timezone.now()
    late = job.actions.get(number=5)  # WAITING, nominal time passed
    Command.objects.create(
        key=job.pk, seq=1, name="coordinators.CoordActionStartXCommand", params={"job_id": job.pk, "number": 4},
        status=CommandStatus.PARKED, enqueued_at=now, not_before=now, last_error="Traceback\nRuntimeError: disk full",
    )
    Command.objects.create(
        key="other", seq=1, name="coordinators.CoordMaterializeXCommand", params={"job_id": job.pk},
        status=CommandStatus.PENDING, enqueued_at=now - timedelta(minutes=3), not_before=now,
    )
    Command.objects.create(
        key="done", seq=1, name="coordinators.CoordMaterializeXCommand", params={"job_id": job.pk},
        status=CommandStatus.SUCCEEDED, enqueued_at=now, not_before=now, started_at=now, finished_at=now,
        history=[{"worker": "celery@worker-7"}],
    )
    record = SLARegistration.objects.create(
        action=job.actions.get(number=1), job=job, version="0.2", app_name=job.app_name, user="ann",
        nominal_time=now, sla_status="MISS",
    )
    SLAEvent.objects.create(registration=record, job=job, event_type="END_MISS", occurred_at=now)
    page = operator.get(DASHBOARD).content.decode()
    assert "running with error" in page and "Coordinator actions" in page
    assert short_action_id(late.pk) in page and "1 missing: <code>" in page and late.missing_dependencies[0][0] in page
    assert "disk full" in page and f"action <a href=\"{ACTIONS}{quote(job.pk + '@4')}/change/\"" in page
    assert 'class="figure alert">1<' in page  # one parked command
    assert "celery@worker-7" in page
    assert "end miss" in page and "SLA misses today" in page
    assert "View site" not in page


@db_test
def test_lists_read_on_one_line_with_words_short_ids_and_proper_titles(operator: Client) -> None:
    """Job and action lists: short ids with the full id in a title, statuses and pending in words, run times in
    human units, titled by what they list; no "View site"."""
    job = make_jobs(2, 3, run=timedelta(milliseconds=17))[1]  # RUNNINGWITHERROR
    jobs = operator.get(JOBS).content.decode()
    assert "<h1>Coordinator jobs</h1>" in jobs and "Select coordinator job to change" not in jobs
    assert f'title="{job.pk}"' in jobs and f">{short_job_id(job.pk)}<" in jobs
    assert ">running with error<" in jobs and "Runningwitherror" not in jobs
    assert "View site" not in jobs and "icon-no.svg" not in jobs
    assert "Change end time, concurrency or pause time" in jobs and "Rerun failed" in jobs
    actions = operator.get(ACTIONS, {"job": job.pk}).content.decode()
    assert "<h1>Coordinator actions</h1>" in actions
    first = job.actions.get(number=1)
    assert f">{short_action_id(first.pk)}<" in actions and ">17 ms<" in actions
    assert not re.search(r"\b0:00:00\.\d", actions)
    assert operator.get(ACTIONS, {"late": "yes"}).content.decode().count('class="short-id"') == 2  # 2 jobs, #3 each
    detail = operator.get(f"{ACTIONS}{quote(first.pk)}/change/").content.decode()
    assert "icon-no.svg" not in detail and "icon-yes.svg" not in detail


@db_test
def test_commands_link_to_the_job_or_action_they_were_for(operator: Client) -> None:
    """A command's row names and links its action (job id + number) or its job."""
    job = make_jobs(1, 2)[0]
    now = timezone.now()
    for seq, params in enumerate([{"job_id": job.pk, "number": 2}, {"job_id": job.pk}, {"batch_id": 999}], 1):
        Command.objects.create(key=job.pk, seq=seq, name="x.Y", params=params, enqueued_at=now, not_before=now)
    page = operator.get("/admin/xcommands/command/").content.decode()
    assert f'href="{ACTIONS}{quote(job.pk + "@2")}/change/"' in page
    assert f'href="{JOBS}{quote(job.pk)}/change/"' in page
    assert 'href="/admin/batches/batch/999/change/"' in page
    assert "<h1>Commands</h1>" in page


@db_test
def test_rerun_failed_reruns_only_failed_killed_and_timed_out_actions(operator: Client) -> None:
    """From the job list: each selected job's FAILED, KILLED and TIMEDOUT actions go back to WAITING, nothing else."""
    job, clean = make_jobs(2, 18, statuses=(JobStatus.RUNNINGWITHERROR,))
    clean.actions.filter(status__in=["FAILED", "KILLED", "TIMEDOUT"]).update(status=ActionStatus.SUCCEEDED)
    before = dict(job.actions.values_list("number", "status"))
    response = operator.post(JOBS, {"action": "rerun_failed_actions", "_selected_action": [job.pk, clean.pk]},
                             follow=True)
    page = response.content.decode()
    assert f"queued for 1 job(s): {job.pk} (3 actions)" in page
    assert f"refused for {clean.pk}: no failed, killed or timed-out action" in page
    run_pending_commands()
    after = dict(job.actions.values_list("number", "status"))
    rerun = {n for n, status in before.items() if status in ("FAILED", "KILLED", "TIMEDOUT")}
    assert rerun == {7, 11, 16}
    assert {n for n in after if after[n] != before[n]} == rerun
    assert all(after[n] not in ("FAILED", "KILLED", "TIMEDOUT") for n in rerun)
    assert set(clean.actions.values_list("status", flat=True)) <= {"SUCCEEDED", "RUNNING", "WAITING"}


@db_test
def test_bulk_change_asks_for_values_then_changes_each_job(operator: Client) -> None:
    """Change shows a form first; empty or bad values change nothing; good ones go through services.change_job."""
    jobs = make_jobs(2, 2, statuses=(JobStatus.RUNNING,))
    selected = [j.pk for j in jobs]
    form = operator.post(JOBS, {"action": "change_jobs", "_selected_action": selected}).content.decode()
    assert "Change 2 coordinator jobs" in form and 'name="concurrency"' in form and 'name="apply"' in form
    empty = operator.post(JOBS, {"action": "change_jobs", "_selected_action": selected, "apply": "yes"}).content.decode()
    assert "Nothing to change" in empty
    bad = operator.post(JOBS, {"action": "change_jobs", "_selected_action": selected, "apply": "yes",
                               "endtime": "tomorrow"}, follow=True).content.decode()
    assert bad.count("refused for") == 2 and not Command.objects.exists()
    done = operator.post(JOBS, {"action": "change_jobs", "_selected_action": selected, "apply": "yes",
                                "concurrency": "7"}, follow=True).content.decode()
    assert "Change concurrency=7 queued for 2 job(s)" in done
    run_pending_commands()
    assert set(CoordinatorJob.objects.filter(pk__in=selected).values_list("concurrency", flat=True)) == {7}
