"""A coordinator job's Gantt view: its actions alive during a range, on that range's one axis; how long each waited and ran.

Each action is drawn as up to three stretches: waiting (created → submitted), launching
(submitted → started) and running (started → ended), as far as it went, cut at the axis'
ends. The range is chosen with the same controls as the grid's (coordinators.admin.timegrid):
wall-clock time here, the axis is exactly the range shown. A range with more than
GANTT_MAX_ROWS actions shows the newest of them and says so (narrow the range for the others).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime

from django.contrib.admin import ModelAdmin
from django.contrib.admin.utils import quote, unquote
from django.db.models import Count, Max, Min, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from coordinators.admin import timegrid
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
from kernel.time_axis import Window, frequency_step

GANTT_MAX_ROWS = 200


@dataclass(frozen=True)
class Segment:
    """A stretch of an action's life on the time axis: kind (wait, launch, run), position and width in %."""

    kind: str
    left: float
    width: float
    colour: str
    title: str
    cut: str = ""  # "cut-left", "cut-right": the stretch goes on beyond the axis


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


def _track_html(segments: list[Segment], nominal: datetime, nominal_left: float | None) -> SafeString:
    """A row's bars and its nominal-time mark (rendered here: a page draws up to GANTT_MAX_ROWS rows of them)."""
    bars = format_html_join(
        "", '<span class="seg {}" title="{}" style="left:{}%;width:{}%{}"></span>',
        ((f"{s.kind} {s.cut}".strip(), s.title, s.left, s.width, f";background:{s.colour}" if s.colour else "")
         for s in segments),
    )
    if nominal_left is None:
        return bars
    return format_html('{}<span class="nominal" title="nominal time {}" style="left:{}%"></span>',
                       bars, exact_time(nominal), nominal_left)


def _overlapping(window: Window) -> Q:
    """Actions alive during the window: created before its end, and not ended before its start."""
    still = Q(ended_at__isnull=True) & (
        Q(status__in=sorted({*ACTION_PENDING, *ACTION_ACTIVE})) | Q(last_modified__gte=window.begin)
    )
    return Q(created_time__lt=window.end) & (Q(ended_at__gte=window.begin) | still)


def _job_span(job: CoordinatorJob, now: datetime) -> tuple[datetime | None, datetime | None]:
    """The first moment any action of the job existed and the last it did anything (now while one is alive)."""
    found = job.actions.aggregate(
        first=Min("created_time"), created=Max("created_time"), ended=Max("ended_at"),
        alive=Count("pk", filter=Q(status__in=sorted({*ACTION_PENDING, *ACTION_ACTIVE}))),
    )
    if found["first"] is None:
        return None, None
    if found["alive"]:
        return found["first"], now
    return found["first"], max(moment for moment in (found["created"], found["ended"]) if moment is not None)


def gantt_view(modeladmin: ModelAdmin[CoordinatorJob], request: HttpRequest, object_id: str) -> HttpResponse:
    """A job's actions alive during the range shown, on that range's one axis: how long each waited and ran."""
    job = get_object_or_404(CoordinatorJob.objects.select_related("owner"), pk=unquote(object_id))
    check_view(modeladmin, request, job)
    now = timezone.now()
    earliest, latest = _job_span(job, now)
    default = timegrid.default_window(latest, [frequency_step(job.frequency, job.time_unit)], now)
    window, error = timegrid.window_or_error(request.GET, default)
    alive = job.actions.filter(_overlapping(window))
    total = alive.count()
    items = sorted(alive.only(
        "id", "job_id", "number", "nominal_time", "status", "created_time", "submitted_at", "started_at", "ended_at",
        "last_modified", "run_count", "missing_dependencies",
    ).order_by("-number")[:GANTT_MAX_ROWS], key=lambda a: a.number)
    t0, t1 = window.begin, window.end
    span = (t1 - t0).total_seconds()

    def pct(moment: datetime) -> float:
        return round(min(100.0, max(0.0, 100 * (moment - t0).total_seconds() / span)), 3)

    ticks = timegrid.axis_ticks(t0, t1)
    action_url = url_maker("admin:coordinators_coordinatoraction_change")
    rows, waits, runs = [], [], []
    words = {"wait": "waited", "launch": "launching", "run": "ran"}
    for action in items:
        spans = _segments(action, now)
        durations = {kind: end - begin for kind, begin, end in spans}
        segments = [
            Segment(kind=kind, left=pct(begin), width=max(0.0, pct(end) - pct(begin)),
                    colour=status_colour(action.status) if kind == "run" else "",
                    title=f"#{action.number} {words[kind]} {human_duration(end - begin)}: "
                          f"{exact_time(begin)} → {exact_time(end)}",
                    cut=("cut-left " if begin < t0 else "") + ("cut-right" if end > t1 else ""))
            for kind, begin, end in spans if end >= t0 and begin <= t1
        ]
        if "wait" in durations:
            waits.append(durations["wait"].total_seconds())
        if "run" in durations and action.ended_at is not None:
            runs.append(durations["run"].total_seconds())
        missing = action.missing_dependencies if action.status == ActionStatus.WAITING else []
        rows.append({
            "action": action, "url": f"{action_url(action.pk)}#tries", "label": status_label(action.status),
            "track": _track_html(segments, action.nominal_time, pct(action.nominal_time) if t0 <= action.nominal_time <= t1 else None),
            "wait": human_duration(durations.get("wait")),
            "run": human_duration(durations.get("run")) if "run" in durations else "-",
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
        "range": timegrid.range_controls(window, None, earliest, latest, {}, error=error),
        "rows": rows,
        "total": total,
        "capped": total > len(rows),
        "ticks": ticks,
        "tick_lines": timegrid.tick_lines(ticks),
        "t0": t0,
        "t1": t1,
        "median_wait": human_duration(statistics.median(waits)) if waits else "-",
        "median_run": human_duration(statistics.median(runs)) if runs else "-",
        "longest_run": human_duration(max(runs)) if runs else "-",
    }
    return TemplateResponse(
        request, "admin/coordinators/coordinatorjob/gantt.html", context, status=400 if error else 200,
    )
