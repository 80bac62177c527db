"""The list filters of the coordinator pages: statuses in words, late actions, one job (never a list of every job)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from coordinators.choices import ACTION_PENDING, ActionStatus, JobStatus
from coordinators.models import CoordinatorJob
from kernel.admin_kit import StatusWordsFilter
from kernel.lookups import in_constants


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
            return queryset.filter(in_constants("status", ACTION_PENDING), nominal_time__lte=timezone.now())
        return queryset


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


class SLAJobFilter(JobFilter):
    """SLA records and events of one job."""
