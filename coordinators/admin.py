"""Operator views of coordinators: jobs, actions, a timeline per job, SLA records and events.

Nothing here edits a status: every page is read-only, and state changes go through the bulk
actions, which call the same domain actions as the API and the CLI (`coordinators.services`),
so permissions and transition rules are checked in one place.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import quote
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join

from coordinators.choices import ActionStatus, IllegalTransition
from coordinators.models import CoordinatorAction, CoordinatorJob, SLAEvent, SLARegistration
from coordinators.permissions import JobPermissionDenied
from coordinators.sla.notify import retry_now
from operations.bulk import VERBS as BULK_VERBS
from operations.bulk import admin_threshold, start_for_selection

TIMELINE_PAGE = 100
MAX_MESSAGES = 20
STATUS_COLOURS = {
    "SUCCEEDED": "#2e7d32", "MET": "#2e7d32", "RUNNING": "#1565c0", "IN_PROCESS": "#1565c0",
    "SUBMITTED": "#1565c0", "READY": "#6a1b9a", "WAITING": "#757575", "NOT_STARTED": "#757575",
    "FAILED": "#c62828", "KILLED": "#c62828", "TIMEDOUT": "#c62828", "MISS": "#c62828",
    "SKIPPED": "#9e9e9e", "IGNORED": "#9e9e9e",
}


def badge(status: str) -> str:
    """A status as a coloured label."""
    colour = STATUS_COLOURS.get(status, "#455a64")
    return format_html(
        '<span style="color:#fff;background:{};padding:1px 6px;border-radius:3px;font-size:11px">{}</span>',
        colour, status or "-",
    )


def pretty(value: Any) -> str:
    """JSON in a <pre>."""
    return format_html("<pre style='margin:0'>{}</pre>", json.dumps(value, indent=2, sort_keys=True, default=str))


def change_link(obj: Any, text: str | None = None) -> str:
    """A link to an object's admin page (ids with '@' are quoted as the admin expects)."""
    meta = obj._meta
    url = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[quote(obj.pk)])
    return format_html('<a href="{}">{}</a>', url, text or obj.pk)


