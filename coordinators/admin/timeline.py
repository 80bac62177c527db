"""A coordinator job's timeline: its actions by nominal time with their status and SLA, a page at a time.

Above the page, the job's actions counted by status (one GROUP BY); errors are shown with
the job's secret properties masked for the reader.
"""

from __future__ import annotations

from django.contrib.admin import ModelAdmin
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse

from coordinators.choices import ActionStatus
from coordinators.models import CoordinatorJob
from kernel.admin_kit import badge
from kernel.display import human_duration, status_colour
from kernel.secrets import masker_for

TIMELINE_PAGE = 100


def timeline_view(modeladmin: ModelAdmin[CoordinatorJob], request: HttpRequest, object_id: str) -> HttpResponse:
    """A job's actions by nominal time with their status and SLA, a page at a time."""
    job = get_object_or_404(CoordinatorJob.objects.select_related("owner"), pk=unquote(object_id))
    if not modeladmin.has_view_permission(request, job):
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
        **modeladmin.admin_site.each_context(request),
        "opts": modeladmin.model._meta,
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
