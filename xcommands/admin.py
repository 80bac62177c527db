"""Operator views of the command engine: per-key queues, command history, retry and skip."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import quote
from django.db.models import Count, IntegerField, Min, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html

from kernel.admin_kit import render_status_history, status_heading, status_history_table
from kernel.display import ERROR_TEXT, short_id_html, status_label, time_html
from kernel.secrets import masker
from xcommands.choices import ACTIVE_STATUSES, CommandStatus
from xcommands.errors import IllegalCommandTransition
from xcommands.models import Command, CommandKey
from xcommands.operations import retry_command, skip_command


def command_target(key: str, params: Any) -> tuple[str, str, str] | None:
    """What a command was for, from its parameters: (kind, id, admin url), or None when nothing names it.

    Coordinator commands carry `job_id` (an action's also `number`), bundle commands
    `bundle_id`, batch commands `batch_id`, batch job stages an integer `job_id`; a command
    naming none of them on a coordinator job's key was for that job.
    """
    params = params if isinstance(params, dict) else {}
    job_id, number = params.get("job_id"), params.get("number")
    candidates: list[tuple[str, Any, str]] = []
    if isinstance(job_id, str) and job_id:
        if isinstance(number, int) and not isinstance(number, bool):
            candidates.append(("action", f"{job_id}@{number}", "coordinators_coordinatoraction"))
        candidates.append(("job", job_id, "coordinators_coordinatorjob"))
    elif isinstance(job_id, int) and not isinstance(job_id, bool):
        candidates.append(("batch job", job_id, "batches_batchjob"))
    if isinstance(params.get("bundle_id"), str) and params["bundle_id"]:
        candidates.append(("bundle", params["bundle_id"], "bundles_bundlejob"))
    if isinstance(params.get("batch_id"), int):
        candidates.append(("batch", params["batch_id"], "batches_batch"))
    if isinstance(params.get("coord_job_id"), str) and params["coord_job_id"]:
        candidates.append(("job", params["coord_job_id"], "coordinators_coordinatorjob"))
    if not candidates and key.endswith("-C") and key[:7].isdigit():  # a coordinator job's key, whatever the params
        candidates.append(("job", key, "coordinators_coordinatorjob"))
    for kind, pk, name in candidates:
        try:
            return kind, str(pk), reverse(f"admin:{name}_change", args=[quote(pk)])
        except NoReverseMatch:  # that app's admin is not installed
            continue
    return None


def target_link(command: Command) -> str:
    """A link to the job, action, bundle or batch a command was for, its id shortened (full id in the title)."""
    target = command_target(command.key, command.params)
    if target is None:
        return "-"
    kind, pk, url = target
    if kind in ("job", "action", "bundle"):
        return format_html("{} {}", kind, short_id_html(pk, url))
    return format_html('{} <a href="{}">{}</a>', kind, url, pk)


@dataclass(frozen=True)
class Attempt:
    """One entry of a command's own history, as a History page row: when, outcome, which worker, why."""

    at: datetime | None
    from_status: str
    to_status: str
    by: str
    reason: str


def attempts(command: Command) -> list[Attempt]:
    """A command's attempts and operator verbs (its `history`), oldest first, as status changes."""
    rows = []
    for entry in command.history if isinstance(command.history, list) else []:
        if not isinstance(entry, dict):
            continue
        attempt = f"{entry.get('phase', '')} attempt {entry.get('attempt', '')}".strip() if "attempt" in entry else ""
        why = str(entry.get("error") or entry.get("note") or "")
        rows.append(Attempt(
            at=parse_datetime(str(entry.get("at", ""))), from_status="", to_status=str(entry.get("outcome", "")),
            by=str(entry.get("worker") or entry.get("by") or ""), reason=": ".join(part for part in (attempt, why) if part),
        ))
    return rows


def _count(key_filter: Q) -> Subquery:
    return Subquery(
        Command.objects.filter(key_filter, key=OuterRef("key"))
        .order_by()
        .values("key")
        .annotate(n=Count("pk"))
        .values("n")[:1],
        output_field=IntegerField(),
    )


class BlockedFilter(admin.SimpleListFilter):
    """Queues whose head is parked (blocked until an operator acts)."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[CommandKey]) -> list[tuple[str, str]]:
        return [("blocked", "blocked by a parked command"), ("busy", "has queued commands"), ("idle", "empty")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[CommandKey]) -> QuerySet[CommandKey]:
        # depth and parked are annotations of CommandKeyAdmin.get_queryset.
        conditions = {"blocked": {"parked__gt": 0}, "busy": {"depth__gt": 0}, "idle": {"depth": 0}}
        chosen = conditions.get(self.value() or "")
        return queryset.filter(**chosen) if chosen else queryset


@admin.register(CommandKey)
class CommandKeyAdmin(admin.ModelAdmin[CommandKey]):
    """Per-key queues: depth, head command, oldest waiting age, parked commands."""

    list_display = ["key", "queue_depth", "head_command", "oldest_age", "parked_commands", "last_finished"]
    search_fields = ["key"]
    list_filter = [BlockedFilter]
    readonly_fields = ["key", "next_seq"]
    list_per_page = 100

    def get_queryset(self, request: HttpRequest) -> QuerySet[CommandKey]:
        head = Command.objects.filter(key=OuterRef("key"), status__in=ACTIVE_STATUSES).order_by("seq")
        oldest = (
            Command.objects.filter(key=OuterRef("key"), status__in=ACTIVE_STATUSES)
            .order_by()
            .values("key")
            .annotate(t=Min("enqueued_at"))
            .values("t")[:1]
        )
        return (
            super()
            .get_queryset(request)
            .annotate(
                depth=Coalesce(_count(Q(status__in=ACTIVE_STATUSES)), 0),
                parked=Coalesce(_count(Q(status=CommandStatus.PARKED)), 0),
                head_id=Subquery(head.values("pk")[:1]),
                head_name=Subquery(head.values("name")[:1]),
                head_status=Subquery(head.values("status")[:1]),
                oldest=Subquery(oldest),
                finished=Subquery(
                    Command.objects.filter(key=OuterRef("key"), finished_at__isnull=False)
                    .order_by("-seq")
                    .values("finished_at")[:1]
                ),
            )
            .order_by("-parked", "-depth", "key")
        )

    @admin.display(description="depth", ordering="depth")
    def queue_depth(self, obj: CommandKey) -> int:
        return int(getattr(obj, "depth", 0))

    @admin.display(description="head command")
    def head_command(self, obj: CommandKey) -> str:
        head_id = getattr(obj, "head_id", None)
        if head_id is None:
            return "-"
        url = reverse("admin:xcommands_command_change", args=[head_id])
        return format_html(
            '<a href="{}">#{} {}</a> ({})', url, head_id, getattr(obj, "head_name", ""), getattr(obj, "head_status", "")
        )

    @admin.display(description="oldest waiting", ordering="oldest")
    def oldest_age(self, obj: CommandKey) -> str:
        oldest: datetime | None = getattr(obj, "oldest", None)
        if oldest is None:
            return "-"
        seconds = int((timezone.now() - oldest).total_seconds())
        return f"{seconds // 3600}h {seconds % 3600 // 60}m {seconds % 60}s"

    @admin.display(description="last finished", ordering="finished")
    def last_finished(self, obj: CommandKey) -> datetime | None:
        return getattr(obj, "finished", None)

    @admin.display(description="parked", ordering="parked")
    def parked_commands(self, obj: CommandKey) -> str:
        parked = int(getattr(obj, "parked", 0))
        if not parked:
            return "0"
        url = reverse("admin:xcommands_command_changelist") + f"?key={obj.key}&status__exact=PARKED"
        return format_html('<a href="{}" style="color:{};font-weight:bold">{}</a>', url, ERROR_TEXT, parked)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Command)
class CommandAdmin(admin.ModelAdmin[Command]):
    """Command history, searchable by key; parked commands can be retried or skipped."""

    list_display = [
        "id", "short_key", "seq", "short_name", "target", "status_badge", "attempts", "enqueued", "finished", "short_error",
    ]
    list_filter = ["status", "name"]
    search_fields = ["=key", "key__startswith", "=id"]
    ordering = ["-id"]
    list_per_page = 100
    show_full_result_count = False
    actions = ["retry_parked", "skip_parked"]
    readonly_fields = [
        "key", "seq", "name", "target", "params_pretty", "status_badge", "attempts", "max_retries", "not_before",
        "wake_at", "lease_owner", "lease_expires_at", "fencing_token", "enqueued_at", "started_at",
        "finished_at", "last_error", "history_pretty", "result", "owner",
    ]
    exclude = ["params", "history"]

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Command], search_term: str
    ) -> tuple[QuerySet[Command], bool]:
        # The key list links here with ?key=...; honour it as an exact filter.
        key = request.GET.get("key")
        if key:
            queryset = queryset.filter(key=key)
        return super().get_search_results(request, queryset, search_term)

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest) -> bool:
        return lookup == "key" or super().lookup_allowed(lookup, value, request)

    @admin.display(description="for")
    def target(self, obj: Command) -> str:
        return target_link(obj)

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: Command) -> str:
        return status_label(obj.status)

    def render_change_form(self, request: HttpRequest, context: dict[str, Any], add: bool = False, change: bool = False,
                           form_url: str = "", obj: Command | None = None) -> Any:
        """The command's heading writes its status as the one badge, as the list does."""
        if obj is not None and context.get("subtitle"):
            context["subtitle"] = status_heading(obj)
        return super().render_change_form(request, context, add, change, form_url, obj)

    def history_view(self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None) -> Any:
        """Its attempts, as the engine recorded them on its row (claims and outcomes; no second table)."""
        return render_status_history(self, request, object_id, lambda obj: status_history_table(attempts(obj)))

    @admin.display(description="key", ordering="key")
    def short_key(self, obj: Command) -> str:
        """A job's key shortened; another (`batch:17`, an object key) may break anywhere rather than widen the list."""
        return format_html('<span style="white-space:normal;overflow-wrap:anywhere">{}</span>', short_id_html(obj.key))

    @admin.display(description="enqueued", ordering="enqueued_at")
    def enqueued(self, obj: Command) -> str:
        return time_html(obj.enqueued_at, stacked=True)

    @admin.display(description="finished", ordering="finished_at")
    def finished(self, obj: Command) -> str:
        return time_html(obj.finished_at, day=obj.enqueued_at, stacked=True)

    @admin.display(description="command", ordering="name")
    def short_name(self, obj: Command) -> str:
        """`CoordActionReady` for `coordinators.CoordActionReadyXCommand` (the full name in its title)."""
        short = obj.name.rpartition(".")[2].removesuffix("XCommand") or obj.name
        return format_html('<span title="{}">{}</span>', obj.name, short)

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        """Titled "Commands" (read, retried and skipped, never edited); the columns take the app sidebar's width."""
        context = {"title": "Commands", "is_nav_sidebar_enabled": False}
        return super().changelist_view(request, {**context, **(extra_context or {})})

    @admin.display(description="error")
    def short_error(self, obj: Command) -> str:
        lines = [line for line in obj.last_error.strip().splitlines() if line.strip()]
        if not lines:
            return ""
        return format_html('<span style="white-space:normal;overflow-wrap:anywhere">{}</span>', lines[-1][:120])

    @admin.display(description="params")
    def params_pretty(self, obj: Command) -> str:
        # As Flower shows them (Command.display_kwargs): an update's or rerun's configuration and a keyed
        # job's arguments keep their secrets masked; the job's own page shows them to its owner and admins.
        return format_html("<pre>{}</pre>", json.dumps(masker(obj.params).data(obj.params), indent=2, sort_keys=True))

    @admin.display(description="history")
    def history_pretty(self, obj: Command) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.history, indent=2))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Command | None = None) -> bool:
        return False

    def _act(self, request: HttpRequest, queryset: QuerySet[Command], verb: str) -> None:
        done, refused = 0, []
        user = request.user.get_username()
        for command in queryset:
            try:
                (retry_command if verb == "retry" else skip_command)(command.pk, user=user)
                done += 1
            except IllegalCommandTransition as exc:
                refused.append(str(exc))
        if done:
            self.message_user(request, f"{verb}: {done} command(s) done", messages.SUCCESS)
        for reason in refused[:10]:
            self.message_user(request, reason, messages.WARNING)

    @admin.action(description="Retry selected parked commands")
    def retry_parked(self, request: HttpRequest, queryset: QuerySet[Command]) -> None:
        self._act(request, queryset, "retry")

    @admin.action(description="Skip selected parked commands (the key moves on)")
    def skip_parked(self, request: HttpRequest, queryset: QuerySet[Command]) -> None:
        self._act(request, queryset, "skip")
