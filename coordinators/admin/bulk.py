"""Bulk verbs of the coordinator job list beyond suspend, resume, kill, start, ignore: rerun failed actions, change jobs.

Both call `coordinators.services`, as the API and the CLI do, as the operator, and report
per job; changing asks for its values on an intermediate page first.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.admin import ModelAdmin, helpers
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse

from coordinators import services
from coordinators.choices import ActionStatus, IllegalTransition
from coordinators.commands.rerun import MAX_RERUN_ACTIONS
from coordinators.models import CoordinatorAction, CoordinatorJob
from kernel.admin_kit import MAX_MESSAGES
from kernel.display import number_ranges, short_job_id, status_label
from kernel.permissions import JobPermissionDenied

#: The actions "rerun failed" reruns (Oozie's -failed covers FAILED and KILLED; a timed-out action failed too).
RERUN_FAILED_STATUSES = (ActionStatus.FAILED, ActionStatus.KILLED, ActionStatus.TIMEDOUT)
BULK_CHANGE_SHOWN = 100


def _report(modeladmin: ModelAdmin[CoordinatorJob], request: HttpRequest, verb: str, done: list[str], refused: list[str]) -> None:
    """One success message naming what was queued, one warning per refusal (the first MAX_MESSAGES)."""
    if done:
        more = f" and {len(done) - MAX_MESSAGES} more" if len(done) > MAX_MESSAGES else ""
        modeladmin.message_user(
            request, f"{verb} queued for {len(done)} job(s): {', '.join(done[:MAX_MESSAGES])}{more}", messages.SUCCESS,
        )
    for reason in refused[:MAX_MESSAGES]:
        modeladmin.message_user(request, f"{verb} refused for {reason}", messages.WARNING)
    if len(refused) > MAX_MESSAGES:
        modeladmin.message_user(request, f"... and {len(refused) - MAX_MESSAGES} more refused", messages.WARNING)


def rerun_failed(modeladmin: ModelAdmin[CoordinatorJob], request: HttpRequest, queryset: QuerySet[CoordinatorJob]) -> None:
    """Rerun the FAILED, KILLED and TIMEDOUT actions of each selected job through `services.rerun_job`."""
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
                services.rerun_job(job_id, actor=request.user, rerun_type="action",
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
        return change_value(self.cleaned_data)


def change_value(data: Mapping[str, Any]) -> str:
    """Oozie's `endtime=...;concurrency=...;pausetime=...` for the filled fields of a ChangeForm's data."""
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
    modeladmin: ModelAdmin[CoordinatorJob], request: HttpRequest, queryset: QuerySet[CoordinatorJob]
) -> HttpResponse | None:
    """Ask for the values on an intermediate page, then queue `services.change_job` for each selected job."""
    form = ChangeForm(request.POST if request.POST.get("apply") == "yes" else None)
    if form.is_bound and form.is_valid():
        value = form.value()
        done: list[str] = []
        refused: list[str] = []
        for job_id in queryset.order_by("pk").values_list("pk", flat=True):
            try:
                services.change_job(job_id, value, actor=request.user)
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
