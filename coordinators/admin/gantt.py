"""A coordinator job's Gantt view: one page of its actions on a time axis, how long each waited and ran.

Each action is drawn as up to three stretches: waiting (created → submitted), launching
(submitted → started) and running (started → ended), as far as it went; the page reads one
page of the job's actions.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.admin import ModelAdmin
from django.contrib.admin.utils import quote, unquote
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone

from coordinators.admin.pages import check_view, url_maker
from coordinators.choices import ACTION_ACTIVE, ACTION_PENDING, ActionStatus
from coordinators.models import CoordinatorAction, CoordinatorJob
from kernel.display import (
    exact_time,
    frequency_words,
    human_duration,
    status_colour,
    status_label,
)

GANTT_PAGE = 50


@dataclass(frozen=True)
class Segment:
    """A stretch of an action's life on the time axis: kind (wait, launch, run), position and width in %."""

    kind: str
    left: float
    width: float
    colour: str
    title: str


def _segments(action: CoordinatorAction, now: datetime) -> list[tuple[str, datetime, datetime]]:
    """Wait (created → submitted), launch (submitted → started) and run (started → ended), as far as they went.

    An action still waiting waits until now; one that ended without starting (timed out,
    killed, skipped) waited until it ended.
    """
    ended = action.ended_at or (action.last_modified if action.status not in (*ACTION_PENDING, *ACTION_ACTIVE) else None)
    started, submitted = action.started_at, action.submitted_at
    launched = submitted or started
    segments = [("wait", action.created_time, launched or ended or now)]
    if submitted is not None and action.status != ActionStatus.WAITING:
        segments.append(("launch", submitted, started or ended or now))
    if started is not None:
        segments.append(("run", started, ended or now))
    return [(kind, begin, max(begin, end)) for kind, begin, end in segments]


def _ticks(t0: datetime, span: float, count: int = 6) -> list[dict[str, Any]]:
    """Evenly spaced labels on the axis; with seconds when the whole span is under an hour."""
    fmt = "%H:%M:%S" if span < 3600 else ("%H:%M" if span < 86400 else "%m-%d %H:%M")
    return [
        {"left": round(100 * i / (count - 1), 3),
         "label": timezone.localtime(t0 + timedelta(seconds=span * i / (count - 1))).strftime(fmt)}
        for i in range(count)
    ]


def gantt_view(modeladmin: ModelAdmin[CoordinatorJob], request: HttpRequest, object_id: str) -> HttpResponse:
    """One page of a job's actions on a time axis: how long each waited (inputs, throttle) and ran."""
    job = get_object_or_404(CoordinatorJob.objects.select_related("owner"), pk=unquote(object_id))
    check_view(modeladmin, request, job)
    actions = job.actions.only(
        "id", "job_id", "number", "nominal_time", "status", "created_time", "submitted_at", "started_at", "ended_at",
        "last_modified", "run_count", "missing_dependencies",
    ).order_by("-number")
    page = Paginator(actions, GANTT_PAGE).get_page(request.GET.get("p"))
    items = sorted(page.object_list, key=lambda a: a.number)
    now = timezone.now()
    spans = {a.pk: _segments(a, now) for a in items}
    moments = [moment for segments in spans.values() for _, begin, end in segments for moment in (begin, end)]
    t0, t1 = (min(moments), max(moments)) if moments else (now, now)
    span = max((t1 - t0).total_seconds(), 1.0)

    def pct(moment: datetime) -> float:
        return round(100 * (moment - t0).total_seconds() / span, 3)

    action_url = url_maker("admin:coordinators_coordinatoraction_change")
    rows, waits, runs = [], [], []
    words = {"wait": "waited", "launch": "launching", "run": "ran"}
    for action in items:
        durations = {kind: end - begin for kind, begin, end in spans[action.pk]}
        segments = [
            Segment(kind=kind, left=pct(begin), width=max(0.0, pct(end) - pct(begin)),
                    colour=status_colour(action.status) if kind == "run" else "",
                    title=f"#{action.number} {words[kind]} {human_duration(end - begin)}: "
                          f"{exact_time(begin)} → {exact_time(end)}")
            for kind, begin, end in spans[action.pk]
        ]
        if "wait" in durations:
            waits.append(durations["wait"].total_seconds())
        if "run" in durations and action.ended_at is not None:
            runs.append(durations["run"].total_seconds())
        missing = action.missing_dependencies if action.status == ActionStatus.WAITING else []
        rows.append({
            "action": action, "url": action_url(action.pk), "label": status_label(action.status),
            "segments": segments, "wait": human_duration(durations.get("wait")),
            "run": human_duration(durations.get("run")) if "run" in durations else "-",
            "nominal_left": pct(action.nominal_time) if t0 <= action.nominal_time <= t1 else None,
            "missing": len(missing) if isinstance(missing, list) else 0,
        })
    context = {
        **modeladmin.admin_site.each_context(request),
        "opts": CoordinatorJob._meta,
        "title": f"Gantt of {job.app_name}",
        "is_nav_sidebar_enabled": False,  # the time axis takes the whole width
        "subtitle": job.pk,
        "job": job,
        "job_label": status_label(job.status, pending=job.pending),
        "every": frequency_words(job.frequency, job.time_unit),
        "job_url": reverse("admin:coordinators_coordinatorjob_change", args=[quote(job.pk)]),
        "timeline_url": reverse("admin:coordinators_coordinatorjob_timeline", args=[quote(job.pk)]),
        "page": page,
        "rows": rows,
        "ticks": _ticks(t0, span),
        "t0": t0,
        "t1": t1,
        "median_wait": human_duration(statistics.median(waits)) if waits else "-",
        "median_run": human_duration(statistics.median(runs)) if runs else "-",
        "longest_run": human_duration(max(runs)) if runs else "-",
    }
    return TemplateResponse(request, "admin/coordinators/coordinatorjob/gantt.html", context)
