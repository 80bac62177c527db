"""What the job and action pages share: the status history (a table and the admin's "History" page), pending in words.

Plain functions over a model admin and an object: they import no admin class of this
package, so every page module can use them.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from coordinators.models import StatusChange
from kernel.admin_kit import shown
from kernel.secrets import Masker, masker

#: The most status changes a page shows (the newest); the API pages through all of them.
HISTORY_ROWS = 200


def status_history_table(object_id: str, kind: str, secrets: Masker | None = None) -> str:
    """A job's or action's status changes, oldest first: from, to, when, by, why (secrets masked in why)."""
    secrets = secrets if secrets is not None else masker()
    changes = list(StatusChange.objects.filter(object_id=object_id, kind=kind).order_by("-at", "-id")[:HISTORY_ROWS])
    if not changes:
        return "no status change recorded"
    rows = format_html_join(
        "", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        ((change.at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S"), change.from_status or "-", change.to_status,
          change.by or "-", secrets.text(change.reason)[:300] or "-") for change in reversed(changes)),
    )
    return format_html(
        "<table><thead><tr><th>at (UTC)</th><th>from</th><th>to</th><th>by</th><th>why</th></tr></thead>"
        "<tbody>{}</tbody></table>", rows,
    )


def render_status_history(modeladmin: admin.ModelAdmin[Any], request: HttpRequest, object_id: str, kind: str) -> Any:
    """The admin's "History" page of a job or action: its status changes instead of the (empty) form log."""
    obj = modeladmin.get_object(request, unquote(object_id))
    if obj is None:
        raise Http404(f"no {modeladmin.opts.verbose_name} {object_id!r}")
    if not modeladmin.has_view_or_change_permission(request, obj):
        raise PermissionDenied
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": f"Status history: {obj.pk}", "subtitle": None, "object": obj, "opts": modeladmin.opts,
        "table": status_history_table(obj.pk, kind, shown(obj)), "change_url": reverse(
            f"admin:{modeladmin.opts.app_label}_{modeladmin.opts.model_name}_change", args=[quote(obj.pk)]),
    }
    return TemplateResponse(request, "admin/coordinators/status_history.html", context)


def pending_words(pending: bool) -> str:
    """A pending flag in words: a red cross reads as an error, and "no" is the normal state."""
    return "yes: a command on it is in flight" if pending else "no"
