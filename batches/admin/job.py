"""Batch jobs: a list that says what each job waits for and why, bulk verbs, a read-only page per job.

The list shows for a job in a queue whether it runs, is blocked by an older job of the same
object, waits for space (until when) or for a slot; a held job why it is held; a failed job
its error. Verbs (release, resume, requeue, delete, priority) go through
`batches.services.job_verb` as the operator, refusals reported per job.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html

from batches import services
from batches.admin import buttons
from batches.admin.batch import parse_id
from batches.admin.display import (
    badge,
    batch_link,
    file_rows,
    history_rows,
    identifiers,
    job_link,
    resume_hint,
    size,
    waiting_reason,
    when,
)
from batches.admin.verbs import (
    Outcome,
    PriorityForm,
    applying,
    confirmation_page,
    confirmed,
    report,
    run_each,
    selected_ids,
    value_page,
)
from batches.models import BATCH_JOB_KIND, Batch, BatchJob
from kernel.admin_kit import ReadOnlyAdmin, StatusHistoryAdmin, pretty
from kernel.admin_tries import tries_table
from kernel.models import TaskTry
from kernel.object_verbs import ObjectVerb, ObjectVerbsAdmin
from kernel.permissions import can_modify, can_read
from kernel.secrets import masker

PRIORITY_RANGES = [
    ("0-4", "0–4 (before the default)"), ("5", "5 (the default)"), ("6-9", "6–9"), ("10-99", "10 and later"),
]


def jid(pk: int) -> str:
    """`jid0000042`."""
    return f"jid{pk:07d}"


class PriorityFilter(admin.SimpleListFilter):
    """Priority ranges (0 runs first); any `N` or `A-B` in the URL works too, without a scan for distinct values."""

    title = "priority"
    parameter_name = "priority"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]) -> list[tuple[str, str]]:
        return PRIORITY_RANGES

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if not value:
            return queryset
        low, _, high = str(value).partition("-")
        if not low.isdigit() or not (high or low).isdigit():
            return queryset.none()
        return queryset.filter(priority__gte=int(low), priority__lte=int(high or low))


class BatchFilter(admin.SimpleListFilter):
    """One batch's jobs: the chosen batch and the ten newest (never a list of every batch)."""

    title = "batch"
    parameter_name = "batch"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]) -> list[tuple[str, str]]:
        recent = list(Batch.objects.order_by("-created_at", "-pk").values_list("pk", "profile__name")[:10])
        chosen = parse_id(str(self.value() or ""), "bid")
        if chosen is not None and chosen not in {pk for pk, _ in recent}:
            name = Batch.objects.filter(pk=chosen).values_list("profile__name", flat=True).first()
            recent.insert(0, (chosen, name or "?"))
        return [(str(pk), f"bid{pk:07d} ({name})") for pk, name in recent]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if not self.value():
            return queryset
        chosen = parse_id(str(self.value()), "bid")
        return queryset.filter(batch_id=chosen) if chosen is not None else queryset.none()


def _verb_action(verb: str, description: str) -> Callable[..., HttpResponse | None]:
    """A bulk action calling the job services for `verb` on each selected job, reporting per job."""

    @admin.action(description=description, permissions=["change"])
    def act(modeladmin: BatchJobAdmin, request: HttpRequest, queryset: QuerySet[BatchJob]) -> HttpResponse | None:
        return modeladmin.run_verb(request, queryset, verb)

    act.__name__ = f"{verb}_jobs"
    return act


class JobChangeList(ChangeList):
    """The list leaves out what it never shows: stage history, files, the batch's manifest."""

    def get_results(self, request: HttpRequest) -> None:
        self.queryset = self.queryset.defer("history", "files", "batch__manifest")
        super().get_results(request)


