"""The "Tries" section of the action, workflow and batch-job pages, and a try's download (kernel.tries).

Newest first: each try's status, run and attempt, worker, times and error on one row; its
traceback and log open under it (`<details>`), and download as a text file. What is shown is
what was stored, through the reader's masker (kernel.secrets: the owner and job admins see values).
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from kernel.display import exact_time, status_label
from kernel.models import TaskTry
from kernel.permissions import is_admin
from kernel.secrets import Masker, masker

SHOWN_TRIES = 50  # the newest tries on a page; the API pages through all of them


def tries_table(tries: QuerySet[TaskTry], mask: Masker, *, names: bool = True) -> SafeString:
    """The tries, newest first, each with its traceback and log to open and download ("none yet" without any)."""
    rows = list(tries.order_by("-id")[:SHOWN_TRIES + 1])
    if not rows:
        return format_html('<span id="tries" class="quiet">none yet</span>')
    more = len(rows) > SHOWN_TRIES
    body = format_html_join("", "{}", ((_row(masked(row, mask), names=names),) for row in rows[:SHOWN_TRIES]))
    note = format_html('<p class="quiet">the newest {} are shown; the API lists every try</p>', SHOWN_TRIES) if more else ""
    return format_html(
        '<div id="tries" class="op-scroll"><table class="op-tries"><thead><tr>{}<th>run</th><th>try</th>'
        "<th>status</th><th>worker</th><th>started</th><th>ended</th><th>error</th><th></th></tr></thead>"
        "<tbody>{}</tbody></table>{}</div>",
        format_html("<th>node</th>") if names else "", body, note,
    )


def masked(row: TaskTry, mask: Masker) -> TaskTry:
    """The try as its reader is shown it (its error, traceback and log through the masker; not saved)."""
    row.error_message, row.traceback, row.log = mask.text(row.error_message), mask.text(row.traceback), mask.text(row.log)
    return row


def _row(row: TaskTry, *, names: bool) -> SafeString:
    download = reverse("admin:kernel_try_download", args=[row.pk])
    details = ""
    if row.traceback or row.log:
        parts = []
        if row.traceback:
            parts.append(format_html("<div><b>traceback</b><pre class=\"op-log\">{}</pre></div>", row.traceback))
        if row.log:
            dropped = format_html(' <span class="quiet">({} earlier characters dropped)</span>', row.log_dropped) \
                if row.log_dropped else ""
            parts.append(format_html("<div><b>log</b>{}<pre class=\"op-log\">{}</pre></div>", dropped, row.log))
        details = format_html(
            '<tr class="op-try-detail"><td colspan="{}"><details{}><summary>traceback and log</summary>{}</details></td></tr>',
            9 if names else 8, " open" if row.traceback else "", format_html_join("", "{}", ((part,) for part in parts)),
        )
    return format_html(
        '<tr id="try-{}">{}<td class="num">{}</td><td class="num">{}</td><td>{}</td><td class="op-try-worker">{}</td>'
        '<td class="op-try-time">{}</td><td class="op-try-time">{}</td><td class="op-try-error">{}</td>'
        '<td><a href="{}" download>download</a></td></tr>{}',
        row.pk, format_html("<td>{}</td>", row.name) if names else "", row.run, row.attempt, status_label(row.status),
        row.worker or "-", exact_time(row.started_at), exact_time(row.ended_at),
        _error(row)[:300] or "-",
        download, details,
    )


def _error(row: TaskTry) -> str:
    """`code: message`, the code once (a message often starts with its exception's name)."""
    if not row.error_code or row.error_message.startswith(row.error_code):
        return row.error_message
    return f"{row.error_code}: {row.error_message}"


def as_text(row: TaskTry) -> str:
    """The whole try as a text file: what it was, how it ended, its traceback and its log."""
    lines = [
        f"{row.kind} {row.object_id} ({row.name})", f"run {row.run}, try {row.attempt}, on {row.worker or '-'}",
        f"status {row.status}", f"started {row.started_at.isoformat() if row.started_at else '-'}",
        f"ended {row.ended_at.isoformat()}",
    ]
    if row.error_message:
        lines.append(f"error {_error(row)}")
    if row.traceback:
        lines += ["", "--- traceback ---", row.traceback.rstrip("\n")]
    if row.log:
        dropped = f" ({row.log_dropped} earlier characters dropped)" if row.log_dropped else ""
        lines += ["", f"--- log{dropped} ---", row.log.rstrip("\n")]
    return "\n".join(lines) + "\n"


def download(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: one try as `<object>-run<r>-try<n>.log` (staff only: the site's admin_view wraps it).

    With COORD_RESTRICT_READS a try could belong to a job its reader may not read: only job
    admins download then (the pages' own tables are shown with the job's page, which checks).
    """
    if settings.COORD_RESTRICT_READS and not is_admin(request.user):
        raise PermissionDenied("COORD_RESTRICT_READS: only job admins download tries here; the job's page shows them")
    row = get_object_or_404(TaskTry, pk=pk)
    if not is_admin(request.user):  # a try names no owner here: values under secret names are masked
        row = masked(row, masker())
    response = HttpResponse(as_text(row), content_type="text/plain; charset=utf-8")
    name = "".join(c if c.isalnum() or c in "-_.@" else "_" for c in row.object_id)
    response["Content-Disposition"] = f'attachment; filename="{name}-run{row.run}-try{row.attempt}.log"'
    return response
