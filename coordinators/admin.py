"""Operator views of coordinators: jobs, actions, a timeline per job, SLA records and events.

Nothing here edits a status: every page is read-only, and state changes go through the bulk
actions, which call the same domain actions as the API and the CLI (`coordinators.services`),
so permissions and transition rules are checked in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC
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
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from coordinators import admin_views
from coordinators.choices import ACTION_PENDING, ActionStatus, IllegalTransition, JobStatus
from coordinators.models import (
    CoordinatorAction,
    CoordinatorJob,
    SLAEvent,
    SLARegistration,
    StatusChange,
)
from coordinators.sla.notify import retry_now
from kernel.admin_kit import (
    MAX_MESSAGES,
    ReadOnlyAdmin,
    StatusWordsFilter,
    badge,
    change_link,
    pretty,
    remember_reader,
    shown,
)
from kernel.display import (
    compact_time,
    frequency_words,
    human_duration,
    short_id_html,
    status_colour,
    status_label,
    status_words,
    time_html,
)
from kernel.permissions import JobPermissionDenied
from kernel.secrets import Masker, masker, masker_for
from operations.bulk import VERBS as BULK_VERBS
from operations.bulk import admin_threshold, start_for_selection

TIMELINE_PAGE = 100

#: The most status changes a page shows (the newest); the API pages through all of them.
HISTORY_ROWS = 200


def status_history_table(object_id: str, kind: str, secrets: Masker | None = None) -> str:
    """A job's or action's status changes, oldest first: from, to, when, by, why (secrets masked in why)."""
    secrets = secrets if secrets is not None else masker()
    changes = list(StatusChange.objects.filter(object_id=object_id, kind=kind).order_by("-at", "-id")[:HISTORY_ROWS])
    if not changes:
        return "no status change recorded"
    rows = format_html_join(
        "", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        ((change.at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S"), change.from_status or "-", change.to_status,
          change.by or "-", secrets.text(change.reason)[:300] or "-") for change in reversed(changes)),
    )
    return format_html(
        "<table><thead><tr><th>at (UTC)</th><th>from</th><th>to</th><th>by</th><th>why</th></tr></thead>"
        "<tbody>{}</tbody></table>", rows,
    )


def render_status_history(modeladmin: admin.ModelAdmin[Any], request: HttpRequest, object_id: str, kind: str) -> Any:
    """The admin's "History" page of a job or action: its status changes instead of the (empty) form log."""
    from django.contrib.admin.utils import unquote
    from django.http import Http404

    obj = modeladmin.get_object(request, unquote(object_id))
    if obj is None:
        raise Http404(f"no {modeladmin.opts.verbose_name} {object_id!r}")
    if not modeladmin.has_view_or_change_permission(request, obj):
        raise PermissionDenied
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": f"Status history: {obj.pk}", "subtitle": None, "object": obj, "opts": modeladmin.opts,
        "table": status_history_table(obj.pk, kind, shown(obj)), "change_url": reverse(
            f"admin:{modeladmin.opts.app_label}_{modeladmin.opts.model_name}_change", args=[quote(obj.pk)]),
    }
    return TemplateResponse(request, "admin/coordinators/status_history.html", context)


class JobStatusFilter(StatusWordsFilter):
    """Coordinator jobs by status, in words."""

    statuses = tuple(JobStatus.values)


class ActionStatusFilter(StatusWordsFilter):
    """Coordinator actions by status, in words."""

    statuses = tuple(ActionStatus.values)


