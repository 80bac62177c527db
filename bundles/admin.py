"""Operator views of bundles: a list with filters and bulk verbs, and a read-only page per bundle.

A bundle's page shows its fields, each coordinator with its status and progress, and a shared
timeline of the coordinators' actions (rows: coordinators; nominal time across, on the one time
axis of the coordinator grid, with its range controls). Nothing here edits a status: the bulk verbs call `bundles.services`
as the operator, so permissions (owner, ACL, job admins) and status rules are checked where the
API and the CLI check them. The page costs a fixed number of queries however many coordinators
the bundle has: one for the coordinators, one for their progress, three for the timeline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.contrib.admin.views.main import ChangeList
from django.db.models import Count, Max, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from bundles import services
from bundles.admin_verbs import bundle_verbs
from bundles.choices import ACTION_TERMINAL, BUNDLE_PREP
from bundles.models import BUNDLE_KIND, BundleAction, BundleJob
from coordinators.admin import timegrid
from coordinators.choices import ActionStatus
from coordinators.models import CoordinatorAction, CoordinatorJob
from kernel.admin_kit import ReadOnlyAdmin, StatusHistoryAdmin, pretty, remember_reader, shown
from kernel.display import exact_time, status_colour, status_label
from kernel.object_verbs import ObjectVerb, ObjectVerbsAdmin
from kernel.permissions import JobPermissionDenied, can_modify
from kernel.secrets import Masker, masker
from kernel.time_axis import Axis, frequency_step
from operations.admin_verbs import SelectionVerbs


def status_badge(status: str) -> str:
    """A status as the one coloured label of every page (bundle, coordinator job or action status)."""
    return status_label(status)


def short_id(job_id: str) -> str:
    """`0000012-B` for `0000012-261122093000123-B`: the sequence and the kind fit a narrow column."""
    parts = job_id.split("-")
    return f"{parts[0]}-{parts[-1]}" if len(parts) >= 3 else job_id


def when(value: datetime | None) -> str:
    """A time as every page writes it (`2026-11-27 14:03:05 UTC`, kernel.display.exact_time), or '-'."""
    return exact_time(value)


def two_lines(value: datetime) -> str:
    """A time for a narrow column: the date, then the time and zone, never broken inside either."""
    day, _, clock = when(value).partition(" ")
    return format_html('<span class="nowrap">{}</span> <span class="nowrap">{}</span>', day, clock)


# --- what the bundle page shows -----------------------------------------------------------


@dataclass(frozen=True)
class Progress:
    """A coordinator job's actions: how many in each status, and the newest nominal time."""

    counts: dict[str, int] = field(default_factory=dict)
    last_nominal: datetime | None = None


def coordinator_progress(job_ids: Iterable[str]) -> dict[str, Progress]:
    """Progress of each coordinator job, in one GROUP BY over the (job, status, nominal_time) index."""
    counts: dict[str, dict[str, int]] = {}
    last: dict[str, datetime] = {}
    rows = (
        CoordinatorAction.objects.filter(job_id__in=list(job_ids)).order_by().values_list("job_id", "status")
        .annotate(n=Count("pk"), newest=Max("nominal_time"))
    )
    for job_id, status, n, newest in rows:
        counts.setdefault(job_id, {})[status] = n
        if newest is not None and (job_id not in last or newest > last[job_id]):
            last[job_id] = newest
    return {
        job_id: Progress({s: by_status[s] for s in ActionStatus.values if s in by_status}, last.get(job_id))
        for job_id, by_status in counts.items()
    }


@dataclass(frozen=True)
class Timeline:
    """The shared timeline: one axis (the range asked for), one row of squares per coordinator, the range controls."""

    axis: Axis
    ticks: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    statuses: list[dict[str, str]]
    range: timegrid.RangeControls
    tick_lines: str
    error: str = ""


def shared_timeline(actions: list[BundleAction], params: Mapping[str, str], now: datetime) -> Timeline:
    """The coordinators' actions on one time axis (coordinators.admin.timegrid): nominal time across, a row each.

    Three queries: the jobs' frequencies and first and last nominal times, and their actions
    counted by bucket and status.
    """
    job_ids = [a.coord_job_id for a in actions if a.coord_job_id]
    jobs = {pk: (frequency, unit) for pk, frequency, unit in
            CoordinatorJob.objects.filter(pk__in=job_ids).values_list("pk", "frequency", "time_unit")}
    earliest, latest = timegrid.bounds(job_ids)
    default = timegrid.default_window(latest, [frequency_step(*freq) for freq in jobs.values()], now)
    window, error = timegrid.window_or_error(params, default)
    axis = timegrid.grid_axis(window)
    buckets = timegrid.action_buckets(job_ids, axis)
    links = timegrid.Links()
    seen: set[str] = set()
    rows = []
    for bundle_action in actions:
        job_id = bundle_action.coord_job_id or ""
        squares = timegrid.action_squares(bundle_action.coord_name, job_id, buckets.get(job_id, {}), axis, links)
        seen.update(square.status for square in squares)
        rows.append({"name": bundle_action.coord_name, "cells": timegrid.squares_html(squares, axis, "action"),
                     "empty": not squares})
    controls = timegrid.range_controls(window, axis, earliest, latest, {}, anchor="bundle-timeline", error=error)
    ticks = timegrid.axis_ticks(axis.start, axis.end)
    return Timeline(axis, ticks, rows, timegrid.legend(seen), controls, timegrid.tick_lines(ticks), error)


