"""Operator pages of coordinators beyond the stock lists: the grid across jobs, a job's Gantt view, bulk change and rerun.

The grid reads one page of jobs and then the last N actions of every job of the page in one
query: action numbers run 1, 2, 3 ... without gaps per job, so "the last N" is a range of the
(job, number) unique index, however many actions a job has. The Gantt view reads one page of
a job's actions. Bulk verbs call `coordinators.services`, as the API and the CLI do.
"""

from __future__ import annotations

import operator
import statistics
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import reduce
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone

from coordinators.choices import (
    ACTION_ACTIVE,
    ACTION_PENDING,
    ActionStatus,
    IllegalTransition,
    JobStatus,
)
from coordinators.models import CoordinatorAction, CoordinatorJob
from kernel.display import (
    compact_time,
    frequency_words,
    human_duration,
    number_ranges,
    short_job_id,
    status_colour,
    status_label,
    status_words,
)
from kernel.permissions import JobPermissionDenied

if TYPE_CHECKING:
    from coordinators.admin import CoordinatorJobAdmin

GRID_JOBS_PER_PAGE = 50
GRID_COLUMNS = 25
GRID_MAX_COLUMNS = 60
GANTT_PAGE = 50
#: The actions "rerun failed" reruns (Oozie's -failed covers FAILED and KILLED; a timed-out action failed too).
RERUN_FAILED_STATUSES = (ActionStatus.FAILED, ActionStatus.KILLED, ActionStatus.TIMEDOUT)
BULK_CHANGE_SHOWN = 100


def _int(raw: str | None, default: int, low: int, high: int) -> int:
    """A whole number from the query string, clamped to [low, high]; the default when absent or not a number."""
    try:
        value = int(raw) if raw not in (None, "") else default
    except ValueError:
        value = default
    return max(low, min(high, value))


def _check_view(modeladmin: CoordinatorJobAdmin, request: HttpRequest, obj: Any = None) -> None:
    """Jobs and their actions must both be viewable; a staff member without those permissions gets a 403."""
    from django.contrib.admin import site

    action_admin = site._registry.get(CoordinatorAction)
    if not modeladmin.has_view_permission(request, obj) or (
        action_admin is not None and not action_admin.has_view_permission(request)
    ):
        raise PermissionDenied


def _url_maker(name: str) -> Any:
    """`reverse(name, [pk])` for many primary keys, reversing once (a grid page links up to 3,000 actions)."""
    marker = "__pk__"
    template = reverse(name, args=[marker])
    return lambda pk: template.replace(marker, quote(pk), 1)


# --- grid ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GridCell:
    """One slot of a grid row: an action (url, colour, title) or an empty slot (no action with that number)."""

    number: int
    url: str = ""
    colour: str = ""
    title: str = ""
    status: str = ""


