"""The grid across coordinator jobs: a page of jobs, each with its last N actions coloured by status (Airflow's grid).

The grid reads one page of jobs and then the last N actions of every job of the page in one
query: action numbers run 1, 2, 3 ... without gaps per job, so "the last N" is a range of the
(job, number) unique index, however many actions a job has.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import reduce
from typing import Any

from django.contrib.admin import ModelAdmin
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from coordinators.admin.pages import check_view, query_int, url_maker
from coordinators.choices import ActionStatus, JobStatus
from coordinators.models import CoordinatorAction, CoordinatorJob
from kernel.display import (
    exact_time,
    frequency_words,
    human_duration,
    short_job_id,
    status_colour,
    status_label,
    status_words,
)

GRID_JOBS_PER_PAGE = 50
GRID_COLUMNS = 25
GRID_MAX_COLUMNS = 60


@dataclass(frozen=True)
class GridCell:
    """One slot of a grid row: an action (url, colour, title) or an empty slot (no action with that number)."""

    number: int
    url: str = ""
    colour: str = ""
    title: str = ""
    status: str = ""


def grid_view(modeladmin: ModelAdmin[CoordinatorJob], request: HttpRequest) -> HttpResponse:
    """Coordinator jobs, a page at a time, each with its last N actions coloured by status (Airflow's grid)."""
    check_view(modeladmin, request)
    columns = query_int(request.GET.get("n"), GRID_COLUMNS, 5, GRID_MAX_COLUMNS)
    back = query_int(request.GET.get("back"), 0, 0, 10**6)
    status = request.GET.get("status", "")
    query = request.GET.get("q", "").strip()[:200]
    jobs = CoordinatorJob.objects.only(
        "id", "app_name", "status", "pending", "frequency", "time_unit", "last_action_number", "next_materialize_at",
        "created_at",
    ).order_by("-created_at", "-id")
    if status in JobStatus.values:
        jobs = jobs.filter(status=status)
    else:
        status = ""
    if query:
        jobs = jobs.filter(Q(app_name__icontains=query) | Q(id__startswith=query))
    page = Paginator(jobs, GRID_JOBS_PER_PAGE).get_page(request.GET.get("p"))
    page_jobs = list(page.object_list)

    # The slots of each row: numbers (last - back * columns - columns, last - back * columns].
    windows = {job.pk: job.last_action_number - back * columns for job in page_jobs}
    ranges = [Q(job_id=pk, number__gt=high - columns, number__lte=high) for pk, high in windows.items() if high > 0]
    found: dict[tuple[str, int], tuple[Any, ...]] = {}
    if ranges:
        rows = CoordinatorAction.objects.filter(reduce(operator.or_, ranges)).values_list(
            "id", "job_id", "number", "nominal_time", "status", "started_at", "ended_at",
        )
        found = {(row[1], row[2]): row for row in rows}

    action_url = url_maker("admin:coordinators_coordinatoraction_change")
    job_url = url_maker("admin:coordinators_coordinatorjob_change")
    gantt_url = url_maker("admin:coordinators_coordinatorjob_gantt")
    grid_rows = []
    for job in page_jobs:
        high = windows[job.pk]
        cells = []
        for number in range(high - columns + 1, high + 1):
            row = found.get((job.pk, number))
            if row is None:
                cells.append(GridCell(number=number))
                continue
            action_id, _, _, nominal, action_status, started, ended = row
            ran = f" · ran {human_duration(ended - started)}" if started and ended else ""
            cells.append(GridCell(
                number=number, url=action_url(action_id), colour=status_colour(action_status), status=action_status,
                title=f"{job.app_name} #{number} · {exact_time(nominal)} · {status_words(action_status)}{ran}",
            ))
        last = next((found[(job.pk, n)] for n in range(high, high - columns, -1) if (job.pk, n) in found), None)
        grid_rows.append({
            "job": job, "cells": cells, "url": job_url(job.pk), "gantt_url": gantt_url(job.pk),
            "short_id": short_job_id(job.pk), "label": status_label(job.status, pending=job.pending),
            "every": frequency_words(job.frequency, job.time_unit),
            "last_nominal": exact_time(last[3]) if last else "-",
        })
    params = {"n": columns, "status": status, "q": query}
    context = {
        **modeladmin.admin_site.each_context(request),
        "opts": CoordinatorJob._meta,
        "title": "Coordinator grid",
        "rows": grid_rows,
        "page": page,
        "columns": columns,
        "column_choices": sorted({10, GRID_COLUMNS, 40, GRID_MAX_COLUMNS, columns}),
        "back": back,
        "status": status,
        "query": query,
        "params": params,
        "statuses": [{"value": s, "words": status_words(s)} for s in JobStatus.values],
        "legend": [{"words": status_words(s), "colour": status_colour(s)} for s in ActionStatus.values],
        "has_older": any(windows[job.pk] - columns > 0 for job in page_jobs),
    }
    return TemplateResponse(request, "admin/coordinators/coordinatorjob/grid.html", context)
