"""The server's side of the live operator pages: who gets the script, what a refetch answers (no browser).

The browser's side is tests/project/test_live_pages.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.coordinators.admin.factories import make_jobs

pytestmark = pytest.mark.django_db

SCRIPT = '<script data-seconds="'
REFETCH = {"X-Live-Refresh": "1"}


@pytest.fixture
def operator() -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("op", "op@example.com", "pw"))
    return client


@pytest.mark.parametrize("path", [
    "/admin/dashboard/",
    "/admin/coordinators/coordinatorjob/",
    "/admin/coordinators/coordinatorjob/grid/",
    "/admin/operations/operation/",
], ids=["dashboard", "job-list", "grid", "operation-list"])
def test_an_operator_page_carries_the_script_with_the_interval(operator: Client, settings: Any, path: str) -> None:
    """Every page an operator opens carries the live script with ADMIN_LIVE_SECONDS (5 by default; 2 here)."""
    settings.ADMIN_LIVE_SECONDS = 2
    page = operator.get(path).content.decode()
    assert f'{SCRIPT}2">' in page and "X-Live-Refresh" in page


def test_the_default_interval_is_five_seconds(operator: Client) -> None:
    """Unset, ADMIN_LIVE_SECONDS is 5."""
    assert f'{SCRIPT}5">' in operator.get("/admin/dashboard/").content.decode()


def test_zero_turns_the_live_pages_off(operator: Client, settings: Any) -> None:
    """ADMIN_LIVE_SECONDS=0: no page carries the script; the pages are as they were."""
    settings.ADMIN_LIVE_SECONDS = 0
    page = operator.get("/admin/dashboard/").content.decode()
    assert SCRIPT not in page and 'id="status-coordinator_jobs"' in page


def test_the_login_page_and_a_refetch_carry_no_script(operator: Client) -> None:
    """A visitor who is not signed in gets no script; a refetch answers the same page without it and without the
    app sidebar (less to send and parse)."""
    assert SCRIPT not in Client().get("/admin/login/").content.decode()
    make_jobs(2, 2)
    fresh = operator.get("/admin/operations/operation/", headers=REFETCH)
    assert fresh.status_code == 200
    page = fresh.content.decode()
    assert SCRIPT not in page and 'id="changelist"' in page and 'id="nav-sidebar"' not in page
    assert SCRIPT in operator.get("/admin/operations/operation/").content.decode()
    # A list with the app sidebar (the operations list gives its room to columns) loses it in a refetch.
    assert 'id="nav-sidebar"' in operator.get("/admin/auth/user/").content.decode()
    assert 'id="nav-sidebar"' not in operator.get("/admin/auth/user/", headers=REFETCH).content.decode()
    jobs = operator.get("/admin/coordinators/coordinatorjob/", headers=REFETCH).content.decode()
    assert 'id="result_list"' in jobs and "grid-job-001" in jobs


def test_the_live_regions_are_marked(operator: Client) -> None:
    """The dashboard, the grid and a Gantt view mark the parts that refresh (the rest of the page stays)."""
    job = make_jobs(1, 3)[0]
    assert 'data-live="dashboard"' in operator.get("/admin/dashboard/").content.decode()
    grid = operator.get("/admin/coordinators/coordinatorjob/grid/").content.decode()
    assert 'data-live="grid"' in grid and 'data-live="grid-paging"' in grid
    gantt = operator.get(f"/admin/coordinators/coordinatorjob/{job.pk}/gantt/").content.decode()
    assert 'data-live="gantt"' in gantt


def test_a_refetch_leaves_the_messages_for_the_next_page(operator: Client) -> None:
    """A message waiting for the operator (a verb's answer) is not used up by a refetch in another tab."""
    answer = operator.post("/admin/operations/operation/", {"action": "cancel_operations", "index": "0"})
    assert answer.status_code == 302
    refetched = operator.get("/admin/operations/operation/", headers=REFETCH).content.decode()
    assert "Items must be selected" not in refetched
    shown = operator.get("/admin/operations/operation/").content.decode()
    assert "Items must be selected" in shown
    assert "Items must be selected" not in operator.get("/admin/operations/operation/").content.decode()


def test_a_form_answer_is_not_live(operator: Client) -> None:
    """A page answering a POST (an intermediate verb page) carries no script: fetching its URL again would not
    fetch that page."""
    jobs = make_jobs(2, 2)
    answer = operator.post("/admin/coordinators/coordinatorjob/", {
        "action": "change_jobs", "index": "0", "_selected_action": [job.pk for job in jobs],
    })
    assert answer.status_code == 200 and SCRIPT not in answer.content.decode()
