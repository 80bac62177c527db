"""What the batch pages show, as plain functions: status labels, the progress bar, why a job waits, history and files.

No queries here: callers pass the counts (`batches.services.job_counts`, one grouped query
for a page of batches) and the rows they loaded.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html, format_html_join

from batches.choices import QUEUES, RESUME_STAGE
from batches.choices import JobStatus as J
from batches.models import BatchJob
from kernel.display import exact_time, status_colour, status_label

#: The progress bar's colours: the statuses' own (kernel.display, the palette of every page).
GREEN, RED, BLUE, GREY, HELD, DELETED = (status_colour(s) for s in ("completed", "failed", "processing", "pending",
                                                                       "held", "deleted"))
#: Pipeline stages a job walks through (beyond pending): coloured as "processing".
STAGES = frozenset(QUEUES - {J.PENDING})
#: The progress bar's segments: (label, colour, the job statuses it counts), in the order drawn.
SEGMENTS: tuple[tuple[str, str, frozenset[str]], ...] = (
    ("completed", GREEN, frozenset({J.COMPLETED})),
    ("failed", RED, frozenset({J.FAILED})),
    ("in stages", BLUE, STAGES),
    ("waiting", GREY, frozenset({J.PENDING})),
    ("held", HELD, frozenset({J.HELD})),
    ("deleted", DELETED, frozenset({J.DELETED})),
)
ERROR_EXCERPT = 160


def badge(status: str) -> str:
    """A status as the one coloured label of every page (batch, job or delivery status); stages as "processing"."""
    return status_label(status, like="processing" if status in STAGES else None)


def when(value: datetime | None) -> str:
    """A time as every page writes it (`2026-11-27 14:03:05 UTC`, kernel.display.exact_time), or '-'."""
    return exact_time(value)


def two_lines(value: datetime | None) -> str:
    """A time for a narrow column: the date, then the time and zone, never broken inside either."""
    day, _, clock = when(value).partition(" ")
    return format_html('<span class="nowrap">{}</span> <span class="nowrap">{}</span>', day, clock)


def size(value: int | None) -> str:
    """Bytes as a short figure (1.5 MB), or '-' when unknown."""
    if value is None:
        return "-"
    amount = float(value)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(amount) < 1000 or unit == "TB":
            return f"{int(amount)} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1000
    return f"{value} B"  # pragma: no cover - the loop always returns


def excerpt(text: str, length: int = ERROR_EXCERPT) -> str:
    """The last non-empty line of an error (where the reason is), cut to `length`."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = lines[-1] if lines else ""
    return line if len(line) <= length else line[: length - 1] + "…"


def batch_link(batch_id: int) -> str:
    """`bid0000017`, linked to the batch's page."""
    url = reverse("admin:batches_batch_change", args=[batch_id])
    return format_html('<a href="{}">{}</a>', url, f"bid{batch_id:07d}")


def job_link(job_id: int) -> str:
    """`jid0000042`, linked to the job's page."""
    url = reverse("admin:batches_batchjob_change", args=[job_id])
    return format_html('<a href="{}">{}</a>', url, f"jid{job_id:07d}")


# --- progress ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    """One part of a progress bar: what it counts, its colour, how many, and its share in percent."""

    label: str
    colour: str
    count: int
    percent: float


def segments(counts: dict[str, int]) -> list[Segment]:
    """A batch's job counts by status grouped into the bar's segments (empty ones left out)."""
    total = sum(counts.values())
    found = []
    for label, colour, statuses in SEGMENTS:
        n = sum(counts.get(status, 0) for status in statuses)
        if n:
            found.append(Segment(label, colour, n, round(100 * n / total, 2)))
    return found


def progress_bar(counts: dict[str, int], width: int = 110) -> str:
    """The stacked bar of a batch's jobs by state, with 'completed/total' and the failures under it."""
    total = sum(counts.values())
    if not total:
        return format_html('<span class="batch-progress-none">{}</span>', "no jobs yet")
    parts = segments(counts)
    title = ", ".join(f"{s.label} {s.count}" for s in parts)
    bar = format_html_join(
        "", '<span class="segment segment-{}" style="width:{}%;background:{}" title="{}: {}"></span>',
        ((s.label.replace(" ", "-"), s.percent, s.colour, s.label, s.count) for s in parts),
    )
    failed = counts.get(J.FAILED, 0)
    return format_html(
        '<span class="batch-progress" title="{}"><span class="bar" style="width:{}px">{}</span>'
        '<span class="figures">{}/{}{}</span></span>',
        title, width, bar, counts.get(J.COMPLETED, 0), total,
        format_html(' <span class="failed">{} failed</span>', failed) if failed else "",
    )


