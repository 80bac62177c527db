"""Bulk verbs on batches and jobs: each goes through `batches.services`, refusals are reported per object.

A delete the service refuses with NeedsConfirmation (the seed: the depositor is never told)
shows a confirmation page listing what will be deleted; its button posts the same action
again with `confirm=yes`, which calls the service with `confirmed=True` (checked again
there, and again in the command). Setting a priority and holding collections ask for their
value on an intermediate page first. Nothing here writes a status.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse

from batches.commands import NeedsConfirmation
from kernel.admin_kit import MAX_MESSAGES
from kernel.permissions import JobPermissionDenied
from kernel.statemachine import IllegalTransition

#: More than this many objects in one bulk verb is refused: each is checked and queued in the request.
MAX_SELECTION = 1000
CONFIRMATION_SHOWN = 200
REFUSALS = (JobPermissionDenied, IllegalTransition, ValueError)  # IllegalTransition is a ValueError; named for readers


@dataclass
class Outcome:
    """What a bulk verb did: queued (labels), refused (reasons), waiting for a confirmation (id, reason)."""

    done: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    ask: list[tuple[int, str]] = field(default_factory=list)


def selected_ids(modeladmin: admin.ModelAdmin[Any], request: HttpRequest, queryset: QuerySet[Any]) -> list[int] | None:
    """The selection's ids in order, or None (reported) when it is larger than MAX_SELECTION."""
    ids = list(queryset.order_by("pk").values_list("pk", flat=True)[: MAX_SELECTION + 1])
    if len(ids) > MAX_SELECTION:
        modeladmin.message_user(
            request, f"Select at most {MAX_SELECTION} at a time (each is checked and queued now); nothing was done",
            messages.ERROR,
        )
        return None
    return ids


def run_each(ids: Sequence[int], call: Callable[[int], Any], label: Callable[[int], str],
             missing: type[Exception]) -> Outcome:
    """Call the service for each id: queued, refused (with the reason), or waiting for a confirmation."""
    outcome = Outcome()
    for pk in ids:
        try:
            call(pk)
        except NeedsConfirmation as exc:
            outcome.ask.append((pk, str(exc)))
        except (*REFUSALS, missing) as exc:
            outcome.refused.append(f"{label(pk)}: {exc}")
        else:
            outcome.done.append(label(pk))
    return outcome


def report(modeladmin: admin.ModelAdmin[Any], request: HttpRequest, verb: str, noun: str, outcome: Outcome) -> None:
    """One success message naming what was queued, one warning per refusal (the first MAX_MESSAGES)."""
    if outcome.done:
        more = f" and {len(outcome.done) - MAX_MESSAGES} more" if len(outcome.done) > MAX_MESSAGES else ""
        shown = ", ".join(outcome.done[:MAX_MESSAGES]) + more
        modeladmin.message_user(request, f"{verb} queued for {len(outcome.done)} {noun}: {shown}", messages.SUCCESS)
    for reason in outcome.refused[:MAX_MESSAGES]:
        modeladmin.message_user(request, f"{verb} refused for {reason}", messages.WARNING)
    if len(outcome.refused) > MAX_MESSAGES:
        modeladmin.message_user(request, f"... and {len(outcome.refused) - MAX_MESSAGES} more refused", messages.WARNING)


def confirmed(request: HttpRequest) -> bool:
    """The confirmation page's button was pressed."""
    return request.POST.get("confirm") == "yes"


def _page(modeladmin: admin.ModelAdmin[Any], request: HttpRequest, template: str, ids: Sequence[Any],
          **context: Any) -> TemplateResponse:
    opts = modeladmin.model._meta
    base = {
        **modeladmin.admin_site.each_context(request),
        "opts": opts,
        "action": request.POST.get("action", ""),
        "ids": list(ids),
        "checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "changelist_url": reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"),
        "media": modeladmin.media,
    }
    return TemplateResponse(request, template, {**base, **context})


def confirmation_page(modeladmin: admin.ModelAdmin[Any], request: HttpRequest, *, noun: str,
                      items: list[dict[str, Any]], ids: Sequence[int]) -> TemplateResponse:
    """The page asking to confirm a delete: each object, why it needs a confirmation, what goes with it."""
    return _page(
        modeladmin, request, "admin/batches/delete_confirmation.html", ids,
        title=f"Delete {len(ids)} {noun}?", noun=noun, items=items[:CONFIRMATION_SHOWN],
        more=max(0, len(items) - CONFIRMATION_SHOWN),
    )


def value_page(modeladmin: admin.ModelAdmin[Any], request: HttpRequest, *, title: str, intro: str,
               form: forms.Form, objects: Sequence[Model], button: str) -> TemplateResponse:
    """An intermediate page asking for the verb's value (a priority, a reason) before it runs."""
    return _page(
        modeladmin, request, "admin/batches/action_form.html", [o.pk for o in objects],
        title=title, intro=intro, form=form, objects=list(objects[:CONFIRMATION_SHOWN]),
        more=max(0, len(objects) - CONFIRMATION_SHOWN), button=button,
    )


def applying(request: HttpRequest) -> bool:
    """The intermediate page's form was sent (not the first click in the list)."""
    return request.POST.get("apply") == "yes"


class PriorityForm(forms.Form):
    """The new priority: 0 runs first, 99 last."""

    priority = forms.IntegerField(min_value=0, max_value=99, help_text="0 runs first, 99 last; the default is 5")


class HoldForm(forms.Form):
    """Why the collections are held (shown to operators and on their batches)."""

    reason = forms.CharField(max_length=255, required=False, help_text="optional; shown with the hold")