class ReadOnlyAdmin(admin.ModelAdmin[Any]):
    """No adding, deleting or editing: objects change through commands, never through a form."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Model-level "change" lets operators run bulk actions; an object page is view-only.
        return obj is None and super().has_change_permission(request)


# --- coordinator jobs ------------------------------------------------------------------------


def _verb_action(verb: str, description: str) -> Callable[..., None]:
    """A bulk action that queues `verb` for each selected job through the services, reporting per job."""

    @admin.action(description=description, permissions=["change"])
    def act(modeladmin: CoordinatorJobAdmin, request: HttpRequest, queryset: QuerySet[CoordinatorJob]) -> None:
        modeladmin.run_verb(request, queryset, verb)

    act.__name__ = f"{verb}_jobs"
    return act


@admin.register(CoordinatorJob)
class CoordinatorJobAdmin(ReadOnlyAdmin):
    """Coordinator jobs: filters, search, a summary of their actions and SLA, a timeline; control by bulk actions."""

    list_display = [
        "id", "app_name", "owner", "status_badge", "pending", "start_time", "end_time",
        "last_action_number", "next_materialize_at", "created_at", "links",
    ]
    list_filter = [
        "status", ("owner", admin.RelatedOnlyFieldListFilter), "app_name", "created_at", "start_time", "end_time",
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
    ]
    fieldsets = [
        (None, {"fields": ["id", "app_name", "owner", "acl", "status", "pending", "app_path"]}),
        ("Time", {"fields": ["frequency", "time_unit", "timezone", "start_time", "end_time", "pause_time"]}),
        ("Controls", {"fields": ["timeout", "concurrency", "execution", "throttle"]}),
        ("Progress", {"fields": [
            "last_action_number", "next_materialize_at", "done_materializing", "created_at", "last_modified",
        ]}),
        ("Actions", {"fields": ["actions_summary", "sla_summary"]}),
        ("Definition", {"classes": ["collapse"], "fields": ["configuration_pretty", "definition_pretty"]}),
    ]
    readonly_fields = [
        "id", "app_name", "owner", "acl", "status", "pending", "app_path", "frequency", "time_unit", "timezone",
        "start_time", "end_time", "pause_time", "timeout", "concurrency", "execution", "throttle",
        "last_action_number", "next_materialize_at", "done_materializing", "created_at", "last_modified",
        "actions_summary", "sla_summary", "configuration_pretty", "definition_pretty",
    ]

    def run_as_operation(self, request: HttpRequest, queryset: QuerySet[CoordinatorJob], verb: str) -> None:
        """Start the bulk operation for the selection; a conflicting one running is reported, nothing started."""
        from operations.services import OperationConflict

        try:
            operation = start_for_selection("coordinator", verb, queryset, user=request.user, filter_text="admin selection")
        except OperationConflict as exc:
            self.message_user(request, f"{verb} not started: {exc}", messages.ERROR)
            return
        link = reverse("admin:operations_operation_change", args=[operation.pk])
        self.message_user(request, format_html(
            '{} of {} job(s) runs as <a href="{}">operation {}</a>: its page shows the progress and what failed',
            verb, operation.remaining, link, operation.pk,
        ), messages.SUCCESS)

    def run_verb(self, request: HttpRequest, queryset: QuerySet[CoordinatorJob], verb: str) -> None:
        """Call the domain action for each job as the operator; refusals are reported, not raised.

        More than BULK_ADMIN_THRESHOLD jobs run as one operation (kill, suspend, resume): the
        page answers at once with a link to it, where its progress and failures show.
        """
        from coordinators.services import control, start_job

        if verb in BULK_VERBS and queryset.count() > admin_threshold():
            self.run_as_operation(request, queryset, verb)
            return

        done: list[str] = []
        refused: list[str] = []
        for job_id in queryset.order_by("pk").values_list("pk", flat=True):
            try:
                if verb == "start":
                    start_job(job_id, actor=request.user)
                else:
                    control(job_id, verb, actor=request.user)
                done.append(job_id)
            except (JobPermissionDenied, IllegalTransition, CoordinatorJob.DoesNotExist) as exc:
                refused.append(f"{job_id}: {exc}")
        if done:
            shown = ", ".join(done[:MAX_MESSAGES]) + (f" and {len(done) - MAX_MESSAGES} more" if len(done) > MAX_MESSAGES else "")
            self.message_user(request, f"{verb} queued for {len(done)} job(s): {shown}", messages.SUCCESS)
        for reason in refused[:MAX_MESSAGES]:
            self.message_user(request, f"{verb} refused for {reason}", messages.WARNING)
        if len(refused) > MAX_MESSAGES:
            self.message_user(request, f"... and {len(refused) - MAX_MESSAGES} more refused", messages.WARNING)

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: CoordinatorJob) -> str:
        return badge(obj.status)

    @admin.display(description="")
    def links(self, obj: CoordinatorJob) -> str:
        actions = reverse("admin:coordinators_coordinatoraction_changelist") + f"?job={obj.pk}"
        timeline = reverse("admin:coordinators_coordinatorjob_timeline", args=[quote(obj.pk)])
        return format_html('<a href="{}">actions</a> · <a href="{}">timeline</a>', actions, timeline)

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
        return format_html(
            '{} action(s): {}<br><a href="{}">list</a> · <a href="{}">timeline</a>',
            sum(counts.values()), parts or "none yet", base, timeline,
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
        return pretty(obj.configuration)

    @admin.display(description="definition")
    def definition_pretty(self, obj: CoordinatorJob) -> str:
        return format_html("<pre style='margin:0'>{}</pre>", obj.definition)

    def get_urls(self) -> list[URLPattern]:
        timeline = path(
            "<path:object_id>/timeline/", self.admin_site.admin_view(self.timeline_view),
            name="coordinators_coordinatorjob_timeline",
        )
        return [timeline, *super().get_urls()]

    def timeline_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """A job's actions by nominal time with their status and SLA, a page at a time."""
        from django.contrib.admin.utils import unquote

        job = get_object_or_404(CoordinatorJob.objects.select_related("owner"), pk=unquote(object_id))
        if not self.has_view_permission(request, job):
            raise PermissionDenied
        actions = job.actions.select_related("sla_registration").order_by("nominal_time", "number")
        status = request.GET.get("status", "")
        if status in ActionStatus.values:
            actions = actions.filter(status=status)
        newest_first = request.GET.get("order") == "desc"
        if newest_first:
            actions = actions.reverse()
        page = Paginator(actions, TIMELINE_PAGE).get_page(request.GET.get("p"))
        counts = dict(job.actions.order_by().values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
        total = sum(counts.values()) or 1
        summary = [
            {"status": s, "count": counts[s], "percent": round(100 * counts[s] / total, 1),
             "colour": STATUS_COLOURS.get(s, "#455a64")}
            for s in ActionStatus.values if s in counts
        ]
        rows = []
        for action in page:
            record = getattr(action, "sla_registration", None)
            run_time = action.ended_at - action.started_at if action.started_at and action.ended_at else None
            rows.append({
                "action": action, "badge": badge(action.status), "run_time": run_time, "sla": record,
                "sla_badge": badge(record.sla_status) if record is not None else "",
                "url": reverse("admin:coordinators_coordinatoraction_change", args=[quote(action.pk)]),
            })
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Timeline of {job.app_name}",
            "subtitle": job.pk,
            "job": job,
            "job_url": reverse("admin:coordinators_coordinatorjob_change", args=[quote(job.pk)]),
            "job_badge": badge(job.status),
            "page": page,
            "rows": rows,
            "summary": summary,
            "statuses": [s for s in ActionStatus.values if s in counts],
            "status": status,
            "newest_first": newest_first,
        }
        return TemplateResponse(request, "admin/coordinators/coordinatorjob/timeline.html", context)