def bundle_summary(bundle: BundleJob) -> list[tuple[str, str]]:
    """The bundle's fields as (label, HTML) pairs: status, pending, owner, ACL, paths, kick-off, pause, end, times."""
    def at(value: datetime | None, empty: str = "-") -> str:
        return when(value) if value is not None else empty

    pending = "yes: a verb is being carried out" if bundle.pending else "no"
    return [
        ("Status", status_badge(bundle.status)),
        ("Pending", format_html('<span class="value-pending">{}</span>', pending)),
        ("Owner", format_html("{}", bundle.owner.get_username())),
        ("Kick-off time", format_html("{}", at(bundle.kick_off_time, "none: at once"))),
        ("Pause time", format_html("{}", at(bundle.pause_time))),
        ("End time", format_html("{}", at(bundle.end_time, "none: each coordinator's own"))),
        ("Started", format_html("{}", at(bundle.started_at))),
        ("Ended", format_html("{}", at(bundle.ended_at))),
        ("Created", format_html("{}", at(bundle.created_at))),
        ("ACL", format_html("{}", bundle.acl or "-")),
        ("External id", format_html("{}", bundle.external_id or "-")),
        ("App path", format_html("{}", bundle.app_path or "-")),
    ]


def coordinator_rows(actions: list[BundleAction], secrets: Masker | None = None) -> list[dict[str, Any]]:
    """One row per coordinator: its bundle action, its job's links and progress (one query for all), its error masked."""
    secrets = secrets if secrets is not None else masker()
    progress = coordinator_progress(a.coord_job_id for a in actions if a.coord_job_id)
    action_list = reverse("admin:coordinators_coordinatoraction_changelist")
    rows = []
    for action in actions:
        job_id = action.coord_job_id
        done = progress.get(job_id or "", Progress())
        rows.append({
            "action": action,
            "badge": status_badge(action.status),
            "job_id": job_id or action.planned_coord_id,
            "short_id": short_id(job_id or action.planned_coord_id),
            "job_url": reverse("admin:coordinators_coordinatorjob_change", args=[quote(job_id)]) if job_id else "",
            "timeline_url": (
                reverse("admin:coordinators_coordinatorjob_timeline", args=[quote(job_id)]) if job_id else ""
            ),
            "by_status": [
                {"status": s, "count": n, "colour": status_colour(s),
                 "url": f"{action_list}?job={quote(job_id or '')}&status__exact={s}"}
                for s, n in done.counts.items()
            ],
            "last_nominal": done.last_nominal,
            "error": secrets.text(action.error_message),
        })
    return rows


# --- the admin ----------------------------------------------------------------------------


def _verb_action(verb: str, description: str) -> Callable[..., None]:
    """A bulk action that calls the domain action for `verb` on each selected bundle, reporting per bundle."""

    @admin.action(description=description, permissions=["change"])
    def act(modeladmin: BundleJobAdmin, request: HttpRequest, queryset: QuerySet[BundleJob]) -> None:
        modeladmin.run_verb(request, queryset, verb)

    act.__name__ = f"{verb}_bundles"
    return act


def _count_actions(**conditions: Any) -> Coalesce:
    """How many of a bundle's actions (its coordinators) meet the conditions, as a subquery on the outer bundle."""
    matching = (
        BundleAction.objects.filter(bundle=OuterRef("pk"), **conditions).order_by().values("bundle")
        .annotate(n=Count("pk")).values("n")
    )
    return Coalesce(Subquery(matching), 0)


class BundleChangeList(ChangeList):
    """The list leaves out the XML and JSON columns it never shows."""

    def get_results(self, request: HttpRequest) -> None:
        self.queryset = self.queryset.defer("definition", "applications", "configuration")
        super().get_results(request)


