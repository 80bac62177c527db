"""Operator views of operations: what runs, how far along (a progress bar), what failed and why; cancel."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from kernel.admin_kit import ReadOnlyAdmin, StatusHistoryAdmin, badge, pretty
from kernel.display import TRACK, status_colour, time_html
from kernel.permissions import is_admin
from operations.choices import JOB_UNFINISHED, JobStatus
from operations.counts import skipped_jobs
from operations.models import OPERATION_JOB_KIND, OPERATION_KIND, Operation
from operations.services import cancel_operation

FAILED_SHOWN = 200


@admin.register(Operation)
class OperationAdmin(StatusHistoryAdmin, ReadOnlyAdmin):
    """Operations with their progress; a running one can be cancelled; History lists its and its jobs' status changes."""

    history_kind, history_children = OPERATION_KIND, OPERATION_JOB_KIND

    list_display = ["id", "type", "target", "status_badge", "started_by", "started", "finished", "progress_bar"]
    nav_sidebar = False  # the columns and the filters take the width at 1,280 px; the app list is one click away
    list_filter = ["status", "type", "created_at"]
    search_fields = ["=id", "type", "target", "started_by__username"]
    ordering = ["-created_at"]
    list_select_related = ["started_by"]
    list_per_page = 50
    show_full_result_count = False
    actions = ["cancel_operations"]
    fields = ["id", "type", "target", "status_badge", "started_by", "created_at", "finished_at", "progress_bar",
              "failures", "skipped", "arg_pretty", "result_pretty"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Operation]:
        """Job counts come with the rows (one query for the page); users who are not job admins see their own."""
        queryset = super().get_queryset(request).annotate(
            jobs_total=Count("jobs"),
            jobs_failed=Count("jobs", filter=Q(jobs__status=JobStatus.FAILED)),
            jobs_unfinished=Count("jobs", filter=Q(jobs__status__in=sorted(JOB_UNFINISHED))),
        )
        return queryset if is_admin(request.user) else queryset.filter(started_by_id=request.user.pk)

    @admin.display(description="status", ordering="status")
    def status_badge(self, operation: Operation) -> str:
        """The status as a coloured label."""
        return badge(operation.status)

    @admin.display(description="started", ordering="created_at")
    def started(self, operation: Operation) -> str:
        return time_html(operation.created_at, stacked=True)

    @admin.display(description="finished", ordering="finished_at")
    def finished(self, operation: Operation) -> str:
        return time_html(operation.finished_at, stacked=True)

    @admin.display(description="progress")
    def progress_bar(self, operation: Operation) -> str:
        """Jobs done out of all, as a bar (failed jobs in red) with the figures."""
        total = getattr(operation, "jobs_total", None)
        if total is None:
            total = operation.jobs.count()
            failed = operation.jobs.filter(status=JobStatus.FAILED).count()
            unfinished = operation.jobs.filter(status__in=sorted(JOB_UNFINISHED)).count()
        else:
            failed, unfinished = operation.jobs_failed, operation.jobs_unfinished  # type: ignore[attr-defined]
        done = total - unfinished
        width = 100
        good = round(width * (done - failed) / total) if total else 0
        bad = round(width * failed / total) if total else 0
        return format_html(
            '<span style="display:inline-block;width:{}px;height:10px;background:{};border-radius:3px;'
            'overflow:hidden;vertical-align:middle" title="{} of {} done, {} failed">'
            '<span style="display:inline-block;height:10px;width:{}px;background:{}"></span>'
            '<span style="display:inline-block;height:10px;width:{}px;background:{}"></span></span> '
            '<span class="nowrap">{}/{}{}</span>',
            width, TRACK, done, total, failed, good, status_colour("SUCCEEDED"), bad, status_colour("FAILED"),
            done, total, format_html(", {} failed", failed) if failed else "",
        )

    @admin.display(description="failed jobs")
    def failures(self, operation: Operation) -> str:
        """The failed jobs and why (the first few hundred)."""
        rows = list(operation.jobs.filter(status=JobStatus.FAILED).order_by("partition")
                    .values_list("partition", "error")[:FAILED_SHOWN])
        if not rows:
            return "none"
        return format_html("<table>{}</table>", format_html_join(
            "", "<tr><td><code>{}</code></td><td>{}</td></tr>", rows,
        ))

    @admin.display(description="skipped jobs")
    def skipped(self, operation: Operation) -> str:
        """The jobs whose status made the verb a no-op, and why (not failures; the first few hundred)."""
        rows = [(row["partition"], row["reason"]) for row in skipped_jobs(operation, limit=FAILED_SHOWN)]
        if not rows:
            return "none"
        return format_html("<table>{}</table>", format_html_join(
            "", "<tr><td><code>{}</code></td><td>{}</td></tr>", rows,
        ))

    @admin.display(description="argument")
    def arg_pretty(self, operation: Operation) -> str:
        """The operation's argument."""
        return pretty(operation.arg)

    @admin.display(description="result")
    def result_pretty(self, operation: Operation) -> str:
        """What the completion stored: counts, failures, the type's result."""
        return pretty(operation.result) if operation.result is not None else "(not finished)"

    @admin.action(description="Cancel selected running operations", permissions=["change"])
    def cancel_operations(self, request: HttpRequest, queryset: QuerySet[Operation]) -> None:
        """Cancel each selected running operation, reporting each refusal."""
        done, refused = 0, []
        for operation in queryset:
            if not (is_admin(request.user) or operation.started_by_id == request.user.pk):
                refused.append(f"operation {operation.pk}: not yours")
                continue
            try:
                cancel_operation(operation.pk)
                done += 1
            except ValueError as exc:
                refused.append(str(exc))
        if done:
            self.message_user(request, f"cancelled {done} operation(s)", messages.SUCCESS)
        for reason in refused[:20]:
            self.message_user(request, reason, messages.WARNING)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Staff may look at operations (their own; job admins at all)."""
        return bool(request.user.is_active and request.user.is_staff)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """The cancel action needs no model permission: it checks who started each operation."""
        return obj is None and self.has_view_permission(request)

    def has_module_permission(self, request: HttpRequest) -> bool:
        """Shown to staff."""
        return self.has_view_permission(request)