# --- coordinator actions ---------------------------------------------------------------------


class JobFilter(admin.SimpleListFilter):
    """One job's actions: the chosen job and the most recently changed jobs (never a list of every job)."""

    title = "job"
    parameter_name = "job"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]) -> list[tuple[str, str]]:
        recent = list(CoordinatorJob.objects.order_by("-last_modified").values_list("pk", "app_name")[:10])
        chosen = self.value()
        if chosen and chosen not in {pk for pk, _ in recent}:
            recent.insert(0, (chosen, CoordinatorJob.objects.filter(pk=chosen).values_list("app_name", flat=True).first() or "?"))
        return [(pk, f"{name} ({pk})") for pk, name in recent]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset.filter(job_id=self.value()) if self.value() else queryset


@admin.register(CoordinatorAction)
class CoordinatorActionAdmin(ReadOnlyAdmin):
    """Coordinator actions by job and number, filtered by status and job; read-only."""

    list_display = [
        "id", "job_link", "number", "nominal_time", "status_badge", "created_time", "started_at", "ended_at",
        "run_count", "sla_status",
    ]
    list_filter = ["status", JobFilter, "nominal_time"]
    search_fields = ["=id", "=job__id", "^job__app_name"]
    ordering = ["job", "number"]
    list_select_related = ["job", "sla_registration"]
    list_per_page = 100
    show_full_result_count = False
    fieldsets = [
        (None, {"fields": ["id", "job_link", "number", "nominal_time", "status", "pending", "external_id"]}),
        ("Times", {"fields": ["created_time", "next_check_at", "check_count", "timeout_at", "started_at", "ended_at",
                              "run_count", "last_modified"]}),
        ("Inputs and outputs", {"fields": ["missing_pretty", "data_in_pretty", "data_out_pretty", "run_conf_pretty"]}),
        ("SLA", {"fields": ["sla_link", "sla_pretty"]}),
        ("Errors", {"fields": ["error_message"]}),
    ]
    readonly_fields = [
        "id", "job_link", "number", "nominal_time", "status", "pending", "external_id", "created_time",
        "next_check_at", "check_count", "timeout_at", "started_at", "ended_at", "run_count", "last_modified",
        "missing_pretty", "data_in_pretty", "data_out_pretty", "run_conf_pretty", "sla_link", "sla_pretty",
        "error_message",
    ]

    actions = ["rerun_actions"]

    @admin.action(description="Rerun selected actions (outputs cleaned)", permissions=["change"])
    def rerun_actions(self, request: HttpRequest, queryset: QuerySet[CoordinatorAction]) -> None:
        """Rerun the selected actions, job by job, through the same domain action as the APIs and the CLI."""
        from coordinators.services import rerun_job

        by_job: dict[str, list[int]] = {}
        for job_id, number in queryset.order_by("job_id", "number").values_list("job_id", "number"):
            by_job.setdefault(job_id, []).append(number)
        for job_id, numbers in by_job.items():
            try:
                chosen = rerun_job(job_id, actor=request.user, rerun_type="action", scope=",".join(map(str, numbers)))
            except (IllegalTransition, JobPermissionDenied, ValueError, CoordinatorJob.DoesNotExist) as exc:
                self.message_user(request, f"Rerun refused for {job_id}: {exc}", messages.WARNING)
            else:
                self.message_user(request, f"Rerun queued for {len(chosen)} action(s) of {job_id}", messages.SUCCESS)

    @admin.display(description="job", ordering="job")
    def job_link(self, obj: CoordinatorAction) -> str:
        return change_link(obj.job, f"{obj.job.app_name} ({obj.job_id})")

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: CoordinatorAction) -> str:
        return badge(obj.status)

    @admin.display(description="SLA")
    def sla_status(self, obj: CoordinatorAction) -> str:
        record = getattr(obj, "sla_registration", None)
        return badge(record.sla_status) if record is not None else "-"

    @admin.display(description="SLA record")
    def sla_link(self, obj: CoordinatorAction) -> str:
        record = SLARegistration.objects.filter(pk=obj.pk).first()
        if record is None:
            return "none"
        return format_html("{} {} {}", change_link(record, "SLA record"), badge(record.sla_status), record.event_status)

    @admin.display(description="missing dependencies")
    def missing_pretty(self, obj: CoordinatorAction) -> str:
        return pretty(obj.missing_dependencies)

    @admin.display(description="data in")
    def data_in_pretty(self, obj: CoordinatorAction) -> str:
        return pretty(obj.data_in)

    @admin.display(description="data out")
    def data_out_pretty(self, obj: CoordinatorAction) -> str:
        return pretty(obj.data_out)

    @admin.display(description="run configuration")
    def run_conf_pretty(self, obj: CoordinatorAction) -> str:
        return pretty(obj.run_conf)

    @admin.display(description="evaluated sla:info")
    def sla_pretty(self, obj: CoordinatorAction) -> str:
        return pretty(obj.sla) if obj.sla is not None else "-"


