"""The grid across coordinator jobs: a page of jobs on one time axis, nominal time across (Airflow's grid: runs x tasks).

Each job is a row of squares by nominal time, and each action node of its workflow runs a row
under it. The axis is the range the operator picks (coordinators.admin.timegrid): the whole
history is reachable by range, never 60 actions at a time. The page costs a fixed number of
queries: the page of jobs, their first and last nominal times, the actions by bucket and
status, the nodes by bucket and status.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.admin import ModelAdmin
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from coordinators.admin import timegrid
from coordinators.admin.pages import check_view, url_maker
from coordinators.choices import JobStatus
from coordinators.models import CoordinatorJob
from kernel.display import frequency_words, short_job_id, status_label, status_words
from kernel.time_axis import frequency_step

GRID_JOBS_PER_PAGE = 50


def _page_link(params: dict[str, str], number: int) -> str:
    """Another page of jobs on the same range and filters."""
    return "?" + urlencode({**{key: value for key, value in params.items() if value}, "p": number})


def grid_view(modeladmin: ModelAdmin[CoordinatorJob], request: HttpRequest) -> HttpResponse:
    """A page of coordinator jobs and their workflow nodes on one time axis, squares coloured by status."""
    check_view(modeladmin, request)
    status = request.GET.get("status", "")
    query = request.GET.get("q", "").strip()[:200]
    jobs = CoordinatorJob.objects.only(
        "id", "app_name", "status", "pending", "frequency", "time_unit", "last_action_number", "created_at",
    ).order_by("-created_at", "-id")
    if status in JobStatus.values:
        jobs = jobs.filter(status=status)
    else:
        status = ""
    if query:
        jobs = jobs.filter(Q(app_name__icontains=query) | Q(id__startswith=query))
    page = Paginator(jobs, GRID_JOBS_PER_PAGE).get_page(request.GET.get("p"))
    page_jobs = list(page.object_list)
    ids = [job.pk for job in page_jobs]

    earliest, latest = timegrid.bounds(ids)
    default = timegrid.default_window(
        latest, [frequency_step(job.frequency, job.time_unit) for job in page_jobs], timezone.now(),
    )
    window, error = timegrid.window_or_error(request.GET, default)
    axis = timegrid.grid_axis(window)
    actions = timegrid.action_buckets(ids, axis)
    nodes = timegrid.node_buckets(ids, axis)

    links = timegrid.Links()
    job_url = url_maker("admin:coordinators_coordinatorjob_change")
    gantt_url = url_maker("admin:coordinators_coordinatorjob_gantt")
    rows: list[dict[str, object]] = []
    seen: set[str] = set()
    for job in page_jobs:
        squares = timegrid.action_squares(job.app_name, job.pk, actions.get(job.pk, {}), axis, links)
        seen.update(square.status for square in squares)
        rows.append({
            "job": job, "url": job_url(job.pk), "gantt_url": gantt_url(job.pk), "short_id": short_job_id(job.pk),
            "label": status_label(job.status, pending=job.pending), "every": frequency_words(job.frequency, job.time_unit),
            "cells": timegrid.squares_html(squares, axis, "action"), "empty": not squares,
            "nodes": timegrid.node_rows(job.pk, nodes.get(job.pk, {}), axis, links),
        })
        for by_bucket in nodes.get(job.pk, {}).values():
            seen.update(status for bucket in by_bucket.values() for status in bucket.counts)
    params = {"status": status, "q": query}
    controls = timegrid.range_controls(window, axis, earliest, latest, params, error=error)
    ticks = timegrid.axis_ticks(axis.start, axis.end)
    paging = {**params, "from": controls.from_value, "to": controls.to_value}
    context = {
        **modeladmin.admin_site.each_context(request),
        "opts": CoordinatorJob._meta,
        "title": "Coordinator grid",
        "is_nav_sidebar_enabled": False,  # the time axis takes the whole width
        "rows": rows,
        "page": page,
        "status": status,
        "query": query,
        "range": controls,
        "axis": axis,
        "ticks": ticks,
        "tick_lines": timegrid.tick_lines(ticks),
        "previous_url": _page_link(paging, page.previous_page_number()) if page.has_previous() else "",
        "next_url": _page_link(paging, page.next_page_number()) if page.has_next() else "",
        "statuses": [{"value": s, "words": status_words(s)} for s in JobStatus.values],
        "legend": timegrid.legend(seen),
    }
    return TemplateResponse(
        request, "admin/coordinators/coordinatorjob/grid.html", context, status=400 if error else 200,
    )
