"""`manage.py bench api-pages`: how fast a page of jobs or of a job's actions answers, through both APIs.

Stores 10,000 jobs and one job with 50,000 actions (bulk inserts, no commands) on the configured
database, then times whole requests (authentication, query, serialization) through the Django
test client, in process, and counts their queries. Everything it stored is deleted afterwards.
"""

from __future__ import annotations

import statistics
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from rest_framework.authtoken.models import Token

from coordinators.models import CoordinatorAction, CoordinatorJob
from oozie.properties import COORD_APP_PATH
from tooling.benchmarks.requests_timing import time_requests

Log = Callable[[str], None]
T0 = datetime(2026, 1, 1, tzinfo=UTC)
STATUSES = ("SUCCEEDED", "SUCCEEDED", "SUCCEEDED", "FAILED", "WAITING", "KILLED")


def _store(prefix: str, owner: Any, jobs: int, actions: int, log: Log) -> str:
    """Insert the jobs and the big job's actions; the id of the big job."""
    log(f"storing {jobs} jobs and a job with {actions} actions")
    CoordinatorJob.objects.bulk_create(
        [
            CoordinatorJob(
                id=f"{n:07d}-{prefix}-C", app_name=f"bench-{n % 100}", definition="<coordinator-app/>",
                configuration={COORD_APP_PATH: f"file:///apps/{n % 100}"}, owner=owner,
                frequency="60", time_unit="MINUTE", timezone="UTC", start_time=T0, end_time=T0 + timedelta(days=365),
                status="RUNNING" if n % 10 else "SUSPENDED",
            )
            for n in range(1, jobs + 1)
        ],
        batch_size=2000,
    )
    big = f"{1:07d}-{prefix}-C"
    for start in range(1, actions + 1, 10_000):
        CoordinatorAction.objects.bulk_create(
            [
                CoordinatorAction(
                    id=f"{big}@{n}", job_id=big, number=n, nominal_time=T0 + timedelta(hours=n),
                    status=STATUSES[n % len(STATUSES)], run_conf={"input": f"file:///data/{n}"},
                )
                for n in range(start, min(actions, start + 9_999) + 1)
            ],
            batch_size=5000,
        )
    return big


def _time(client: Client, url: str, repeat: int) -> dict[str, Any]:
    """Milliseconds per request (median, p95, max) and the queries of one request."""
    timed = time_requests(client, url, repeat)
    samples = timed.samples_ms
    return {
        "median_ms": round(statistics.median(samples), 2),
        "p95_ms": round(samples[max(0, int(len(samples) * 0.95) - 1)], 2),
        "max_ms": round(samples[-1], 2),
        "queries": timed.queries,
    }


def run_api_pages_bench(jobs: int, actions: int, repeat: int, log: Log) -> dict[str, Any]:
    """Time first, middle and last pages of the job list and of the big job's actions, in both APIs."""
    prefix = uuid.uuid4().hex[:15]
    owner = get_user_model().objects.create_user(f"bench-api-{prefix}")
    token = Token.objects.create(user=owner)
    try:
        big = _store(prefix, owner, jobs, actions, log)
        native = Client(headers={"Authorization": f"Token {token.key}"})
        mid_jobs, last_jobs = jobs // 2, max(0, jobs - 50)
        mid_actions, last_actions = actions // 2, max(0, actions - 50)
        pages = {
            "native_jobs_first": "/api/v1/coordinator-jobs/?limit=50",
            "native_jobs_middle": f"/api/v1/coordinator-jobs/?limit=50&offset={mid_jobs}",
            "native_jobs_last": f"/api/v1/coordinator-jobs/?limit=50&offset={last_jobs}",
            "native_jobs_status_user": f"/api/v1/coordinator-jobs/?limit=50&status=SUSPENDED&user={owner.username}",
            "native_jobs_1000": "/api/v1/coordinator-jobs/?limit=1000",
            "native_actions_first": f"/api/v1/coordinator-jobs/{big}/actions/?limit=50",
            "native_actions_middle": f"/api/v1/coordinator-jobs/{big}/actions/?limit=50&offset={mid_actions}",
            "native_actions_last": f"/api/v1/coordinator-jobs/{big}/actions/?limit=50&offset={last_actions}",
            "native_actions_latest": f"/api/v1/coordinator-jobs/{big}/actions/?limit=50&order=desc",
            "native_actions_failed": f"/api/v1/coordinator-jobs/{big}/actions/?limit=50&status=FAILED&offset={actions // 12}",
            "oozie_jobs_first": "/oozie/v2/jobs?jobtype=coord&len=50",
            "oozie_jobs_last": f"/oozie/v2/jobs?jobtype=coord&len=50&offset={last_jobs + 1}",
            "oozie_jobs_filtered": "/oozie/v2/jobs?jobtype=coord&len=50&filter=status%3DSUSPENDED%3Bname%3Dbench-10",
            "oozie_job_actions_first": f"/oozie/v2/job/{big}?show=info&len=50",
            "oozie_job_actions_last": f"/oozie/v2/job/{big}?show=info&len=50&offset={last_actions + 1}",
            "oozie_job_actions_killed_desc": f"/oozie/v2/job/{big}?show=info&len=50&filter=status%3DKILLED&order=desc",
        }
        figures: dict[str, Any] = {"jobs": jobs, "actions": actions, "repeat": repeat, "database": connection.vendor}
        for name, url in pages.items():
            log(f"timing {name}")
            figures[name] = _time(native, url, repeat)
        figures["worst_p95_ms_50_per_page"] = max(
            figures[name]["p95_ms"] for name in pages if name != "native_jobs_1000"
        )
        return figures
    finally:
        log("deleting what the benchmark stored")
        CoordinatorAction.objects.filter(job__id__endswith=f"-{prefix}-C").delete()
        CoordinatorJob.objects.filter(id__endswith=f"-{prefix}-C").delete()
        token.delete()
        owner.delete()
