"""`manage.py bench pages`: how fast the operator pages render: the grid, the Gantt view and the dashboard.

Stores, with bulk inserts and no commands, one hourly coordinator job of 10,000 actions whose
runs are workflow applications (a workflow job per action, three action nodes and a start
node each) and 999 more jobs of 24 actions, on the configured database. Then renders the pages
through the Django test client, in process, as a logged-in superuser (the session, the admin's
permission checks, the queries and the templates all count), and prints for each page the
median and the slowest of `repeat` requests, its queries, and whether the median is under the
budget (300 ms). Everything it stored is deleted afterwards.
"""

from __future__ import annotations

import statistics
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django.contrib.admin.utils import quote
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.utils import timezone

from coordinators.models import CoordinatorAction, CoordinatorJob
from tooling.benchmarks.requests_timing import time_requests
from workflows.models import WorkflowJob, WorkflowNode

Log = Callable[[str], None]
BUDGET_MS = 300.0
NODES = ("extract", "transform", "load")
#: Action statuses in turn: mostly done, a failure and a kill now and then.
STATUSES = ("SUCCEEDED",) * 9 + ("FAILED",) + ("SUCCEEDED",) * 9 + ("KILLED",)
NODE_STATUSES = {"SUCCEEDED": ("OK", "OK", "OK"), "FAILED": ("OK", "ERROR", "PREP"), "KILLED": ("OK", "KILLED", "PREP")}
BATCH = 5000


def _job(job_id: str, owner: Any, n: int, actions: int, start: datetime) -> CoordinatorJob:
    return CoordinatorJob(
        id=job_id, app_name=f"bench-pages-{n % 100:02d}", definition="<coordinator-app/>", configuration={},
        owner=owner, frequency="60", time_unit="MINUTE", timezone="UTC", start_time=start,
        end_time=start + timedelta(days=800), status="RUNNING" if n % 10 else "RUNNINGWITHERROR",
        last_action_number=actions,
    )


def _action(job_id: str, number: int, total: int, start: datetime) -> CoordinatorAction:
    """Action `number` of `total`: hourly from `start`; the last one WAITING, the one before RUNNING."""
    nominal = start + timedelta(hours=number - 1)
    status = "WAITING" if number == total else ("RUNNING" if number == total - 1 else STATUSES[number % len(STATUSES)])
    created = nominal - timedelta(minutes=1)
    started = created + timedelta(seconds=31) if status != "WAITING" else None
    ended = started + timedelta(minutes=2) if started and status != "RUNNING" else None
    return CoordinatorAction(
        id=CoordinatorAction.action_id(job_id, number), job_id=job_id, number=number, nominal_time=nominal,
        created_time=created, status=status, submitted_at=created + timedelta(seconds=30) if started else None,
        started_at=started, ended_at=ended,
    )


def _runs(prefix: str, actions: list[CoordinatorAction], owner: Any) -> tuple[list[WorkflowJob], list[WorkflowNode]]:
    """A workflow application's run for each launched action: a start node and the three action nodes."""
    runs, nodes = [], []
    for action in actions:
        if action.started_at is None:
            continue
        run = WorkflowJob(
            id=f"{action.number:07d}-{prefix}-W", app_name="bench-pages-wf", app_path="file:///apps/bench-pages-wf",
            owner=owner, coord_action_id=action.pk, run=0, nominal_time=action.nominal_time,
            status="SUCCEEDED" if action.status == "SUCCEEDED" else "RUNNING", created_at=action.started_at,
            started_at=action.started_at, ended_at=action.ended_at,
        )
        runs.append(run)
        nodes.append(WorkflowNode(id=f"{run.id}@:start:", workflow=run, name=":start:", type=":START:", status="OK",
                                  started_at=action.started_at, ended_at=action.started_at))
        statuses = NODE_STATUSES.get(action.status, ("OK", "RUNNING", "PREP"))
        for i, name in enumerate(NODES):
            nodes.append(WorkflowNode(
                id=f"{run.id}@{name}", workflow=run, name=name, status=statuses[i], task_name="examples.noop",
                queue="default", task_id=f"{run.id}-{name}", started_at=action.started_at + timedelta(seconds=20 * i),
            ))
    return runs, nodes