@admin.register(BatchJob)
class BatchJobAdmin(ObjectVerbsAdmin, StatusHistoryAdmin, ReadOnlyAdmin):
    """Jobs: what each waits for and why; filters, search by id or identifier, bulk verbs; a page per job.

    History lists the job's status changes (its stage history is on its page).
    """

    history_kind = BATCH_JOB_KIND

    list_display = ["job_column", "status_badge", "priority", "ids", "waits_for"]
    list_display_links = None  # the job column links the job and its batch itself
    list_filter = ["status", PriorityFilter, "batch__profile", "batch__collection", BatchFilter]
    search_fields = ["primary_id", "supplied_primary_id", "local_ids"]
    search_help_text = "a job id (jid0000042 or 42), a primary id or a local id"
    ordering = ["-batch_id", "number"]
    list_select_related = ["batch__collection"]
    list_per_page = 100
    show_full_result_count = False
    actions = [
        _verb_action("release", "Release selected held jobs"),
        _verb_action("resume", "Resume selected failed jobs (after their last successful stage)"),
        _verb_action("requeue", "Requeue selected failed jobs (from the start)"),
        _verb_action("delete", "Delete selected failed or held jobs…"),
        "set_priority",
    ]
    # The fields are summaries and tables (job_page); the form keeps the stored JSON, folded.
    fieldsets = [("As stored", {"classes": ["collapse"], "fields": ["files_json", "history_json"]})]
    readonly_fields = ["files_json", "history_json"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[BatchJob]:
        return super().get_queryset(request).select_related("batch__collection", "batch__profile")

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return JobChangeList

    def get_search_results(self, request: HttpRequest, queryset: QuerySet[BatchJob],
                           search_term: str) -> tuple[QuerySet[BatchJob], bool]:
        """A local or primary identifier, or the job id (`jid0000042`, `42`)."""
        found, duplicates = super().get_search_results(request, queryset, search_term)
        pk = parse_id(search_term, "jid")
        if pk is not None:
            found = found | queryset.filter(pk=pk)
        return found, duplicates

    # --- verbs

    def run_verb(self, request: HttpRequest, queryset: QuerySet[BatchJob], verb: str,
                 priority: int | None = None) -> HttpResponse | None:
        """services.job_verb per job as the operator; a delete the service wants confirmed asks first."""
        ids = selected_ids(self, request, queryset)
        if ids is None:
            return None
        sure = verb == "delete" and confirmed(request)
        outcome = run_each(
            ids, lambda pk: services.job_verb(pk, verb, actor=request.user, priority=priority, confirmed=sure), jid,
            BatchJob.DoesNotExist,
        )
        report(self, request, verb if priority is None else f"priority {priority}", "job(s)", outcome)
        if outcome.ask:
            return confirmation_page(self, request, noun="job(s)", items=self.deletion_items(outcome),
                                     ids=[pk for pk, _ in outcome.ask])
        return None

    def deletion_items(self, outcome: Outcome) -> list[dict[str, Any]]:
        """Each job to delete: its batch, identifiers, and that its depositor will not hear of it."""
        jobs = BatchJob.objects.select_related("batch").defer("history", "files", "batch__manifest").in_bulk(
            [pk for pk, _ in outcome.ask]
        )
        return [
            {
                "link": job_link(pk), "badge": badge(jobs[pk].status), "reason": reason,
                "what": format_html("job {} of {} · {}", jobs[pk].number, batch_link(jobs[pk].batch_id),
                                    identifiers(jobs[pk])),
                "goes": "its working directory is removed; it stays listed as deleted",
            }
            for pk, reason in outcome.ask
        ]

    @admin.action(description="Set the priority of selected jobs…", permissions=["change"])
    def set_priority(self, request: HttpRequest, queryset: QuerySet[BatchJob]) -> HttpResponse | None:
        """Ask for the number, then services.job_verb(priority) on each selected job."""
        ids = selected_ids(self, request, queryset)
        if ids is None:
            return None
        form = PriorityForm(request.POST if applying(request) else None)
        if not form.is_valid():
            objects = list(BatchJob.objects.filter(pk__in=ids).defer("history", "files").order_by("pk"))
            return value_page(
                self, request, title=f"Set the priority of {len(ids)} job(s)", form=form, objects=objects,
                intro="A job waiting in a stage's queue is taken when a slot frees, the lowest priority number "
                      "first, then the oldest.", button="Set priority",
            )
        return self.run_verb(request, queryset.filter(pk__in=ids), "priority", form.cleaned_data["priority"])

    # --- list columns

    @admin.display(description="job / batch", ordering="id")
    def job_column(self, obj: BatchJob) -> str:
        # One column for both: the list must leave room for the reasons at 1,280 px beside the filters.
        return format_html('{}<br><span class="quiet">{} · {}</span>', job_link(obj.pk), batch_link(obj.batch_id),
                           obj.number)

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: BatchJob) -> str:
        return badge(obj.status)

    @admin.display(description="identifiers")
    def ids(self, obj: BatchJob) -> str:
        return identifiers(obj)

    @admin.display(description="waits for / error")
    def waits_for(self, obj: BatchJob) -> str:
        return waiting_reason(obj)

    @admin.display(description="files")
    def files_json(self, obj: BatchJob) -> str:
        return pretty(obj.files)

    @admin.display(description="stage history")
    def history_json(self, obj: BatchJob) -> str:
        return pretty(obj.history)

    # --- the page

    def object_verbs(self, request: HttpRequest, obj: BatchJob, params: Mapping[str, str]) -> list[ObjectVerb]:
        """The page's buttons (batches.admin.buttons), through the services."""
        return buttons.job_verbs(obj, request.user)

    def verb_forbidden(self, request: HttpRequest, obj: BatchJob) -> str:
        return "" if can_modify(request.user, obj) else f"you may not act on {obj.id_text}"

    def render_change_form(
        self, request: HttpRequest, context: dict[str, Any], add: bool = False, change: bool = False,
        form_url: str = "", obj: BatchJob | None = None,
    ) -> HttpResponse:
        """The read-only page: where the job is and why, configuration, identifiers, files, history, error."""
        if obj is not None:
            if not can_read(request.user, obj):  # type: ignore[arg-type]
                raise PermissionDenied(f"user {request.user.get_username()!r} may not read job {obj.pk}")
            subtitle = f"{obj.id_text} · job {obj.number} of {obj.batch.id_text} · {obj.status}"
            context.update(job_page(obj), subtitle=subtitle)
        return super().render_change_form(request, context, add, change, form_url, obj)