# --- SLA -------------------------------------------------------------------------------------


class SLAJobFilter(JobFilter):
    """SLA records and events of one job."""


class SLAEventInline(admin.TabularInline[SLAEvent, SLARegistration]):
    """The events of one SLA record (a handful per run)."""

    model = SLAEvent
    extra = 0
    can_delete = False
    readonly_fields = ["event_type", "run", "occurred_at", "recorded_at", "notify_status", "attempts", "last_error"]
    fields = list(readonly_fields)
    ordering = ["run", "id"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(SLARegistration)
class SLARegistrationAdmin(ReadOnlyAdmin):
    """SLA records: expected against actual start, end and duration, the SLA status and decided events."""

    list_display = [
        "action_link", "app_name", "nominal_time", "expected_start", "actual_start", "expected_end", "actual_end",
        "expected_duration", "actual_duration", "status_badge", "event_status", "job_status",
    ]
    list_filter = [
        "sla_status", "start_event", "duration_event", "end_event", "closed", "version", SLAJobFilter, "nominal_time",
    ]
    search_fields = ["=action__id", "=job__id", "app_name", "user"]
    ordering = ["-nominal_time"]
    list_per_page = 100
    show_full_result_count = False
    inlines = [SLAEventInline]
    readonly_fields = [
        "action_link", "job", "version", "app_name", "user", "nominal_time", "expected_start", "expected_end",
        "expected_duration", "alert_events", "alert_contact", "notification_msg", "upstream_apps", "sla_status",
        "start_event", "duration_event", "end_event", "job_status", "actual_start", "actual_end",
        "actual_duration", "run", "closed", "next_check_at", "created_at", "last_modified", "info_pretty",
    ]
    fields = list(readonly_fields)

    @admin.display(description="action", ordering="action")
    def action_link(self, obj: SLARegistration) -> str:
        url = reverse("admin:coordinators_coordinatoraction_change", args=[quote(obj.action_id)])
        return format_html('<a href="{}">{}</a>', url, obj.action_id)

    @admin.display(description="SLA status", ordering="sla_status")
    def status_badge(self, obj: SLARegistration) -> str:
        return badge(obj.sla_status)

    @admin.display(description="evaluated sla:info")
    def info_pretty(self, obj: SLARegistration) -> str:
        return pretty(obj.info)


@admin.register(SLAEvent)
class SLAEventAdmin(ReadOnlyAdmin):
    """SLA events as recorded and delivered; undelivered ones can be sent again."""

    list_display = [
        "recorded_at", "event_type", "record_link", "app_name", "occurred_at", "notify_status", "attempts",
        "short_error",
    ]
    list_filter = ["event_type", "notify_status", SLAJobFilter, "recorded_at"]
    search_fields = ["=registration__action__id", "=job__id", "registration__app_name"]
    ordering = ["-recorded_at", "-id"]
    list_select_related = ["registration"]
    list_per_page = 100
    show_full_result_count = False
    actions = ["retry_delivery"]
    readonly_fields = [
        "record_link", "job", "event_type", "run", "occurred_at", "recorded_at", "notify_status", "channels",
        "attempts", "next_attempt_at", "sent_at", "last_error", "payload_pretty",
    ]
    fields = list(readonly_fields)

    @admin.display(description="action", ordering="registration")
    def record_link(self, obj: SLAEvent) -> str:
        return change_link(obj.registration, obj.registration_id)

    @admin.display(description="app")
    def app_name(self, obj: SLAEvent) -> str:
        return obj.registration.app_name

    @admin.display(description="error")
    def short_error(self, obj: SLAEvent) -> str:
        lines = [line for line in obj.last_error.splitlines() if line.strip()]
        return lines[-1][:120] if lines else ""

    @admin.display(description="message")
    def payload_pretty(self, obj: SLAEvent) -> str:
        return pretty(obj.payload)

    @admin.action(description="Send selected events again (undelivered channels)", permissions=["change"])
    def retry_delivery(self, request: HttpRequest, queryset: QuerySet[SLAEvent]) -> None:
        count = retry_now(list(queryset.values_list("pk", flat=True)))
        skipped = queryset.count() - count
        self.message_user(request, f"{count} event(s) queued for delivery at the next run", messages.SUCCESS)
        if skipped:
            self.message_user(request, f"{skipped} event(s) had nothing left to send", messages.INFO)
