"""The operators' dashboard: what runs, what waits and why, on one page (issue 15, item 4).

The counts are `monitoring.compute_figures()`, the same object Prometheus scrapes (a
few bounded aggregate queries, ADR 0014); the lists beside them (late actions, parked
commands, SLA misses today) are each one query with a small LIMIT over an index. Sections
show only what the operator may view.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, time, timedelta
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from coordinators.choices import ACTION_PENDING
from coordinators.models import CoordinatorAction, SLAEvent
from kernel.display import (
    exact_time,
    human_duration,
    short_job_id,
    status_colour,
    status_label,
    status_words,
)
from kernel.lookups import in_constants
from monitoring import compute_figures
from xcommands.admin import target_link
from xcommands.choices import CommandStatus
from xcommands.models import Command

LIST_LIMIT = 10
#: Workers not heard of for longer than this many lease periods are shown as quiet.
QUIET_LEASES = 2

#: (section title, figures key, admin changelist of the model, view permission).
STATUS_SECTIONS = [
    ("Coordinator jobs", "coordinator_jobs", "admin:coordinators_coordinatorjob_changelist", "coordinators.view_coordinatorjob"),
    ("Coordinator actions", "coordinator_actions", "admin:coordinators_coordinatoraction_changelist",
     "coordinators.view_coordinatoraction"),
    ("Bundles", "bundle_jobs", "admin:bundles_bundlejob_changelist", "bundles.view_bundlejob"),
    ("Batches", "batches", "admin:batches_batch_changelist", "batches.view_batch"),
    ("Batch jobs", "batch_jobs", "admin:batches_batchjob_changelist", "batches.view_batchjob"),
    ("Workflow runs", "workflow_jobs", "", "coordinators.view_coordinatoraction"),
]


def _changelist(name: str) -> str:
    if not name:
        return ""
    try:
        return reverse(name)
    except NoReverseMatch:
        return ""


def status_chips(counts: Mapping[str, int], changelist: str) -> list[dict[str, Any]]:
    """The statuses some object has, in enum order: words, count, colour, and the list filtered to it."""
    return [
        {"status": status, "words": status_words(status), "count": n, "colour": status_colour(status),
         "url": f"{changelist}?status__exact={status}" if changelist else ""}
        for status, n in counts.items() if n
    ]


def _first_missing(missing: Any) -> str:
    """The first URI an action waits for (`[[uri, done-flag], ...]` as stored), or ''."""
    if not isinstance(missing, list) or not missing:
        return ""
    first = missing[0]
    if isinstance(first, list | tuple) and first:
        return str(first[0])
    return str(first)


def late_actions(now: datetime) -> list[dict[str, Any]]:
    """The oldest actions whose nominal time passed and which have not started (WAITING or READY), and why."""
    actions = (
        CoordinatorAction.objects.filter(in_constants("status", ACTION_PENDING), nominal_time__lte=now)
        .select_related("job")
        .only("id", "number", "nominal_time", "status", "missing_dependencies", "next_check_at", "timeout_at",
              "job__id", "job__app_name")
        .order_by("nominal_time", "id")[:LIST_LIMIT]
    )
    rows = []
    for action in actions:
        missing = action.missing_dependencies if isinstance(action.missing_dependencies, list) else []
        rows.append({
            "action": action,
            "url": reverse("admin:coordinators_coordinatoraction_change", args=[quote(action.pk)]),
            "job_url": reverse("admin:coordinators_coordinatorjob_change", args=[quote(action.job_id)]),
            "short_job": short_job_id(action.job_id),
            "label": status_label(action.status),
            "late": human_duration(now - action.nominal_time),
            "missing": len(missing),
            "first_missing": _first_missing(missing),
            "next_check": human_duration(action.next_check_at - now) if action.next_check_at else "",
            "timeout": exact_time(action.timeout_at) if action.timeout_at else "",
        })
    return rows


def parked_commands() -> list[dict[str, Any]]:
    """The newest parked commands (their key waits for an operator), each with what it was for."""
    parked = Command.objects.filter(status=CommandStatus.PARKED).order_by("-id")[:LIST_LIMIT]
    rows = []
    for command in parked:
        errors = [line for line in command.last_error.strip().splitlines() if line.strip()]
        rows.append({
            "command": command,
            "url": reverse("admin:xcommands_command_change", args=[command.pk]),
            "target": target_link(command),
            "error": errors[-1][:160] if errors else "",
        })
    return rows


def sla_misses_today(now: datetime) -> dict[str, Any]:
    """SLA misses recorded since local midnight: a count per criterion and the newest few."""
    midnight = timezone.make_aware(datetime.combine(timezone.localtime(now).date(), time.min))
    misses = SLAEvent.objects.filter(event_type__in=["START_MISS", "DURATION_MISS", "END_MISS"], recorded_at__gte=midnight)
    counts = dict(misses.order_by().values_list("event_type").annotate(n=Count("pk")).values_list("event_type", "n"))
    newest = misses.select_related("registration").order_by("-recorded_at", "-id")[:LIST_LIMIT]
    return {
        "since": midnight,
        "total": sum(counts.values()),
        "counts": [{"type": t, "words": t.replace("_", " ").lower(), "count": counts[t]}
                   for t in ("START_MISS", "DURATION_MISS", "END_MISS") if counts.get(t)],
        "events": [
            {"event": event, "url": reverse("admin:coordinators_slaevent_change", args=[event.pk]),
             "action_url": reverse("admin:coordinators_coordinatoraction_change", args=[quote(event.registration_id)]),
             "words": event.event_type.replace("_", " ").lower()}
            for event in newest
        ],
        # The list's own "Today" choice of its date filter: the same two bounds it writes.
        "list_url": reverse("admin:coordinators_slaevent_changelist") + "?" + urlencode(
            {"recorded_at__gte": str(midnight), "recorded_at__lt": str(midnight + timedelta(days=1))}
        ),
    }


def dashboard(request: HttpRequest) -> HttpResponse:
    """The dashboard page (staff only: wrapped in `admin.site.admin_view` in the URLs)."""
    now = timezone.now()
    figures = compute_figures(now)
    user = request.user
    sections = [
        {"title": title, "key": key, "chips": status_chips(figures.statuses.get(key, {}), _changelist(changelist)),
         "total": sum(figures.statuses.get(key, {}).values()), "url": _changelist(changelist)}
        for title, key, changelist, permission in STATUS_SECTIONS
        if user.has_perm(permission)
    ]
    can_coordinators = user.has_perm("coordinators.view_coordinatoraction")
    can_commands = user.has_perm("xcommands.view_command")
    loads = {name: load for name, load in figures.commands.items() if load.queued or load.running or load.parked}
    oldest_queued = min((load.oldest_queued_at for load in loads.values() if load.oldest_queued_at), default=None)
    lease = int(settings.COMMAND_LEASE_SECONDS)
    workers = [
        {"name": name, "node": name.rpartition(":")[0] or name, "pid": name.rpartition(":")[2],
         "seen": seen, "ago": human_duration(figures.age(seen)), "quiet": figures.age(seen) > QUIET_LEASES * lease}
        for name, seen in sorted(figures.workers.items())
    ]
    due = dict(figures.due_actions)
    context = {
        **admin.site.each_context(request),
        "title": "Dashboard",
        "is_nav_sidebar_enabled": False,  # its tables take the width; Home lists the apps
        "now": now,
        "sections": sections,
        "can_coordinators": can_coordinators,
        "can_commands": can_commands,
        "late": late_actions(now) if can_coordinators else [],
        "late_total": sum(due.values()),
        "late_by_status": [{"words": status_words(s), "count": n} for s, n in due.items() if n],
        "oldest_late": human_duration(figures.age(figures.oldest_due_at)) if figures.oldest_due_at else "",
        "parked": parked_commands() if can_commands else [],
        "parked_total": sum(load.parked for load in figures.commands.values()),
        "queued_total": sum(load.queued for load in figures.commands.values()),
        "running_total": sum(load.running for load in figures.commands.values()),
        "oldest_queued": human_duration(figures.age(oldest_queued)) if oldest_queued else "",
        "loads": [
            {"name": name, "short_name": name.rpartition(".")[2], "queued": load.queued, "running": load.running,
             "parked": load.parked,
             "oldest": human_duration(figures.age(load.oldest_queued_at)) if load.oldest_queued_at else "-"}
            for name, load in sorted(loads.items(), key=lambda item: (-item[1].queued - item[1].parked, item[0]))
        ],
        "workers": workers,
        "window": human_duration(figures.window_seconds),
        "sla": sla_misses_today(now) if can_coordinators else None,
        "urls": {
            "grid": reverse("admin:coordinators_coordinatorjob_grid"),
            "queues": _changelist("admin:xcommands_commandkey_changelist"),
            "commands": _changelist("admin:xcommands_command_changelist"),
            "late": reverse("admin:coordinators_coordinatoraction_changelist") + "?late=yes",
            "metrics": reverse("metrics"),
            "flower": f"{str(settings.FLOWER_URL).rstrip('/')}/" if settings.FLOWER_URL else "",
        },
    }
    return TemplateResponse(request, "admin/dashboard.html", context)