def job_page(job: BatchJob) -> dict[str, Any]:
    """What the job's page shows, as (label, HTML) pairs and table rows."""
    blocked = job_link(job.blocked_by_id) if job.blocked_by_id else "-"
    summary = [
        ("Status", badge(job.status)),
        ("Batch", format_html("{} {} · job {}", batch_link(job.batch_id), badge(job.batch.status), job.number)),
        ("Priority", format_html("{}", job.priority)),
        ("Waits for", waiting_reason(job) if job.status != "failed" else "-"),
        ("Last success", format_html("{}", job.last_successful_status or "none yet")),
        ("Resume", format_html("{}", resume_hint(job))),
        ("Retries", format_html("{}", job.retry_count)),
        ("In queue since", format_html("{}", when(job.queued_at))),
        ("Blocked by", blocked),
        ("Not before", format_html("{}", when(job.not_before))),
        ("Holds a slot", format_html("{}", "yes: a stage is queued or runs" if job.dispatched else "no")),
        ("Created", format_html("{}", when(job.created_at))),
        ("Last change", format_html("{}", when(job.last_modified))),
        ("Directory removed", format_html("{}", when(job.cleaned_at))),
    ]
    configuration = [
        ("Payload", format_html("<code>{}</code>", job.payload_url)),
        ("Type", format_html("{}", job.payload_type)),
        ("Working directory", format_html("<code>{}</code>", job.working_dir or "-")),
        ("Object key", format_html("<code>{}</code>", job.object_key)),
        ("Space needed", format_html("{}", size(job.space_needed))),
        ("Profile task", format_html("<code>{}</code>", job.batch.profile.task)),
    ]
    minted = " (minted)" if job.minted else ""
    ids = [
        ("Primary id", format_html("{}{}", job.primary_id or "-", minted)),
        ("Supplied primary id", format_html("{}", job.supplied_primary_id or "-")),
        ("Local ids", format_html("{}", ", ".join(str(v) for v in job.local_ids or []) or "-")),
        ("Title", format_html("{}", job.title or "-")),
        ("Creator", format_html("{}", job.creator or "-")),
        ("Date", format_html("{}", job.date or "-")),
        ("Inventory version", format_html("{}", job.inventory_version or "-")),
    ]
    return {
        "summary": summary, "configuration": configuration, "identifiers": ids,
        "files": file_rows(job.files or []), "history": history_rows(job.history or []),
        "batch_url": batch_link(job.batch_id),
        # A batch names no secret properties: values under secret names are masked (kernel.secrets).
        "tries": tries_table(TaskTry.objects.filter(kind=TaskTry.Kind.STAGE, object_id=str(job.pk)), masker()),
    }
