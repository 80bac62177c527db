"""Pages stay cheap: the query count does not grow with the page size, and list queries walk an index.

Timings are measured by `manage.py bench api-pages` (10,000 jobs, a job with 50,000 actions), not here.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection

from coordinators.models import CoordinatorAction, CoordinatorJob
from tests.coordinators.api.factories import api, bulk_actions, bulk_jobs
from tests.oozieapi.client import Oozie

pytestmark = pytest.mark.django_db

SIZES = [pytest.param(5, id="page-of-5"), pytest.param(200, id="page-of-200")]


@pytest.fixture
def stored(ann: User) -> str:
    """300 jobs; the first has 400 actions. Returns the big job's id."""
    big, *_ = bulk_jobs(ann, 300)
    bulk_actions(big, 400, statuses=("SUCCEEDED", "FAILED"))
    return big


@pytest.mark.parametrize("size", SIZES)
def test_native_job_list(stored: str, ann: User, size: int, django_assert_num_queries: Any) -> None:
    """Token, count, page (owners joined): 3 queries whatever the page size."""
    client = api(ann)
    with django_assert_num_queries(3):
        response = client.get("/api/v1/coordinator-jobs/", {"limit": str(size), "status": "RUNNING"})
    assert len(response.json()["results"]) == size


@pytest.mark.parametrize("size", SIZES)
def test_native_actions_of_a_job(stored: str, ann: User, size: int, django_assert_num_queries: Any) -> None:
    """Token, job, count, page: 4 queries whatever the page size."""
    client = api(ann)
    with django_assert_num_queries(4):
        response = client.get(f"/api/v1/coordinator-jobs/{stored}/actions/", {"limit": str(size), "order": "desc"})
    assert len(response.json()["results"]) == size


@pytest.mark.parametrize("size", SIZES)
def test_native_action_list(stored: str, ann: User, size: int, django_assert_num_queries: Any) -> None:
    """Token, count, page: 3 queries whatever the page size."""
    client = api(ann)
    with django_assert_num_queries(3):
        response = client.get("/api/v1/coordinator-actions/", {"limit": str(size), "job": stored, "status": "FAILED"})
    assert len(response.json()["results"]) == size


@pytest.mark.parametrize("size", SIZES)
def test_oozie_job_list(stored: str, ann: User, size: int, django_assert_num_queries: Any) -> None:
    """Token, count, page: 3 queries whatever `len`."""
    oozie = Oozie(ann, use_token=True)
    with django_assert_num_queries(3):
        response = oozie.get("jobs", jobtype="coord", len=size, filter="status=RUNNING")
    assert len(response.json()["coordinatorjobs"]) == size


@pytest.mark.parametrize("size", SIZES)
def test_oozie_job_info(stored: str, ann: User, size: int, django_assert_num_queries: Any) -> None:
    """Token, job, count, page of actions: 4 queries whatever `len`."""
    oozie = Oozie(ann, use_token=True)
    with django_assert_num_queries(4):
        response = oozie.get(f"job/{stored}", len=size, offset=3)
    assert len(response.json()["actions"]) == size


def plan(queryset: Any) -> str:
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
        return " | ".join(str(row[-1]) for row in cursor.fetchall())


@pytest.mark.skipif(connection.vendor != "sqlite", reason="reads SQLite's query plans")
@pytest.mark.parametrize(
    "name",
    ["jobs-newest-first", "jobs-by-status", "actions-of-a-job", "actions-of-a-job-latest", "failed-actions-of-a-job", "all-actions"],
)
def test_list_queries_walk_an_index(stored: str, name: str) -> None:
    """Every list page reads an index in the page's order: no full scan, no sort of the whole table."""
    jobs = CoordinatorJob.objects.select_related("owner").order_by("-created_at", "-id")
    actions = CoordinatorAction.objects.filter(job_id=stored)
    queryset = {
        "jobs-newest-first": jobs[100:150],
        "jobs-by-status": jobs.filter(status__in=["RUNNING"])[:50],
        "actions-of-a-job": actions.order_by("number")[100:150],
        "actions-of-a-job-latest": actions.order_by("-number")[:50],
        "failed-actions-of-a-job": actions.filter(status__in=["FAILED"]).order_by("number")[:50],
        "all-actions": CoordinatorAction.objects.order_by("job_id", "number")[:50],
    }[name]
    text = plan(queryset)
    assert "INDEX" in text and "TEMP B-TREE" not in text, text