# --- why a job is where it is --------------------------------------------------------------


def waiting_reason(job: BatchJob, now: datetime | None = None) -> str:
    """What the job waits for, as an operator needs to read it: held, blocked, space, a slot; or what failed.

    Needs `job.batch.collection` (select it with the job).
    """
    now = now or timezone.now()
    status = job.status
    if status == J.HELD:
        collection = job.batch.collection
        if collection.held:
            reason = f" ({collection.held_reason})" if collection.held_reason else ""
            return format_html("held: collection {} is held{}", collection.name, reason)
        return format_html("held: collection {} was released; release the job", collection.name)
    if status in QUEUES:
        if job.dispatched:
            return format_html('<span class="running">{} runs</span>', status)
        if job.blocked_by_id:
            return format_html("blocked by {}: an older version of the same object", job_link(job.blocked_by_id))
        if job.not_before is not None and job.not_before > now:
            if status == J.PROVISIONING:
                return format_html("waits for space until {}", when(job.not_before))
            return format_html("waits until {}", when(job.not_before))
        return format_html("waits for a slot since {}", when(job.queued_at))
    if status == J.FAILED:
        return format_html('<span class="error">{}</span>', excerpt(job.error) or "failed")
    return "-"


def resume_hint(job: BatchJob) -> str:
    """Where a failed job would restart: resume (after its last success) or only requeue."""
    if job.status != J.FAILED:
        return "-"
    stage = RESUME_STAGE.get(job.last_successful_status)
    return f"resume restarts at {stage}" if stage else "no stage succeeded: requeue it (from the start)"


# --- a job's page ---------------------------------------------------------------------------


def _time(value: Any) -> datetime | None:
    return parse_datetime(value) if isinstance(value, str) else None


def duration(seconds: float) -> str:
    """A stage's run time: 0.25 s, 14 s, 3 min 5 s, 2 h 4 min."""
    if seconds < 10:
        return f"{seconds:.2f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(int(seconds), 60)
    if minutes < 120:
        return f"{minutes} min {rest} s"
    return f"{minutes // 60} h {minutes % 60} min"


def history_rows(history: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """A job's stage history as table rows: stage, to, queued, started, ended, duration, note, waits.

    Times show the date only when it differs from the time before (most histories fit in a day).
    """
    rows = []
    day = ""

    def at(value: datetime | None) -> str:
        nonlocal day
        if value is None:
            return ""
        full = when(value)
        shown = full if full[:10] != day else full[11:]
        day = full[:10]
        return shown

    for entry in history:
        queued, started, ended = _time(entry.get("waited_since")), _time(entry.get("started")), _time(entry.get("at"))
        run = (ended - started).total_seconds() if started and ended else None
        rows.append({
            "stage": entry.get("stage", ""), "to": entry.get("to", ""),
            "to_badge": badge(str(entry.get("to", ""))) if entry.get("to") != entry.get("stage") else "",
            "queued": at(queued), "started": at(started), "ended": at(ended),
            "duration": duration(run) if run is not None else "",
            "note": str(entry.get("note", "")),
            "waits": int(entry.get("tries", 0)) if entry.get("waits") else 0,
        })
    return rows


def file_rows(files: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """A job's files as table rows: name, size, digest (expected, and computed when it differs), downloaded."""
    rows = []
    for entry in files:
        expected = entry.get("digest") or {}
        computed = entry.get("computed") or {}
        digest = f"{expected.get('algorithm')}:{expected.get('value')}" if expected.get("value") else ""
        if computed.get("value") and computed.get("value") != expected.get("value"):
            digest = (digest + " · " if digest else "") + f"computed {computed.get('algorithm')}:{computed.get('value')}"
        rows.append({
            "name": entry.get("name", ""), "url": entry.get("url", ""), "size": size(entry.get("size")),
            "digest": digest or "-", "downloaded": bool(entry.get("done")),
            "from_container": bool(entry.get("from_container")),
        })
    return rows


def identifiers(job: BatchJob) -> str:
    """Primary id (or the one supplied, not yet checked) and local ids, short."""
    primary = job.primary_id or job.supplied_primary_id
    local = ", ".join(str(v) for v in job.local_ids or [])
    if primary and local:
        return format_html('<span class="primary-id">{}</span><br><span class="local-ids">{}</span>', primary, local)
    return format_html("{}", primary or local or "-")
