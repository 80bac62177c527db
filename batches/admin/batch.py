"""Batches: a list with a progress bar per batch and bulk verbs, a read-only page per batch, its reports.

The list's bars come from one grouped query for the page (`batches.services.job_counts`),
never one per row. A batch's page shows its submission, its jobs by state, its jobs a page at
a time, and its reports with their deliveries; a job admin may send a failed delivery again.
Verbs go through `batches.services` as the operator (owner, ACL, job admins; status rules).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.shortcuts import get_object_or_404
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from batches import services
from batches.admin import buttons
from batches.admin.display import (
    SEGMENTS,
    badge,
    batch_link,
    identifiers,
    job_link,
    progress_bar,
    segments,
    two_lines,
    waiting_reason,
    when,
)
from batches.admin.verbs import (
    Outcome,
    confirmation_page,
    confirmed,
    report,
    run_each,
    selected_ids,
)
from batches.choices import QUEUES
from batches.choices import BatchStatus as B
from batches.choices import JobStatus as J
from batches.models import BATCH_KIND, Batch, BatchJob, BatchReport, ReportDelivery
from kernel.admin_kit import ReadOnlyAdmin, StatusHistoryAdmin
from kernel.object_verbs import ObjectVerb, ObjectVerbsAdmin
from kernel.permissions import JobPermissionDenied, can_modify, is_admin

JOBS_PER_PAGE = 50
REPORT_FORMATS = ("text", "csv", "json")


def bid(pk: int) -> str:
    """`bid0000017`."""
    return f"bid{pk:07d}"


def parse_id(term: str, prefix: str) -> int | None:
    """17 from `bid0000017`, `BID17` or `17`; None for anything else."""
    text = term.strip().lower().removeprefix(prefix)
    return int(text) if text.isdigit() and len(text) <= 18 else None


def _verb_action(verb: str, description: str) -> Callable[..., HttpResponse | None]:
    """A bulk action calling services.batch_verb(verb) for each selected batch, reporting per batch."""

    @admin.action(description=description, permissions=["change"])
    def act(modeladmin: BatchAdmin, request: HttpRequest, queryset: QuerySet[Batch]) -> HttpResponse | None:
        return modeladmin.run_verb(request, queryset, verb)

    act.__name__ = f"{verb.replace('-', '_')}_batches"
    return act


class BatchChangeList(ChangeList):
    """The page's batches without their manifest text, each with its job counts (one grouped query)."""

    def get_results(self, request: HttpRequest) -> None:
        self.queryset = self.queryset.defer("manifest")
        super().get_results(request)
        counts = services.job_counts(batch.pk for batch in self.result_list)
        for batch in self.result_list:
            batch.job_counts = counts.get(batch.pk, {})