def _store(prefix: str, owner: Any, jobs: int, big_actions: int, small_actions: int, log: Log) -> tuple[str, datetime]:
    """Insert the jobs, their actions and the big job's workflow runs; the big job's id and its first nominal time."""
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    big_start = now - timedelta(hours=big_actions)
    small_start = now - timedelta(hours=small_actions)
    big = f"{1:07d}-{prefix}-C"
    log(f"storing {jobs} jobs: one of {big_actions} actions with workflow runs, the others of {small_actions}")
    CoordinatorJob.objects.bulk_create(
        [_job(big, owner, 1, big_actions, big_start)]
        + [_job(f"{n:07d}-{prefix}-C", owner, n, small_actions, small_start) for n in range(2, jobs + 1)],
        batch_size=1000,
    )
    for first in range(1, big_actions + 1, BATCH):
        chunk = [_action(big, n, big_actions, big_start) for n in range(first, min(big_actions, first + BATCH - 1) + 1)]
        CoordinatorAction.objects.bulk_create(chunk, batch_size=BATCH)
        runs, nodes = _runs(prefix, chunk, owner)
        WorkflowJob.objects.bulk_create(runs, batch_size=BATCH)
        WorkflowNode.objects.bulk_create(nodes, batch_size=BATCH)
    rows: list[CoordinatorAction] = []
    for n in range(2, jobs + 1):
        job_id = f"{n:07d}-{prefix}-C"
        rows.extend(_action(job_id, k, small_actions, small_start) for k in range(1, small_actions + 1))
        if len(rows) >= BATCH:
            CoordinatorAction.objects.bulk_create(rows, batch_size=BATCH)
            rows = []
    CoordinatorAction.objects.bulk_create(rows, batch_size=BATCH)
    return big, big_start


def _time(client: Client, url: str, repeat: int) -> dict[str, Any]:
    """Milliseconds per request (median and slowest of `repeat`, after a warm-up), its queries, within budget or not."""
    timed = time_requests(client, url, repeat)
    median = statistics.median(timed.samples_ms)
    return {
        "median_ms": round(median, 1), "max_ms": round(timed.samples_ms[-1], 1), "queries": timed.queries,
        "kb": round(timed.size / 1024), "under_300_ms": "yes" if median < BUDGET_MS else "NO",
    }


def _range(begin: datetime, end: datetime) -> str:
    """A from/to query string as the range form writes it (local time, to the minute)."""
    return urlencode({"from": timezone.localtime(begin).strftime("%Y-%m-%dT%H:%M"),
                      "to": timezone.localtime(end).strftime("%Y-%m-%dT%H:%M")})


def run_pages_bench(jobs: int, big_actions: int, small_actions: int, repeat: int, log: Log) -> dict[str, Any]:
    """Render the grid (1,000 jobs; the big job's newest, first and whole ranges), its Gantt views and the dashboard."""
    prefix = uuid.uuid4().hex[:15]
    admin = get_user_model().objects.create_superuser(f"bench-pages-{prefix}", f"bench-{prefix}@example.com")
    try:
        big, first = _store(prefix, admin, jobs, big_actions, small_actions, log)
        client = Client()
        client.force_login(admin)
        grid = "/admin/coordinators/coordinatorjob/grid/"
        gantt = f"/admin/coordinators/coordinatorjob/{quote(big)}/gantt/"
        last = first + timedelta(hours=big_actions)
        pages = {
            "dashboard": "/admin/dashboard/",
            "grid_jobs_first_page": grid,
            "grid_jobs_last_page": f"{grid}?p={(jobs + 49) // 50}",
            "grid_big_job_newest": f"{grid}?q={big}",
            "grid_big_job_first_48h": f"{grid}?q={big}&{_range(first, first + timedelta(hours=48))}",
            "grid_big_job_whole": f"{grid}?q={big}&{_range(first, last)}",
            "gantt_big_job_newest": gantt,
            "gantt_big_job_whole": f"{gantt}?{_range(first - timedelta(hours=1), last + timedelta(hours=1))}",
            "grid_jobs_first_page_whole_range": f"{grid}?{_range(first, last)}",
        }
        figures: dict[str, Any] = {
            "jobs": jobs, "big_job_actions": big_actions, "other_job_actions": small_actions,
            "workflow_nodes": WorkflowNode.objects.filter(workflow__id__endswith=f"-{prefix}-W").count(),
            "repeat": repeat, "database": connection.vendor, "budget_ms": BUDGET_MS,
        }
        for name, url in pages.items():
            log(f"timing {name}")
            figures[name] = _time(client, url, repeat)
        figures["slowest_median_ms"] = max(figures[name]["median_ms"] for name in pages)
        figures["all_under_300_ms"] = "yes" if figures["slowest_median_ms"] < BUDGET_MS else "NO"
        return figures
    finally:
        log("deleting what the benchmark stored")
        WorkflowJob.objects.filter(id__endswith=f"-{prefix}-W").delete()
        CoordinatorAction.objects.filter(job__id__endswith=f"-{prefix}-C").delete()
        CoordinatorJob.objects.filter(id__endswith=f"-{prefix}-C").delete()
        admin.delete()