@admin.register(BundleJob)
class BundleJobAdmin(ObjectVerbsAdmin, StatusHistoryAdmin, SelectionVerbs, ReadOnlyAdmin):
    """Bundles: filters, search, coordinators done/total; a page with coordinators and a shared timeline."""

    history_kind = BUNDLE_KIND  # History: its status changes (its coordinators' are on their pages)

    bulk_kind, noun = "bundle", "bundle"
    refusals = (JobPermissionDenied,)

    list_display = [
        "short_id", "app_name", "status_column", "kick_off", "coordinators_done", "created",
    ]
    list_display_links = ["short_id"]
    list_filter = [
        "status", ("owner", admin.RelatedOnlyFieldListFilter), "app_name", "created_at", "kick_off_time",
    ]
    search_fields = ["^id", "app_name", "owner__username"]
    ordering = ["-created_at"]
    list_select_related = ["owner"]
    list_per_page = 50
    show_full_result_count = False
    actions = [
        _verb_action("start", "Start selected PREP bundles"),
        _verb_action("suspend", "Suspend selected bundles"),
        _verb_action("resume", "Resume selected bundles"),
        _verb_action("kill", "Kill selected bundles"),
    ]
    # The fields are shown as a compact summary (bundle_summary) above the coordinators and their
    # timeline; the form keeps only what is long: the properties and the XML, folded.
    fieldsets = [("Definition", {"classes": ["collapse"], "fields": ["configuration_pretty", "definition_pretty"]})]
    readonly_fields = ["configuration_pretty", "definition_pretty"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[BundleJob]:
        """Bundles with their owner and how many of their coordinators ended.

        The counts are correlated subqueries, not a join: the list's count and its filters'
        choices leave them out, and only the rows shown (or sorted) compute them.
        """
        return super().get_queryset(request).select_related("owner").annotate(
            coordinators_total=_count_actions(),
            coordinators_ended=_count_actions(status__in=sorted(ACTION_TERMINAL)),
        )

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return BundleChangeList

    def object_verbs(self, request: HttpRequest, obj: BundleJob, params: Mapping[str, str]) -> list[ObjectVerb]:
        """The page's buttons (bundles.admin_verbs), through the services."""
        return bundle_verbs(obj, request.user)

    def verb_forbidden(self, request: HttpRequest, obj: BundleJob) -> str:
        return "" if can_modify(request.user, obj) else f"you may not act on bundle job {obj.pk}"

    def apply_verb(self, request: HttpRequest, object_id: str, verb: str) -> None:
        """One bundle's verb through the bundle services, as the API and CLI call them."""
        if verb == "start":
            services.start_bundle(object_id, actor=request.user)
        else:
            services.control_bundle(object_id, verb, actor=request.user)

    # --- list columns

    @admin.display(description="id", ordering="id")
    def short_id(self, obj: BundleJob) -> str:
        # The sequence alone: every row is a bundle, and the column must leave room at 1,280 px.
        return format_html('<span title="{}">{}</span>', obj.pk, obj.pk.split("-")[0])

    @admin.display(description="status", ordering="status")
    def status_column(self, obj: BundleJob) -> str:
        if obj.pending:
            return format_html('{} <span title="a verb is being carried out">…</span>', status_badge(obj.status))
        return status_badge(obj.status)

    @admin.display(description="kick-off", ordering="kick_off_time")
    def kick_off(self, obj: BundleJob) -> str:
        return two_lines(obj.kick_off_time) if obj.kick_off_time else "at once"

    @admin.display(description="coordinators done", ordering="coordinators_ended")
    def coordinators_done(self, obj: BundleJob) -> str:
        total = getattr(obj, "coordinators_total", 0)
        if not total:
            return "not started" if obj.status in BUNDLE_PREP else "-"
        return f"{getattr(obj, 'coordinators_ended', 0)}/{total}"

    @admin.display(description="created", ordering="created_at")
    def created(self, obj: BundleJob) -> str:
        return two_lines(obj.created_at)

    # --- the page

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> BundleJob | None:
        """The bundle, noting what the reader is shown of its secret properties (owner and job admins: everything)."""
        bundle = super().get_object(request, object_id, from_field)
        return remember_reader(bundle, request.user, bundle.owner_id, bundle.configuration) if bundle is not None else None

    @admin.display(description="configuration")
    def configuration_pretty(self, obj: BundleJob) -> str:
        return pretty(shown(obj, obj.configuration).properties(obj.configuration))

    @admin.display(description="definition")
    def definition_pretty(self, obj: BundleJob) -> str:
        definition = shown(obj, obj.configuration).text(obj.definition)
        return format_html("<pre style='margin:0;white-space:pre-wrap'>{}</pre>", definition)

    def render_change_form(
        self, request: HttpRequest, context: dict[str, Any], add: bool = False, change: bool = False,
        form_url: str = "", obj: BundleJob | None = None,
    ) -> HttpResponse:
        """The read-only page: a summary of the fields, the coordinators and the shared timeline of their actions."""
        if obj is not None:
            actions = list(obj.actions.order_by("coord_name"))  # the mirrored status: no join to the jobs
            timeline = shared_timeline(actions, request.GET, timezone.now())
            context.update(
                summary=bundle_summary(obj), coordinators=coordinator_rows(actions, shown(obj, obj.configuration)),
                timeline=timeline, range_form_outside=True,
            )
            if timeline.error:  # a range that cannot be drawn: said on the page, the default one drawn
                response = super().render_change_form(request, context, add, change, form_url, obj)
                response.status_code = 400
                return response
        return super().render_change_form(request, context, add, change, form_url, obj)