@admin.register(Batch)
class BatchAdmin(ObjectVerbsAdmin, StatusHistoryAdmin, ReadOnlyAdmin):
    """Batches: filters, search by id, submitter or payload URL, progress bars, bulk verbs; a page per batch.

    History lists the batch's status changes (its jobs' are on their pages).
    """

    history_kind = BATCH_KIND

    list_display = ["batch_id", "profile_column", "submitted_by", "kind", "status_and_jobs", "created"]
    list_display_links = ["batch_id"]
    list_filter = ["status", "profile", "collection", "created_at"]
    search_fields = ["submitter", "payload_url"]
    search_help_text = "a batch id (bid0000017 or 17), a submitter, or part of a payload URL"
    ordering = ["-created_at"]
    list_select_related = ["profile", "collection", "owner"]
    list_per_page = 50
    show_full_result_count = False
    actions = [
        _verb_action("release", "Release selected held batches"),
        _verb_action("update-report", "Update-report selected failed batches"),
        _verb_action("delete", "Delete selected failed or held batches…"),
    ]
    # The fields are a compact summary (batch_summary) above the jobs and reports; the form keeps
    # only the long manifest text, folded.
    fieldsets = [("Manifest", {"classes": ["collapse"], "fields": ["manifest_text"]})]
    readonly_fields = ["manifest_text"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Batch]:
        return super().get_queryset(request).select_related("profile", "collection", "owner", "operation")

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return BatchChangeList

    def get_search_results(self, request: HttpRequest, queryset: QuerySet[Batch],
                           search_term: str) -> tuple[QuerySet[Batch], bool]:
        """Text in the submitter or the payload URL, or the batch id (`bid0000017`, `17`)."""
        found, duplicates = super().get_search_results(request, queryset, search_term)
        pk = parse_id(search_term, "bid")
        if pk is not None:
            found = found | queryset.filter(pk=pk)
        return found, duplicates

    # --- verbs

    def run_verb(self, request: HttpRequest, queryset: QuerySet[Batch], verb: str) -> HttpResponse | None:
        """services.batch_verb per batch as the operator; a delete asks for a confirmation first."""
        ids = selected_ids(self, request, queryset)
        if ids is None:
            return None
        sure = verb == "delete" and confirmed(request)
        outcome = run_each(
            ids, lambda pk: services.batch_verb(pk, verb, actor=request.user, confirmed=sure), bid, Batch.DoesNotExist
        )
        report(self, request, verb, "batch(es)", outcome)
        if outcome.ask:
            return confirmation_page(self, request, noun="batch(es)", items=self.deletion_items(outcome),
                                     ids=[pk for pk, _ in outcome.ask])
        return None

    def deletion_items(self, outcome: Outcome) -> list[dict[str, Any]]:
        """What deleting each batch takes with it: its jobs by state, its running operation."""
        ids = [pk for pk, _ in outcome.ask]
        batches = Batch.objects.select_related("profile", "collection").defer("manifest").in_bulk(ids)
        counts = services.job_counts(ids)
        items = []
        for pk, reason in outcome.ask:
            batch = batches[pk]
            jobs = counts.get(pk, {})
            alive = sum(n for status, n in jobs.items() if status != J.DELETED)
            items.append({
                "link": batch_link(pk), "badge": badge(batch.status), "reason": reason,
                "what": format_html("{} · {} · submitted by {} on {}", batch.profile.name, batch.collection.name,
                                    batch.submitter, when(batch.created_at)),
                "bar": progress_bar(jobs),
                "goes": f"{alive} job(s) deleted, their working directories removed; "
                        "its operation is cancelled if it still runs",
            })
        return items

    # --- list columns

    @admin.display(description="id", ordering="id")
    def batch_id(self, obj: Batch) -> str:
        return obj.id_text

    @admin.display(description="profile / collection", ordering="profile__name")
    def profile_column(self, obj: Batch) -> str:
        held = format_html(" {}", badge("held")) if obj.collection.held else ""
        return format_html('{}<br><span class="quiet">{}</span>{}', obj.profile.name, obj.collection.name, held)

    @admin.display(description="submitted by", ordering="submitter")
    def submitted_by(self, obj: Batch) -> str:
        owner = obj.owner.get_username()
        if obj.submitter and obj.submitter != owner:
            return format_html('{}<br><span class="quiet">as {}</span>', obj.submitter, owner)
        return owner

    @admin.display(description="type", ordering="type")
    def kind(self, obj: Batch) -> str:
        return obj.type

    @admin.display(description="status / jobs", ordering="status")
    def status_and_jobs(self, obj: Batch) -> str:
        # One column for both: the list must fit beside the navigation and the filters at 1,280 px.
        return format_html('{}<div class="jobs">{}</div>', badge(obj.status), self.progress(obj))

    @admin.display(description="jobs")
    def progress(self, obj: Batch) -> str:
        counts = getattr(obj, "job_counts", None)
        if counts is None:  # not from the list (which counts the whole page at once)
            counts = services.job_counts([obj.pk]).get(obj.pk, {})
        return progress_bar(counts, width=110)

    @admin.display(description="created", ordering="created_at")
    def created(self, obj: Batch) -> str:
        return two_lines(obj.created_at)

    @admin.display(description="manifest as submitted")
    def manifest_text(self, obj: Batch) -> str:
        return format_html("<pre style='margin:0;white-space:pre-wrap'>{}</pre>", obj.manifest or "(not a manifest)")

    # --- the page

    def object_verbs(self, request: HttpRequest, obj: Batch, params: Mapping[str, str]) -> list[ObjectVerb]:
        """The page's buttons (batches.admin.buttons), through the services."""
        return buttons.batch_verbs(obj, request.user)

    def verb_forbidden(self, request: HttpRequest, obj: Batch) -> str:
        return "" if can_modify(request.user, obj) else f"you may not act on {obj.id_text}"

    def render_change_form(
        self, request: HttpRequest, context: dict[str, Any], add: bool = False, change: bool = False,
        form_url: str = "", obj: Batch | None = None,
    ) -> HttpResponse:
        """The read-only page: submission, jobs by state, the jobs a page at a time, reports and deliveries."""
        if obj is not None:
            self.check_read(request, obj)
            context.update(
                subtitle=f"{obj.id_text} · {obj.profile.name} · {obj.status}",
                summary=batch_summary(obj), states=job_states(obj), jobs=self.jobs_page(request, obj),
                reports=report_rows(obj), can_resend=is_admin(request.user),
                jobs_url=reverse("admin:batches_batchjob_changelist") + f"?batch={obj.pk}",
                operation_url=(
                    reverse("admin:operations_operation_change", args=[obj.operation_id]) if obj.operation_id else ""
                ),
            )
        return super().render_change_form(request, context, add, change, form_url, obj)

    def check_read(self, request: HttpRequest, batch: Batch) -> None:
        """PermissionDenied unless the operator may read the batch (COORD_RESTRICT_READS)."""
        try:
            services.read_batch(batch.pk, actor=request.user)
        except JobPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from exc

    def jobs_page(self, request: HttpRequest, batch: Batch) -> Any:
        """One page of the batch's jobs in number order (?jobs=N), the batch set on each (no query per row)."""
        jobs = BatchJob.objects.filter(batch=batch).defer("history", "files").order_by("number")
        page = Paginator(jobs, JOBS_PER_PAGE).get_page(request.GET.get("jobs"))
        for job in page:
            job.batch = batch
            job.link = job_link(job.pk)  # type: ignore[attr-defined]
            job.badge = badge(job.status)  # type: ignore[attr-defined]
            job.ids = identifiers(job)  # type: ignore[attr-defined]
            job.why = waiting_reason(job)  # type: ignore[attr-defined]
        return page

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view
        return [
            path("<int:batch_id>/reports/<int:number>/<str:fmt>/", view(self.report_view),
                 name="batches_batch_report"),
            path("<int:batch_id>/deliveries/<int:delivery_id>/resend/", view(self.resend_view),
                 name="batches_batch_resend"),
            *super().get_urls(),
        ]

    def report_view(self, request: HttpRequest, batch_id: int, number: int, fmt: str) -> HttpResponse:
        """A stored report as text (shown), CSV or JSON (downloaded)."""
        if fmt not in REPORT_FORMATS:
            raise Http404(f"no report format {fmt!r}: use {', '.join(REPORT_FORMATS)}")
        batch = get_object_or_404(Batch.objects.defer("manifest"), pk=batch_id)
        if not self.has_view_permission(request, batch):
            raise PermissionDenied
        self.check_read(request, batch)
        stored = get_object_or_404(BatchReport, batch=batch, number=number)
        name = f"{bid(batch.pk)}-report-{number}"
        if fmt == "text":
            return HttpResponse(stored.text, content_type="text/plain; charset=utf-8")
        if fmt == "csv":
            response = HttpResponse(stored.csv, content_type="text/csv; charset=utf-8")
        else:
            response = HttpResponse(json.dumps(stored.body, indent=2, sort_keys=True), content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
        return response

    def resend_view(self, request: HttpRequest, batch_id: int, delivery_id: int) -> HttpResponse:
        """Send a FAILED delivery again (job admins), through services.resend_delivery; back to the batch's page."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        batch = get_object_or_404(Batch.objects.defer("manifest"), pk=batch_id)
        if not self.has_view_permission(request, batch):
            raise PermissionDenied
        delivery = get_object_or_404(ReportDelivery.objects.select_related("report"), pk=delivery_id,
                                     report__batch=batch)
        what = f"report {delivery.report.number} to {delivery.target}"
        try:
            queued = services.resend_delivery(delivery.pk, actor=request.user)
        except JobPermissionDenied as exc:
            self.message_user(request, f"not sent again: {exc}", messages.ERROR)
        else:
            if queued:
                self.message_user(request, f"{what} is queued to be sent again", messages.SUCCESS)
            else:
                self.message_user(request, f"{what} is {delivery.status}, not FAILED: nothing to send again",
                                  messages.WARNING)
        return HttpResponseRedirect(reverse("admin:batches_batch_change", args=[batch.pk]) + "#batch-reports")


def batch_summary(batch: Batch) -> list[tuple[str, str]]:
    """The submission and where it is, as (label, HTML) pairs."""
    profile_url = reverse("admin:batches_profile_change", args=[batch.profile_id])
    collection = batch.collection
    held = format_html(" {}", badge("held")) if collection.held else ""
    priority = str(batch.priority) if batch.priority is not None else f"{batch.profile.priority} (the profile's)"
    operation: str = "-"
    if batch.operation_id is not None:
        url = reverse("admin:operations_operation_change", args=[batch.operation_id])
        status = batch.operation.status if batch.operation is not None else ""
        operation = format_html('<a href="{}">operation {}</a> {}', url, batch.operation_id, badge(status))
    rows: list[tuple[str, str]] = [
        ("Status", badge(batch.status)),
        ("Profile", format_html('<a href="{}">{}</a>', profile_url, batch.profile.name)),
        ("Collection", format_html("{}{}", collection.name, held)),
        ("Owner", format_html("{}", batch.owner.get_username())),
        ("Submitter", format_html("{}", batch.submitter)),
        ("Type", format_html("{}", batch.type)),
        ("Mode", format_html("{}", batch.submission_mode)),
        ("Priority", format_html("{}", priority)),
        ("Operation", operation),
        ("Created", format_html("{}", when(batch.created_at))),
        ("Last change", format_html("{}", when(batch.last_modified))),
        ("Finished", format_html("{}", when(batch.finished_at))),
        ("ACL", format_html("{}", batch.acl or "-")),
        ("External id", format_html("{}", batch.external_id or "-")),
        ("From", format_html("{}", "the CLI (trusted)" if batch.trusted else "the API")),
    ]
    rows += [(f"ERC {name}", format_html("{}", getattr(batch, f"erc_{name}")))
             for name in ("what", "who", "when", "where") if getattr(batch, f"erc_{name}")]
    rows.append(("Payload", format_html('<code class="payload">{}</code>', batch.payload_url)))
    return rows


def job_states(batch: Batch) -> dict[str, Any]:
    """The batch's jobs by state (one grouped query): the bar's segments, and per status how many run or wait."""
    rows = (
        BatchJob.objects.filter(batch=batch).order_by().values_list("status", "dispatched")
        .annotate(n=Count("pk")).values_list("status", "dispatched", "n")
    )
    counts: dict[str, int] = {}
    running: dict[str, int] = {}
    for status, dispatched, n in rows:
        counts[status] = counts.get(status, 0) + n
        if dispatched:
            running[status] = running.get(status, 0) + n
    base = reverse("admin:batches_batchjob_changelist") + f"?batch={batch.pk}"
    return {
        "total": sum(counts.values()),
        "segments": segments(counts),
        "legend": [{"label": label, "colour": colour} for label, colour, _ in SEGMENTS],
        "rows": [
            {
                "status": status, "badge": badge(status), "count": counts[status],
                "running": running.get(status, 0) if status in QUEUES else None,
                "waiting": counts[status] - running.get(status, 0) if status in QUEUES else None,
                "url": f"{base}&status__exact={status}",
            }
            for status in J.values if status in counts
        ],
        "finished": batch.status in (B.COMPLETED, B.FAILED, B.DELETED),
    }


def report_rows(batch: Batch) -> list[dict[str, Any]]:
    """The batch's reports (counts, links to text, CSV and JSON) and each one's deliveries (two queries)."""
    reports = list(batch.reports.order_by("number").values("pk", "number", "kind", "created_at", "body__counts"))
    deliveries: dict[int, list[ReportDelivery]] = {}
    for delivery in ReportDelivery.objects.filter(report__batch=batch).order_by("report_id", "target"):
        deliveries.setdefault(delivery.report_id, []).append(delivery)
    rows = []
    for row in reports:
        counts = row["body__counts"]
        if isinstance(counts, str):  # SQLite hands a JSON key's object back as text
            counts = json.loads(counts)
        links = {fmt: reverse("admin:batches_batch_report", args=[batch.pk, row["number"], fmt])
                 for fmt in REPORT_FORMATS}
        rows.append({
            **row, "counts": counts or {}, "links": links,
            "deliveries": [
                {"delivery": d, "badge": badge(d.status),
                 "resend_url": reverse("admin:batches_batch_resend", args=[batch.pk, d.pk])}
                for d in deliveries.get(row["pk"], [])
            ],
        })
    return rows