def grid_view(modeladmin: CoordinatorJobAdmin, request: HttpRequest) -> HttpResponse:
    """Coordinator jobs, a page at a time, each with its last N actions coloured by status (Airflow's grid)."""
    _check_view(modeladmin, request)
    columns = _int(request.GET.get("n"), GRID_COLUMNS, 5, GRID_MAX_COLUMNS)
    back = _int(request.GET.get("back"), 0, 0, 10**6)
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

    action_url = _url_maker("admin:coordinators_coordinatoraction_change")
    job_url = _url_maker("admin:coordinators_coordinatorjob_change")
    gantt_url = _url_maker("admin:coordinators_coordinatorjob_gantt")
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
                title=f"{job.app_name} #{number} · {compact_time(nominal)} · {status_words(action_status)}{ran}",
            ))
        last = next((found[(job.pk, n)] for n in range(high, high - columns, -1) if (job.pk, n) in found), None)
        grid_rows.append({
            "job": job, "cells": cells, "url": job_url(job.pk), "gantt_url": gantt_url(job.pk),
            "short_id": short_job_id(job.pk), "label": status_label(job.status, pending=job.pending),
            "every": frequency_words(job.frequency, job.time_unit),
            "last_nominal": compact_time(last[3]) if last else "-",
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


# --- Gantt -----------------------------------------------------------------------------------


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


def gantt_view(modeladmin: CoordinatorJobAdmin, request: HttpRequest, object_id: str) -> HttpResponse:
    """One page of a job's actions on a time axis: how long each waited (inputs, throttle) and ran."""
    job = get_object_or_404(CoordinatorJob.objects.select_related("owner"), pk=unquote(object_id))
    _check_view(modeladmin, request, job)
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

    action_url = _url_maker("admin:coordinators_coordinatoraction_change")
    rows, waits, runs = [], [], []
    words = {"wait": "waited", "launch": "launching", "run": "ran"}
    for action in items:
        durations = {kind: end - begin for kind, begin, end in spans[action.pk]}
        segments = [
            Segment(kind=kind, left=pct(begin), width=max(0.0, pct(end) - pct(begin)),
                    colour=status_colour(action.status) if kind == "run" else "",
                    title=f"#{action.number} {words[kind]} {human_duration(end - begin)}: "
                          f"{compact_time(begin, seconds=True)} → {compact_time(end, seconds=True)}")
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


# --- bulk verbs from the job list ------------------------------------------------------------


def _report(modeladmin: CoordinatorJobAdmin, request: HttpRequest, verb: str, done: list[str], refused: list[str]) -> None:
    """One success message naming what was queued, one warning per refusal (the first MAX_MESSAGES)."""
    from kernel.admin_kit import MAX_MESSAGES

    if done:
        more = f" and {len(done) - MAX_MESSAGES} more" if len(done) > MAX_MESSAGES else ""
        modeladmin.message_user(
            request, f"{verb} queued for {len(done)} job(s): {', '.join(done[:MAX_MESSAGES])}{more}", messages.SUCCESS,
        )
    for reason in refused[:MAX_MESSAGES]:
        modeladmin.message_user(request, f"{verb} refused for {reason}", messages.WARNING)
    if len(refused) > MAX_MESSAGES:
        modeladmin.message_user(request, f"... and {len(refused) - MAX_MESSAGES} more refused", messages.WARNING)


def rerun_failed(modeladmin: CoordinatorJobAdmin, request: HttpRequest, queryset: QuerySet[CoordinatorJob]) -> None:
    """Rerun the FAILED, KILLED and TIMEDOUT actions of each selected job through `services.rerun_job`."""
    from coordinators.commands.rerun import MAX_RERUN_ACTIONS
    from coordinators.services import rerun_job

    job_ids = list(queryset.order_by("pk").values_list("pk", flat=True))
    failed: dict[str, list[int]] = defaultdict(list)
    for job_id, number in CoordinatorAction.objects.filter(
        job_id__in=job_ids, status__in=RERUN_FAILED_STATUSES
    ).values_list("job_id", "number"):
        failed[job_id].append(number)
    done: list[str] = []
    refused: list[str] = []
    for job_id in job_ids:
        numbers = sorted(failed.get(job_id, []))
        if not numbers:
            refused.append(f"{job_id}: no failed, killed or timed-out action")
            continue
        try:
            for start in range(0, len(numbers), MAX_RERUN_ACTIONS):
                rerun_job(job_id, actor=request.user, rerun_type="action",
                          scope=number_ranges(numbers[start:start + MAX_RERUN_ACTIONS]))
        except (JobPermissionDenied, IllegalTransition, ValueError, CoordinatorJob.DoesNotExist) as exc:
            refused.append(f"{job_id}: {exc}")
        else:
            done.append(f"{job_id} ({len(numbers)} action{'s' if len(numbers) != 1 else ''})")
    _report(modeladmin, request, "Rerun of failed actions", done, refused)


class ChangeForm(forms.Form):
    """Oozie's `-change` options for many jobs at once: end time, concurrency, pause time (set or cleared)."""

    endtime = forms.CharField(
        required=False, max_length=40, label="End time", help_text="UTC, as Oozie writes it: 2026-12-01T05:00Z",
    )
    concurrency = forms.IntegerField(required=False, label="Concurrency", min_value=-1, max_value=2**31 - 1)
    pausetime = forms.CharField(required=False, max_length=40, label="Pause time", help_text="2026-12-01T05:00Z")
    clear_pausetime = forms.BooleanField(required=False, label="Clear the pause time")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("pausetime") and data.get("clear_pausetime"):
            raise forms.ValidationError("Set a pause time or clear it, not both.")
        if not (data.get("endtime") or data.get("concurrency") is not None or data.get("pausetime")
                or data.get("clear_pausetime")):
            raise forms.ValidationError("Nothing to change: give an end time, a concurrency or a pause time.")
        return data

    def value(self) -> str:
        """Oozie's `endtime=...;concurrency=...;pausetime=...` for the filled fields."""
        data = self.cleaned_data
        parts = []
        if data.get("endtime"):
            parts.append(f"endtime={data['endtime'].strip()}")
        if data.get("concurrency") is not None:
            parts.append(f"concurrency={data['concurrency']}")
        if data.get("pausetime"):
            parts.append(f"pausetime={data['pausetime'].strip()}")
        elif data.get("clear_pausetime"):
            parts.append("pausetime=")
        return ";".join(parts)


def change_jobs(
    modeladmin: CoordinatorJobAdmin, request: HttpRequest, queryset: QuerySet[CoordinatorJob]
) -> HttpResponse | None:
    """Ask for the values on an intermediate page, then queue `services.change_job` for each selected job."""
    from coordinators.services import change_job

    form = ChangeForm(request.POST if request.POST.get("apply") == "yes" else None)
    if form.is_bound and form.is_valid():
        value = form.value()
        done: list[str] = []
        refused: list[str] = []
        for job_id in queryset.order_by("pk").values_list("pk", flat=True):
            try:
                change_job(job_id, value, actor=request.user)
            except (JobPermissionDenied, IllegalTransition, ValueError, CoordinatorJob.DoesNotExist) as exc:
                refused.append(f"{job_id}: {exc}")
            else:
                done.append(job_id)
        _report(modeladmin, request, f"Change {value}", done, refused)
        return None
    jobs = list(queryset.select_related(None).order_by("pk").only(
        "id", "app_name", "status", "end_time", "concurrency", "pause_time",
    ))
    opts = CoordinatorJob._meta
    context = {
        **modeladmin.admin_site.each_context(request),
        "opts": opts,
        "title": f"Change {len(jobs)} coordinator job{'s' if len(jobs) != 1 else ''}",
        "form": form,
        "jobs": [
            {"job": job, "short_id": short_job_id(job.pk), "label": status_label(job.status)}
            for job in jobs[:BULK_CHANGE_SHOWN]
        ],
        "more": max(0, len(jobs) - BULK_CHANGE_SHOWN),
        "ids": [job.pk for job in jobs],
        "button": f"Change {len(jobs)} job{'s' if len(jobs) != 1 else ''}",
        "action": request.POST.get("action", "change_jobs"),
        "checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "changelist_url": reverse("admin:coordinators_coordinatorjob_changelist"),
        "media": modeladmin.media,
    }
    return TemplateResponse(request, "admin/coordinators/coordinatorjob/bulk_change.html", context)
