"""The admin's verbs on a selection of jobs (or bundles): one by one, or as one operation past a threshold.

Shared by the coordinator and bundle pages: each says how one verb acts on one of its objects
(`apply_verb`, through its app's services, as the API and CLI do) and which refusals it reports.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from kernel.admin_kit import MAX_MESSAGES
from kernel.statemachine import IllegalTransition
from operations.bulk import VERBS as BULK_VERBS
from operations.bulk import admin_threshold, start_for_selection
from operations.services import OperationConflict


def _listed(items: list[str]) -> str:
    """The first MAX_MESSAGES items, and how many more."""
    more = f" and {len(items) - MAX_MESSAGES} more" if len(items) > MAX_MESSAGES else ""
    return ", ".join(items[:MAX_MESSAGES]) + more


class SelectionVerbs(admin.ModelAdmin[Any]):
    """A model admin's `run_verb` for its actions (kill, suspend, resume, start, ...); mixed in before its base."""

    #: The bulk operations' kind of object ("coordinator", "bundle") and its name on the page ("job", "bundle").
    bulk_kind: ClassVar[str] = ""
    noun: ClassVar[str] = "job"
    #: Refusals reported per object (besides a status that does not allow the verb).
    refusals: ClassVar[tuple[type[Exception], ...]] = ()

    def apply_verb(self, request: HttpRequest, object_id: str, verb: str) -> None:
        """Carry out the verb on one object as the operator (raise to refuse)."""
        raise NotImplementedError

    def run_as_operation(self, request: HttpRequest, queryset: QuerySet[Any], verb: str) -> None:
        """Start the bulk operation for the selection; a conflicting one running is reported, nothing started."""
        try:
            operation = start_for_selection(self.bulk_kind, verb, queryset, user=request.user, filter_text="admin selection")
        except OperationConflict as exc:
            self.message_user(request, f"{verb} not started: {exc}", messages.ERROR)
            return
        link = reverse("admin:operations_operation_change", args=[operation.pk])
        self.message_user(request, format_html(
            '{} of {} {}(s) runs as <a href="{}">operation {}</a>: its page shows the progress and what failed',
            verb, operation.remaining, self.noun, link, operation.pk,
        ), messages.SUCCESS)

    def run_verb(self, request: HttpRequest, queryset: QuerySet[Any], verb: str) -> None:
        """Call the domain action for each selected object as the operator; refusals are reported, not raised.

        More than BULK_ADMIN_THRESHOLD objects run as one operation (kill, suspend, resume): the
        page answers at once with a link to it, where its progress and failures show.
        """
        if verb in BULK_VERBS and queryset.count() > admin_threshold():
            self.run_as_operation(request, queryset, verb)
            return
        done: list[str] = []
        refused: list[str] = []
        skipped: list[str] = []
        for object_id in queryset.order_by("pk").values_list("pk", flat=True):
            try:
                self.apply_verb(request, object_id, verb)
                done.append(object_id)
            except IllegalTransition as exc:
                if verb not in BULK_VERBS:
                    refused.append(f"{object_id}: {exc}")
                else:  # the status makes the verb a no-op: skipped, as bulk operations and Oozie's API skip it
                    skipped.append(f"{object_id} ({str(exc).rpartition(': ')[2]})")
            except (*self.refusals, queryset.model.DoesNotExist) as exc:
                refused.append(f"{object_id}: {exc}")
        if done:
            self.message_user(request, f"{verb} queued for {len(done)} {self.noun}(s): {_listed(done)}", messages.SUCCESS)
        if skipped:
            self.message_user(request, f"{verb} skipped for {len(skipped)} {self.noun}(s) whose status makes it a "
                              f"no-op: {_listed(skipped)}", messages.INFO)
        for reason in refused[:MAX_MESSAGES]:
            self.message_user(request, f"{verb} refused for {reason}", messages.WARNING)
        if len(refused) > MAX_MESSAGES:
            self.message_user(request, f"... and {len(refused) - MAX_MESSAGES} more refused", messages.WARNING)
