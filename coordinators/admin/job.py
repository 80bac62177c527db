"""Coordinator jobs: a list with filters and search, a read-only page per job, bulk verbs, and links to its pages.

The job's own pages beyond the stock ones (grid, timeline, Gantt, bulk change) are functions
of the modules below this one, to which the admin passes itself. Nothing here edits a status:
every verb goes through `coordinators.services`, as the API and the CLI do, so permissions
and transition rules are checked in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join

from coordinators import services
from coordinators.admin import bulk, gantt, grid, timeline, verbs
from coordinators.admin.display import pending_words, render_status_history, status_history_table
from coordinators.admin.filters import JobStatusFilter
from coordinators.choices import ActionStatus
from coordinators.commands.ignore import IgnoreRefused
from coordinators.models import CoordinatorJob, SLARegistration, StatusChange
from kernel.admin_kit import (
    ReadOnlyAdmin,
    badge,
    pretty,
    remember_reader,
    shown,
)
from kernel.display import (
    exact_time,
    frequency_words,
    short_id_html,
    status_label,
    status_words,
    time_html,
)
from kernel.object_verbs import ObjectVerb, ObjectVerbsAdmin
from kernel.permissions import JobPermissionDenied, can_modify
from operations.admin_verbs import SelectionVerbs


def _verb_action(verb: str, description: str) -> Callable[..., None]:
    """A bulk action that queues `verb` for each selected job through the services, reporting per job."""

    @admin.action(description=description, permissions=["change"])
    def act(modeladmin: CoordinatorJobAdmin, request: HttpRequest, queryset: QuerySet[CoordinatorJob]) -> None:
        modeladmin.run_verb(request, queryset, verb)

    act.__name__ = f"{verb}_jobs"
    return act


@admin.register(CoordinatorJob)
class CoordinatorJobAdmin(ObjectVerbsAdmin, SelectionVerbs, ReadOnlyAdmin):
    """Coordinator jobs: filters, search, a summary of their actions and SLA, a timeline; control by bulk actions."""

    bulk_kind, noun = "coordinator", "job"
    refusals = (JobPermissionDenied, IgnoreRefused)

    list_display = [
        "short_id", "app_name", "owner", "status_column", "every", "actions_link", "next_due", "links",
    ]
    nav_sidebar = False  # ten columns and the filters: the app list is one click away (Home)
    list_display_links = ["short_id"]
    list_filter = [
        JobStatusFilter, ("owner", admin.RelatedOnlyFieldListFilter), "app_name", "created_at", "start_time", "end_time",
    ]
    search_fields = ["=id", "app_name", "owner__username"]
    ordering = ["-created_at"]
    list_select_related = ["owner"]
    list_per_page = 50
    show_full_result_count = False
    actions = [
        _verb_action("suspend", "Suspend selected jobs"),
        _verb_action("resume", "Resume selected jobs"),
        _verb_action("kill", "Kill selected jobs"),
        _verb_action("start", "Start selected PREP jobs"),
        _verb_action("ignore", "Ignore selected FAILED or KILLED jobs"),
        "change_jobs",
        "rerun_failed_actions",
    ]
    fieldsets = [
        (None, {"fields": ["id", "app_name", "owner", "acl", "status_text", "pending_text", "app_path"]}),
        ("Time", {"fields": ["frequency", "time_unit", "timezone", "start_time", "end_time", "pause_time"]}),
        ("Controls", {"fields": ["timeout", "concurrency", "execution", "throttle"]}),
        ("Progress", {"fields": [
            "last_action_number", "next_materialize_at", "done_materializing", "created_at", "last_modified",
        ]}),
        ("Actions", {"fields": ["actions_summary", "sla_summary"]}),
        ("Status history", {"classes": ["collapse"], "fields": ["status_history"]}),
        ("Definition", {"classes": ["collapse"], "fields": ["configuration_pretty", "definition_pretty"]}),
    ]
    readonly_fields = [
        "id", "app_name", "owner", "acl", "status_text", "pending_text", "app_path", "frequency", "time_unit", "timezone",
        "start_time", "end_time", "pause_time", "timeout", "concurrency", "execution", "throttle",
        "last_action_number", "next_materialize_at", "done_materializing", "created_at", "last_modified",
        "actions_summary", "sla_summary", "configuration_pretty", "definition_pretty", "status_history",
    ]

    def object_verbs(self, request: HttpRequest, obj: CoordinatorJob, params: Mapping[str, str]) -> list[ObjectVerb]:
        """The page's buttons (coordinators.admin.verbs): what the job's status allows, through the services."""
        return verbs.job_verbs(obj, request.user)

    def verb_forbidden(self, request: HttpRequest, obj: CoordinatorJob) -> str:
        return "" if can_modify(request.user, obj) else f"you may not act on coordinator job {obj.pk}"

    def apply_verb(self, request: HttpRequest, object_id: str, verb: str) -> None:
        """One job's verb through the coordinator services, as the API and CLI call them."""
        if verb == "start":
            services.start_job(object_id, actor=request.user)
        elif verb == "ignore":
            services.ignore_job(object_id, actor=request.user)
        else:
            services.control(object_id, verb, actor=request.user)

    @admin.action(description="Change end time, concurrency or pause time of selected jobs", permissions=["change"])
    def change_jobs(self, request: HttpRequest, queryset: QuerySet[CoordinatorJob]) -> HttpResponse | None:
        return bulk.change_jobs(self, request, queryset)

    @admin.action(description="Rerun failed, killed and timed-out actions of selected jobs", permissions=["change"])
    def rerun_failed_actions(self, request: HttpRequest, queryset: QuerySet[CoordinatorJob]) -> None:
        bulk.rerun_failed(self, request, queryset)

    @admin.display(description="id", ordering="id")
    def short_id(self, obj: CoordinatorJob) -> str:
        return short_id_html(obj.pk)

    @admin.display(description="status", ordering="status")
    def status_column(self, obj: CoordinatorJob) -> str:
        return status_label(obj.status, pending=obj.pending)

    @admin.display(description="pending")
    def pending_text(self, obj: CoordinatorJob) -> str:
        return pending_words(obj.pending)

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> CoordinatorJob | None:
        """The job, noting what the reader is shown of its secret properties (owner and job admins: everything)."""
        job = super().get_object(request, object_id, from_field)
        return remember_reader(job, request.user, job.owner_id, job.configuration) if job is not None else None

    @admin.display(description="status changes")
    def status_history(self, obj: CoordinatorJob) -> str:
        return status_history_table(obj.pk, StatusChange.Kind.JOB, shown(obj, obj.configuration))

    def history_view(self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None) -> Any:
        """The job's status changes (its actions' are on their pages)."""
        return render_status_history(self, request, object_id, StatusChange.Kind.JOB)

    @admin.display(description="status")
    def status_text(self, obj: CoordinatorJob) -> str:
        return format_html('{} <span class="quiet">{}</span>', status_words(obj.status), obj.status)

    @admin.display(description="every", ordering="frequency")
    def every(self, obj: CoordinatorJob) -> str:
        # Start and end in the title: the list has no room for two more dates at 1,280 px.
        return format_html(
            '<span title="{} {}, from {} to {} ({})">{}</span>', obj.frequency, obj.time_unit.lower(),
            exact_time(obj.start_time), exact_time(obj.end_time), obj.timezone,
            frequency_words(obj.frequency, obj.time_unit),
        )

    @admin.display(description="actions", ordering="last_action_number")
    def actions_link(self, obj: CoordinatorJob) -> str:
        url = reverse("admin:coordinators_coordinatoraction_changelist") + f"?job={obj.pk}"
        return format_html('<a href="{}" title="its actions">{}</a>', url, obj.last_action_number)

    @admin.display(description="next nominal", ordering="next_materialize_at")
    def next_due(self, obj: CoordinatorJob) -> str:
        return "done" if obj.done_materializing else time_html(obj.next_materialize_at)

    @admin.display(description="created", ordering="created_at")
    def created(self, obj: CoordinatorJob) -> str:
        return time_html(obj.created_at)

    @admin.display(description="")
    def links(self, obj: CoordinatorJob) -> str:
        timeline = reverse("admin:coordinators_coordinatorjob_timeline", args=[quote(obj.pk)])
        gantt = reverse("admin:coordinators_coordinatorjob_gantt", args=[quote(obj.pk)])
        return format_html('<a href="{}">timeline</a> · <a href="{}">Gantt</a>', timeline, gantt)

    @admin.display(description="actions")
    def actions_summary(self, obj: CoordinatorJob) -> str:
        # One GROUP BY over the (job, status, nominal_time) index, however many actions there are.
        counts = dict(obj.actions.order_by().values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
        base = reverse("admin:coordinators_coordinatoraction_changelist") + f"?job={obj.pk}"
        timeline = reverse("admin:coordinators_coordinatorjob_timeline", args=[quote(obj.pk)])
        parts = format_html_join(
            " ", '<a href="{}&status__exact={}">{} {}</a>',
            ((base, status, status, counts[status]) for status in ActionStatus.values if status in counts),
        )
        gantt = reverse("admin:coordinators_coordinatorjob_gantt", args=[quote(obj.pk)])
        return format_html(
            '{} action(s): {}<br><a href="{}">list</a> · <a href="{}">timeline</a> · <a href="{}">Gantt</a>',
            sum(counts.values()), parts or "none yet", base, timeline, gantt,
        )

    @admin.display(description="SLA")
    def sla_summary(self, obj: CoordinatorJob) -> str:
        counts = dict(
            SLARegistration.objects.filter(job=obj).order_by().values_list("sla_status").annotate(n=Count("pk"))
            .values_list("sla_status", "n")
        )
        if not counts:
            return "no SLA"
        records = reverse("admin:coordinators_slaregistration_changelist") + f"?job={obj.pk}"
        events = reverse("admin:coordinators_slaevent_changelist") + f"?job={obj.pk}"
        parts = format_html_join(" ", "{} {}", ((badge(status), n) for status, n in sorted(counts.items())))
        return format_html('{}<br><a href="{}">SLA records</a> · <a href="{}">SLA events</a>', parts, records, events)

    @admin.display(description="configuration")
    def configuration_pretty(self, obj: CoordinatorJob) -> str:
        return pretty(shown(obj, obj.configuration).properties(obj.configuration))

    @admin.display(description="definition")
    def definition_pretty(self, obj: CoordinatorJob) -> str:
        return format_html("<pre style='margin:0'>{}</pre>", shown(obj, obj.configuration).text(obj.definition))

    def get_urls(self) -> list[URLPattern]:
        timeline = path(
            "<path:object_id>/timeline/", self.admin_site.admin_view(self.timeline_view),
            name="coordinators_coordinatorjob_timeline",
        )
        grid = path("grid/", self.admin_site.admin_view(self.grid_view), name="coordinators_coordinatorjob_grid")
        gantt = path(
            "<path:object_id>/gantt/", self.admin_site.admin_view(self.gantt_view),
            name="coordinators_coordinatorjob_gantt",
        )
        return [grid, timeline, gantt, *super().get_urls()]

    def grid_view(self, request: HttpRequest) -> HttpResponse:
        """Jobs by their recent nominal times, coloured by action status (coordinators.admin.grid)."""
        return grid.grid_view(self, request)

    def gantt_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """A job's actions on a time axis: wait and run (coordinators.admin.gantt)."""
        return gantt.gantt_view(self, request, object_id)

    def timeline_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """A job's actions by nominal time with their status and SLA, a page at a time (coordinators.admin.timeline)."""
        return timeline.timeline_view(self, request, object_id)
