"""SLA records and events: expected against actual times per action, and the events as recorded and delivered.

Read-only, like every page here; an undelivered event can be sent again (`retry_now`).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import quote
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from coordinators.admin.filters import SLAJobFilter
from coordinators.models import SLAEvent, SLARegistration
from coordinators.sla.notify import retry_now
from kernel.admin_kit import ReadOnlyAdmin, badge, change_link, pretty


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
