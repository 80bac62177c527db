"""Coordinator actions: a list by job and number with filters (status, late, job), a read-only page per action.

An action's page shows its times, inputs and outputs, SLA, every workflow run it launched and
its status history, secrets masked for the reader. Rerunning and ignoring go through
`coordinators.services`, job by job, as the API and the CLI do.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import quote
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from coordinators import services
from coordinators.admin import verbs
from coordinators.admin.display import pending_words, render_status_history, status_history_table
from coordinators.admin.filters import ActionStatusFilter, JobFilter, LateFilter
from coordinators.choices import IllegalTransition
from coordinators.models import CoordinatorAction, CoordinatorJob, SLARegistration, StatusChange
from kernel.admin_kit import (
    CappedCountPaginator,
    ReadOnlyAdmin,
    badge,
    change_link,
    pretty,
    remember_reader,
    shown,
)
from kernel.admin_tries import tries_table
from kernel.display import (
    exact_time,
    human_duration,
    short_id_html,
    status_label,
    status_words,
    time_html,
)
from kernel.models import TaskTry
from kernel.object_verbs import ObjectVerb, ObjectVerbsAdmin
from kernel.permissions import JobPermissionDenied, can_modify
from kernel.secrets import Masker
from workflows.models import WorkflowJob


@admin.register(CoordinatorAction)
class CoordinatorActionAdmin(ObjectVerbsAdmin, ReadOnlyAdmin):
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
    paginator = CappedCountPaginator  # millions of ended actions: the count stops at 10,000
    fieldsets = [
        (None, {"fields": ["id", "job_link", "number", "nominal_time", "status_text", "pending_text", "external_id"]}),
        ("Times", {"fields": ["waiting_text", "created_time", "next_check_at", "check_count", "timeout_at", "ready_at",
                              "submitted_at", "started_at", "ended_at", "run_count", "last_modified"]}),
        ("Inputs and outputs", {"fields": ["missing_pretty", "data_in_pretty", "data_out_pretty", "run_conf_pretty"]}),
        ("SLA", {"fields": ["sla_link", "sla_pretty"]}),
        ("Errors", {"fields": ["error_text"]}),
        ("Runs", {"fields": ["runs_table"]}),
        ("Tries", {"fields": ["tries_table"]}),
        ("Status history", {"fields": ["status_history"]}),
    ]
    readonly_fields = [
        "id", "job_link", "number", "nominal_time", "status_text", "pending_text", "external_id", "created_time",
        "next_check_at", "check_count", "timeout_at", "started_at", "ended_at", "run_count", "last_modified",
        "missing_pretty", "data_in_pretty", "data_out_pretty", "run_conf_pretty", "sla_link", "sla_pretty",
        "error_text", "runs_table", "waiting_text", "ready_at", "submitted_at", "status_history", "tries_table",
    ]

    actions = ["rerun_actions", "ignore_actions"]

    def object_verbs(self, request: HttpRequest, obj: CoordinatorAction, params: Mapping[str, str]) -> list[ObjectVerb]:
        """The page's buttons (coordinators.admin.verbs): rerun and ignore, as the action's status allows."""
        return verbs.action_verbs(obj, request.user)

    def verb_forbidden(self, request: HttpRequest, obj: CoordinatorAction) -> str:
        return "" if can_modify(request.user, obj.job) else f"you may not act on coordinator job {obj.job_id}"

    @admin.action(description="Rerun selected actions (outputs cleaned)", permissions=["change"])
    def rerun_actions(self, request: HttpRequest, queryset: QuerySet[CoordinatorAction]) -> None:
        """Rerun the selected actions, job by job, through the same domain action as the APIs and the CLI."""
        by_job: dict[str, list[int]] = {}
        for job_id, number in queryset.order_by("job_id", "number").values_list("job_id", "number"):
            by_job.setdefault(job_id, []).append(number)
        for job_id, numbers in by_job.items():
            try:
                chosen = services.rerun_job(job_id, actor=request.user, rerun_type="action", scope=",".join(map(str, numbers)))
            except (IllegalTransition, JobPermissionDenied, ValueError, CoordinatorJob.DoesNotExist) as exc:
                self.message_user(request, f"Rerun refused for {job_id}: {exc}", messages.WARNING)
            else:
                self.message_user(request, f"Rerun queued for {len(chosen)} action(s) of {job_id}", messages.SUCCESS)

    @admin.action(description="Ignore selected FAILED, KILLED or TIMEDOUT actions", permissions=["change"])
    def ignore_actions(self, request: HttpRequest, queryset: QuerySet[CoordinatorAction]) -> None:
        """Ignore the selected actions, job by job, through the same domain action as the APIs and the CLI."""
        by_job: dict[str, list[int]] = {}
        for job_id, number in queryset.order_by("job_id", "number").values_list("job_id", "number"):
            by_job.setdefault(job_id, []).append(number)
        for job_id, numbers in by_job.items():
            try:
                chosen = services.ignore_actions(job_id, actor=request.user, ignore_type="action", scope=",".join(map(str, numbers)))
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
        # The zone is in the title (and the same on every row): the list keeps one line at 1,280 px.
        return time_html(obj.nominal_time, zone=False)

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
            return format_html('<span title="running since {}">{}…</span>', exact_time(obj.started_at),
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

    @admin.display(description="tries, newest first")
    def tries_table(self, obj: CoordinatorAction) -> str:
        """Every try of every node of every run: a rerun, a retry and a relaunch each add one; earlier ones stay."""
        return tries_table(TaskTry.objects.filter(action_id=obj.pk), self._shown(obj))

    @admin.display(description="evaluated sla:info")
    def sla_pretty(self, obj: CoordinatorAction) -> str:
        return pretty(obj.sla) if obj.sla is not None else "-"
