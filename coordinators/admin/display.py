"""What the job and action pages share: the status history (a table and the admin's "History" page), pending in words.

Plain functions over a model admin and an object: they import no admin class of this
package, so every page module can use them.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from coordinators.models import StatusChange
from kernel.admin_kit import HISTORY_ROWS, shown
from kernel.admin_kit import render_status_history as render_history
from kernel.admin_kit import status_history_table as history_table
from kernel.secrets import Masker


def status_history_table(object_id: str, kind: str, secrets: Masker | None = None) -> str:
    """A job's or action's status changes, oldest first: when, from, to, by, why (the table of every History page)."""
    changes = list(StatusChange.objects.filter(object_id=object_id, kind=kind).order_by("-at", "-id")[:HISTORY_ROWS])
    return history_table(changes[::-1], secrets)


def render_status_history(modeladmin: admin.ModelAdmin[Any], request: HttpRequest, object_id: str, kind: str) -> Any:
    """The admin's "History" page of a job or action: its status changes instead of the (empty) form log."""
    return render_history(modeladmin, request, object_id, lambda obj: status_history_table(obj.pk, kind, shown(obj)))


def pending_words(pending: bool) -> str:
    """A pending flag in words: a red cross reads as an error, and "no" is the normal state."""
    return "yes: a command on it is in flight" if pending else "no"
