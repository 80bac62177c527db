"""What operators configure: collections (and their holds), profiles, and the ingest settings row.

Editing is for job admins (ADR 0011: holding collections and editing profiles) who also hold
the model's change permission; others see these pages read-only. Holds are set and lifted by
the bulk actions, through `batches.services`, never by editing the fields.
"""

from __future__ import annotations

from typing import Any

from celery import current_app as app  # project.celery's app, set up by this process
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from batches import services
from batches.admin.display import badge, size, when
from batches.admin.verbs import REFUSALS, HoldForm, applying, value_page
from batches.config import ingest_settings
from batches.models import Collection, IngestSettings, Profile
from kernel import task_registry, user_tasks
from kernel.admin_kit import MAX_MESSAGES
from kernel.permissions import is_admin

#: Registered tasks that are the engine's own, never a processing task.


class AdminEdited(admin.ModelAdmin[Any]):
    """Adding, changing and deleting need the model permission and being a job admin."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return super().has_add_permission(request) and is_admin(request.user)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) and is_admin(request.user)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_delete_permission(request, obj) and is_admin(request.user)


# --- collections ---------------------------------------------------------------------------


@admin.register(Collection)
class CollectionAdmin(AdminEdited):
    """Collections: their hold (who, when, why); hold and release them (with their held batches and jobs)."""

    list_display = ["name", "description", "held_column", "held_reason", "held_by", "held_since"]
    list_filter = ["held"]
    search_fields = ["name", "description"]
    ordering = ["name"]
    list_select_related = ["held_by"]
    actions = ["hold_collections", "release_collections"]
    readonly_fields = ["held", "held_reason", "held_at", "held_by"]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return ["name", "description", *([] if obj is None else self.readonly_fields)]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # Job keys and operation targets carry the name (`object:<collection>:...`): renaming a
        # collection with work in flight would let two versions of one object interleave.
        return ["name", *self.readonly_fields] if obj is not None else []

    @admin.display(description="held", ordering="held", boolean=False)
    def held_column(self, obj: Collection) -> str:
        if not obj.held:
            return "-"
        return badge("held")

    @admin.display(description="held since", ordering="held_at")
    def held_since(self, obj: Collection) -> str:
        return when(obj.held_at) if obj.held else "-"

    @admin.action(description="Hold selected collections", permissions=["change"])
    def hold_collections(self, request: HttpRequest, queryset: QuerySet[Collection]) -> HttpResponse | None:
        """Ask for a reason, then hold each collection through services.hold_collection."""
        form = HoldForm(request.POST if applying(request) else None)
        if not form.is_valid():
            return value_page(
                self, request, title="Hold collections", form=form, objects=list(queryset.order_by("name")),
                intro="Nothing new of a held collection starts: its pending batches and jobs wait, held, "
                      "until it is released.", button="Hold",
            )
        held, refused = [], []
        for name in queryset.order_by("name").values_list("name", flat=True):
            try:
                services.hold_collection(name, actor=request.user, reason=form.cleaned_data["reason"])
                held.append(name)
            except (*REFUSALS, Collection.DoesNotExist) as exc:
                refused.append(f"{name}: {exc}")
        if held:
            self.message_user(request, f"held {len(held)} collection(s): {', '.join(held)}", messages.SUCCESS)
        for reason in refused[:MAX_MESSAGES]:
            self.message_user(request, f"hold refused for {reason}", messages.WARNING)
        return None

    @admin.action(description="Release selected collections (and their held batches and jobs)", permissions=["change"])
    def release_collections(self, request: HttpRequest, queryset: QuerySet[Collection]) -> None:
        """Release each through services.release_collection; say per collection what was queued for release."""
        for name in queryset.order_by("name").values_list("name", flat=True):
            try:
                _, batches, jobs = services.release_collection(name, actor=request.user)
            except (*REFUSALS, Collection.DoesNotExist) as exc:
                self.message_user(request, f"release refused for {name}: {exc}", messages.WARNING)
                continue
            self.message_user(
                request, f"released {name}: {batches} held batch(es) and {jobs} held job(s) queued for release",
                messages.SUCCESS,
            )


# --- profiles ------------------------------------------------------------------------------


def processing_tasks() -> list[str]:
    """The Celery tasks registered in this process (with EXTRA_TASK_MODULES) that may be a processing task.

    Operators choose them (ALLOWED_TASKS, the users' list, does not apply), but never an
    internal one (kernel.user_tasks: the engine's commands and services, Celery's).
    """

    return sorted(name for name in task_registry.tasks(app) if not user_tasks.is_internal(name))


class ProfileForm(forms.ModelForm):  # type: ignore[type-arg]
    """A profile, its task checked against the registered tasks and its e-mail lines against e-mail syntax."""

    webhook_url = forms.URLField(
        assume_scheme="https", required=False, max_length=500, help_text=Profile._meta.get_field("webhook_url").help_text,
    )
    callback_url = forms.URLField(
        assume_scheme="https", required=False, max_length=500, help_text=Profile._meta.get_field("callback_url").help_text,
    )

    class Meta:
        model = Profile
        fields = ["name", "collection", "enabled", "task", "priority", "identifier_prefix", "notify_emails",
                  "webhook_url", "callback_url", "summary_on_queue"]
        widgets = {"notify_emails": forms.Textarea(attrs={"rows": 3, "cols": 60})}

    def clean_task(self) -> str:
        name = str(self.cleaned_data["task"]).strip()
        known = processing_tasks()
        if name not in known:
            ingest = [task for task in known if "ingest" in task] or known
            raise ValidationError(
                "No processing task %(name)s is registered here (workers and this site import "
                "EXTRA_TASK_MODULES); registered: %(known)s.",
                params={"name": repr(name), "known": ", ".join(ingest) or "none"}, code="unknown_task",
            )
        return name

    def clean_notify_emails(self) -> str:
        lines = [line.strip() for line in str(self.cleaned_data["notify_emails"]).splitlines() if line.strip()]
        for line in lines:
            try:
                validate_email(line)
            except ValidationError as exc:
                raise ValidationError(f"{line!r} is not an e-mail address (one per line)", code="email") from exc
        return "\n".join(lines)


@admin.register(Profile)
class ProfileAdmin(AdminEdited):
    """Profiles: the processing task (checked), default priority, minted identifiers, report targets."""

    form = ProfileForm
    list_display = ["name", "collection", "task", "priority", "identifier_prefix", "targets", "enabled"]
    list_filter = ["enabled", "collection"]
    search_fields = ["name", "task", "collection__name"]
    ordering = ["name"]
    list_select_related = ["collection"]
    fieldsets = [
        (None, {"fields": ["name", "collection", "enabled", "task", "priority", "identifier_prefix"]}),
        ("Notifications", {"fields": ["notify_emails", "webhook_url", "callback_url", "summary_on_queue"]}),
    ]

    @admin.display(description="reports to")
    def targets(self, obj: Profile) -> str:
        found = obj.email_targets() + ([obj.webhook_url] if obj.webhook_url else [])
        return ", ".join(found) or "-"


# --- ingest settings -----------------------------------------------------------------------


class IngestSettingsForm(forms.ModelForm):  # type: ignore[type-arg]
    """Sizes are not negative; a waiting job is looked at again after at least a second."""

    class Meta:
        model = IngestSettings
        fields = ["reserve_bytes", "provision_sleep_seconds", "large_job_bytes", "large_job_priority"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for name in ("reserve_bytes", "large_job_bytes"):
            if data.get(name) is not None and data[name] < 0:
                self.add_error(name, "must be 0 or more")
        if data.get("provision_sleep_seconds") is not None and data["provision_sleep_seconds"] < 1:
            self.add_error("provision_sleep_seconds", "must be at least 1 second")
        return data


@admin.register(IngestSettings)
class IngestSettingsAdmin(AdminEdited):
    """The one ingest settings row: its list opens it (created with the BATCH_* defaults); never added twice or deleted."""

    form = IngestSettingsForm
    list_display = ["__str__", "reserve", "provision_sleep_seconds", "large_job", "large_job_priority"]
    fieldsets = [
        ("Provisioning", {"fields": ["reserve_bytes", "provision_sleep_seconds"]}),
        ("Large jobs", {"fields": ["large_job_bytes", "large_job_priority"]}),
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return super().has_add_permission(request) and not IngestSettings.objects.exists()

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        """The list is the row: open it (the first read creates it from the settings)."""
        if not self.has_view_or_change_permission(request):
            return super().changelist_view(request, extra_context)  # Django's 403
        row = ingest_settings()
        return HttpResponseRedirect(reverse("admin:batches_ingestsettings_change", args=[row.pk]))

    @admin.display(description="reserve")
    def reserve(self, obj: IngestSettings) -> str:
        return size(obj.reserve_bytes)

    @admin.display(description="large job above")
    def large_job(self, obj: IngestSettings) -> str:
        return size(obj.large_job_bytes)