class LateFilter(admin.SimpleListFilter):
    """Actions whose nominal time passed and which have not started yet (WAITING or READY)."""

    title = "late"
    parameter_name = "late"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]) -> list[tuple[str, str]]:
        return [("yes", "due, not started")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(status__in=sorted(ACTION_PENDING), nominal_time__lte=timezone.now())
        return queryset


def pending_words(pending: bool) -> str:
    """A pending flag in words: a red cross reads as an error, and "no" is the normal state."""
    return "yes: a command on it is in flight" if pending else "no"


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
        from coordinators.commands.ignore import IgnoreRefused
        from coordinators.services import control, ignore_job, start_job

        if verb in BULK_VERBS and queryset.count() > admin_threshold():
            self.run_as_operation(request, queryset, verb)
            return

        done: list[str] = []
        refused: list[str] = []
        skipped: list[str] = []
        for job_id in queryset.order_by("pk").values_list("pk", flat=True):
            try:
                if verb == "start":
                    start_job(job_id, actor=request.user)
                elif verb == "ignore":
                    ignore_job(job_id, actor=request.user)
                else:
                    control(job_id, verb, actor=request.user)
                done.append(job_id)
            except IllegalTransition as exc:
                if verb not in BULK_VERBS:
                    refused.append(f"{job_id}: {exc}")
                else:  # the status makes the verb a no-op: skipped, as bulk operations and Oozie's API skip it
                    skipped.append(f"{job_id} ({str(exc).rpartition(': ')[2]})")
            except (JobPermissionDenied, IgnoreRefused, CoordinatorJob.DoesNotExist) as exc:
                refused.append(f"{job_id}: {exc}")
        if done:
            shown = ", ".join(done[:MAX_MESSAGES]) + (f" and {len(done) - MAX_MESSAGES} more" if len(done) > MAX_MESSAGES else "")
            self.message_user(request, f"{verb} queued for {len(done)} job(s): {shown}", messages.SUCCESS)
        if skipped:
            more = f" and {len(skipped) - MAX_MESSAGES} more" if len(skipped) > MAX_MESSAGES else ""
            self.message_user(request, f"{verb} skipped for {len(skipped)} job(s) whose status makes it a no-op: "
                              f"{', '.join(skipped[:MAX_MESSAGES])}{more}", messages.INFO)
        for reason in refused[:MAX_MESSAGES]:
            self.message_user(request, f"{verb} refused for {reason}", messages.WARNING)
        if len(refused) > MAX_MESSAGES:
            self.message_user(request, f"... and {len(refused) - MAX_MESSAGES} more refused", messages.WARNING)

    @admin.action(description="Change end time, concurrency or pause time of selected jobs", permissions=["change"])
    def change_jobs(self, request: HttpRequest, queryset: QuerySet[CoordinatorJob]) -> HttpResponse | None:
        return admin_views.change_jobs(self, request, queryset)

    @admin.action(description="Rerun failed, killed and timed-out actions of selected jobs", permissions=["change"])
    def rerun_failed_actions(self, request: HttpRequest, queryset: QuerySet[CoordinatorJob]) -> None:
        admin_views.rerun_failed(self, request, queryset)

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
            compact_time(obj.start_time), compact_time(obj.end_time), obj.timezone,
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
        """Jobs by their recent nominal times, coloured by action status (coordinators.admin_views)."""
        return admin_views.grid_view(self, request)

    def gantt_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """A job's actions on a time axis: wait and run (coordinators.admin_views)."""
        return admin_views.gantt_view(self, request, object_id)

    def timeline_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """A job's actions by nominal time with their status and SLA, a page at a time."""
        from django.contrib.admin.utils import unquote

        job = get_object_or_404(CoordinatorJob.objects.select_related("owner"), pk=unquote(object_id))
        if not self.has_view_permission(request, job):
            raise PermissionDenied
        secrets = masker_for(request.user, job.owner_id, job.configuration)
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
             "colour": status_colour(s)}
            for s in ActionStatus.values if s in counts
        ]
        rows = []
        for action in page:
            record = getattr(action, "sla_registration", None)
            run_time = action.ended_at - action.started_at if action.started_at and action.ended_at else None
            rows.append({
                "action": action, "badge": badge(action.status),
                "run_time": human_duration(run_time) if run_time is not None else None, "sla": record,
                "sla_badge": badge(record.sla_status) if record is not None else "",
                "url": reverse("admin:coordinators_coordinatoraction_change", args=[quote(action.pk)]),
                "error": secrets.text(action.error_message),
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
        "short_id", "job_name", "nominal", "status_column", "waits_for", "ran", "run_time", "sla_status",
    ]
    list_display_links = ["short_id"]
    nav_sidebar = False  # ten columns and the filters: the app list is one click away (Home)
    list_filter = [ActionStatusFilter, LateFilter, JobFilter, "nominal_time"]
    search_fields = ["=id", "=job__id", "^job__app_name"]
    ordering = ["job", "number"]
    list_select_related = ["job", "sla_registration"]
    list_per_page = 100
    show_full_result_count = False
    fieldsets = [
        (None, {"fields": ["id", "job_link", "number", "nominal_time", "status_text", "pending_text", "external_id"]}),
        ("Times", {"fields": ["waiting_text", "created_time", "next_check_at", "check_count", "timeout_at", "ready_at",
                              "submitted_at", "started_at", "ended_at", "run_count", "last_modified"]}),
        ("Inputs and outputs", {"fields": ["missing_pretty", "data_in_pretty", "data_out_pretty", "run_conf_pretty"]}),
        ("SLA", {"fields": ["sla_link", "sla_pretty"]}),
        ("Errors", {"fields": ["error_text"]}),
        ("Runs", {"fields": ["runs_table"]}),
        ("Status history", {"fields": ["status_history"]}),
    ]
    readonly_fields = [
        "id", "job_link", "number", "nominal_time", "status_text", "pending_text", "external_id", "created_time",
        "next_check_at", "check_count", "timeout_at", "started_at", "ended_at", "run_count", "last_modified",
        "missing_pretty", "data_in_pretty", "data_out_pretty", "run_conf_pretty", "sla_link", "sla_pretty",
        "error_text", "runs_table", "waiting_text", "ready_at", "submitted_at", "status_history",
    ]

    actions = ["rerun_actions", "ignore_actions"]

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

    @admin.action(description="Ignore selected FAILED, KILLED or TIMEDOUT actions", permissions=["change"])
    def ignore_actions(self, request: HttpRequest, queryset: QuerySet[CoordinatorAction]) -> None:
        """Ignore the selected actions, job by job, through the same domain action as the APIs and the CLI."""
        from coordinators.services import ignore_actions

        by_job: dict[str, list[int]] = {}
        for job_id, number in queryset.order_by("job_id", "number").values_list("job_id", "number"):
            by_job.setdefault(job_id, []).append(number)
        for job_id, numbers in by_job.items():
            try:
                chosen = ignore_actions(job_id, actor=request.user, ignore_type="action", scope=",".join(map(str, numbers)))
            except (JobPermissionDenied, ValueError, CoordinatorJob.DoesNotExist) as exc:
                self.message_user(request, f"Ignore refused for {job_id}: {exc}", messages.WARNING)
            else:
                self.message_user(request, f"Ignore queued for {len(chosen)} action(s) of {job_id}", messages.SUCCESS)

    @admin.display(description="job", ordering="job")
    def job_link(self, obj: CoordinatorAction) -> str:
        return change_link(obj.job, f"{obj.job.app_name} ({obj.job_id})")

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: CoordinatorAction) -> str:
        return badge(obj.status)

    @admin.display(description="id", ordering="id")
    def short_id(self, obj: CoordinatorAction) -> str:
        return short_id_html(obj.pk)

    @admin.display(description="job", ordering="job__app_name")
    def job_name(self, obj: CoordinatorAction) -> str:
        url = reverse("admin:coordinators_coordinatorjob_change", args=[quote(obj.job_id)])
        return format_html('<a href="{}" title="{}">{}</a>', url, obj.job_id, obj.job.app_name)

    @admin.display(description="nominal time", ordering="nominal_time")
    def nominal(self, obj: CoordinatorAction) -> str:
        return time_html(obj.nominal_time)

    @admin.display(description="status", ordering="status")
    def status_column(self, obj: CoordinatorAction) -> str:
        label = status_label(obj.status, pending=obj.pending)
        if obj.run_count:
            return format_html('{} <span class="quiet" title="reruns so far">rerun {}×</span>', label, obj.run_count)
        return label

    def get_list_display(self, request: HttpRequest) -> Any:
        """One job's actions (`?job=`) need no job column: its room goes to the times."""
        columns = list(super().get_list_display(request))
        return [c for c in columns if c != "job_name"] if request.GET.get("job") else columns

    @admin.display(description="started → ended", ordering="started_at")
    def ran(self, obj: CoordinatorAction) -> str:
        if obj.started_at is None and obj.ended_at is None:
            return "-"
        return format_html("{} → {}", time_html(obj.started_at, day=obj.nominal_time),
                           time_html(obj.ended_at, day=obj.nominal_time) if obj.ended_at else "…")

    @admin.display(description="pending")
    def pending_text(self, obj: CoordinatorAction) -> str:
        return pending_words(obj.pending)

    @admin.display(description="waits for")
    def waits_for(self, obj: CoordinatorAction) -> str:
        """WAITING: `2 missing · 10:01` (the next check); the whole story in the title."""
        info = obj.waiting()
        if info is None:
            return ""
        when = info["next_check_at"]
        short = f"{info['missing']} missing" + (f" · {when.astimezone(UTC):%H:%M}" if when is not None else "")
        return format_html('<span title="{}">{}</span>', obj.waiting_text(), short)

    @admin.display(description="waiting for")
    def waiting_text(self, obj: CoordinatorAction) -> str:
        return self._shown(obj).text(obj.waiting_text()) or "-"

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> CoordinatorAction | None:
        """The action, noting what the reader is shown of its job's secret properties (owner and job admins: everything)."""
        action = super().get_object(request, object_id, from_field)
        if action is None:
            return None
        return remember_reader(action, request.user, action.job.owner_id, action.job.configuration, action.run_conf)

    def _shown(self, obj: CoordinatorAction) -> Masker:
        return shown(obj, obj.job.configuration, obj.run_conf)

    @admin.display(description="status changes")
    def status_history(self, obj: CoordinatorAction) -> str:
        return status_history_table(obj.pk, StatusChange.Kind.ACTION, self._shown(obj))

    def history_view(self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None) -> Any:
        """The action's status changes (objects here change through commands, not the admin's forms)."""
        return render_status_history(self, request, object_id, StatusChange.Kind.ACTION)

    @admin.display(description="status")
    def status_text(self, obj: CoordinatorAction) -> str:
        return format_html('{} <span class="quiet">{}</span>', status_words(obj.status), obj.status)

    @admin.display(description="created", ordering="created_time")
    def created(self, obj: CoordinatorAction) -> str:
        return time_html(obj.created_time)

    @admin.display(description="started", ordering="started_at")
    def started(self, obj: CoordinatorAction) -> str:
        return time_html(obj.started_at, day=obj.nominal_time)

    @admin.display(description="ended", ordering="ended_at")
    def ended(self, obj: CoordinatorAction) -> str:
        return time_html(obj.ended_at, day=obj.nominal_time)

    @admin.display(description="reruns", ordering="run_count")
    def reruns(self, obj: CoordinatorAction) -> int:
        return obj.run_count

    @admin.display(description="run time")
    def run_time(self, obj: CoordinatorAction) -> str:
        if obj.started_at is None:
            return "-"
        if obj.ended_at is None:
            return format_html('<span title="running since {}">{}…</span>', compact_time(obj.started_at, seconds=True),
                               human_duration(timezone.now() - obj.started_at))
        return human_duration(obj.ended_at - obj.started_at)

    @admin.display(description="SLA")
    def sla_status(self, obj: CoordinatorAction) -> str:
        record = getattr(obj, "sla_registration", None)
        return status_label(record.sla_status) if record is not None else "-"

    @admin.display(description="SLA record")
    def sla_link(self, obj: CoordinatorAction) -> str:
        record = SLARegistration.objects.filter(pk=obj.pk).first()
        if record is None:
            return "none"
        return format_html("{} {} {}", change_link(record, "SLA record"), badge(record.sla_status), record.event_status)

    @admin.display(description="missing dependencies")
    def missing_pretty(self, obj: CoordinatorAction) -> str:
        return pretty(self._shown(obj).data(obj.missing_dependencies))

    @admin.display(description="data in")
    def data_in_pretty(self, obj: CoordinatorAction) -> str:
        return pretty(self._shown(obj).data(obj.data_in))

    @admin.display(description="data out")
    def data_out_pretty(self, obj: CoordinatorAction) -> str:
        return pretty(self._shown(obj).data(obj.data_out))

    @admin.display(description="run configuration")
    def run_conf_pretty(self, obj: CoordinatorAction) -> str:
        return pretty(self._shown(obj).data(obj.run_conf))

    @admin.display(description="error message")
    def error_text(self, obj: CoordinatorAction) -> str:
        return self._shown(obj).text(obj.error_message) or "-"

    @admin.display(description="workflow runs")
    def runs_table(self, obj: CoordinatorAction) -> str:
        """Every launch of the action (a workflow job each, reruns included): status, times, task ids, error."""
        from workflows.models import WorkflowJob

        runs = WorkflowJob.objects.filter(coord_action_id=obj.pk).prefetch_related("nodes").order_by("run", "created_at")
        secrets = self._shown(obj)
        rows = format_html_join(
            "", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (run.run, run.id, badge(run.status), run.started_at or "-", run.ended_at or "-",
                 ", ".join(task_id for node in run.nodes.all() for task_id in node.task_ids) or "-",
                 secrets.text(run.error_message)[:300] or "-")
                for run in runs
            ),
        )
        if not rows:
            return "none yet"
        return format_html(
            "<table><tr><th>run</th><th>workflow job</th><th>status</th><th>started</th><th>ended</th>"
            "<th>Celery task ids</th><th>error</th></tr>{}</table>", rows,
        )

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
