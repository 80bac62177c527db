"""How the operator pages write ids, statuses, times and durations so that a row fits one line at 1,280 px.

The one status palette and the one status label of every page (coordinators, bundles,
workflows, batches, operations, commands, the dashboard): a status has the same colour
everywhere. Pure functions (no database); the templates reach them through the `operator`
template tags.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.utils import formats, timezone
from django.utils.html import format_html

#: Statuses written as one word by Oozie, and what an operator reads instead.
STATUS_WORDS = {
    "RUNNINGWITHERROR": "running with error",
    "SUSPENDEDWITHERROR": "suspended with error",
    "PAUSEDWITHERROR": "paused with error",
    "DONEWITHERROR": "done with error",
    "PREPSUSPENDED": "prep suspended",
    "PREPPAUSED": "prep paused",
    "TIMEDOUT": "timed out",
    "NOT_STARTED": "not started",
    "IN_PROCESS": "in process",
}

GREEN, BLUE, LIGHT_BLUE, INDIGO = "#2e7d32", "#1565c0", "#0277bd", "#4527a0"
GREY, BLUE_GREY, LIGHT_GREY, TEAL = "#757575", "#546e7a", "#9e9e9e", "#00897b"
ORANGE, DEEP_ORANGE, BROWN, LIGHT_BROWN = "#ef6c00", "#d84315", "#6d4c41", "#a1887f"
RED, MAGENTA, NEAR_BLACK = "#c62828", "#ad1457", "#263238"

#: One colour per status, for every page: done green, at work blue, waiting blue-grey, held
#: brown, failed red, timed out magenta, killed near-black, skipped teal, ignored light grey.
#: Statuses an operator must tell apart have different hues: FAILED, TIMEDOUT and KILLED;
#: WAITING, SKIPPED and IGNORED. Oozie's statuses are upper case; batches' lower case.
STATUS_COLOURS = {
    # coordinators, bundles, workflows, SLA, operations, commands
    "SUCCEEDED": GREEN, "MET": GREEN, "DONE": GREEN, "COMPLETED": GREEN, "OK": GREEN,
    "RUNNING": BLUE, "IN_PROCESS": BLUE, "ROLLING_BACK": BLUE, "SUBMITTED": LIGHT_BLUE, "READY": INDIGO,
    "WAITING": BLUE_GREY, "USER_RETRY": BLUE_GREY, "NOT_STARTED": GREY, "PREP": GREY, "PENDING": GREY, "ABSENT": GREY,
    "RUNNINGWITHERROR": ORANGE, "DONEWITHERROR": DEEP_ORANGE,
    "SUSPENDED": BROWN, "SUSPENDEDWITHERROR": BROWN, "PREPSUSPENDED": BROWN,
    "PAUSED": LIGHT_BROWN, "PAUSEDWITHERROR": LIGHT_BROWN, "PREPPAUSED": LIGHT_BROWN, "HELD": BROWN,
    "FAILED": RED, "ERROR": RED, "MISS": RED, "PARKED": RED,
    "TIMEDOUT": MAGENTA, "KILLED": NEAR_BLACK, "CANCELLED": NEAR_BLACK,
    "SKIPPED": TEAL, "IGNORED": LIGHT_GREY,
    # batches and their jobs (a job in a pipeline stage is "processing"), deliveries
    "pending": GREY, "held": BROWN, "processing": BLUE, "reporting": INDIGO, "update-reporting": INDIGO,
    "completed": GREEN, "failed": RED, "deleted": LIGHT_BROWN,
    "SENT": GREEN, "SENDING": BLUE,
}
#: Colours of the pages that are not a status: a bar's empty track, an edge or outline of
#: something not reached, the ink of text on a light fill, error text (the admin's own).
TRACK, QUIET_LINE, INK, PAPER, CANVAS = "#e0e0e0", "#90a4ae", "#263238", "#ffffff", "#fafafa"
ERROR_TEXT = "var(--error-fg, #ba2121)"
#: Those colours by the names templates use (`{% colour "track" %}`).
PAGE_COLOURS = {"track": TRACK, "quiet_line": QUIET_LINE, "ink": INK, "paper": PAPER, "canvas": CANVAS,
                "edge_label": BLUE_GREY, "error_text": ERROR_TEXT}
DEFAULT_COLOUR = "#455a64"


def status_words(status: str | None) -> str:
    """`RUNNINGWITHERROR` as `running with error`, `TIMEDOUT` as `timed out`, others in lower case."""
    if not status:
        return "-"
    return STATUS_WORDS.get(status, status.replace("_", " ").lower())


def status_colour(status: str | None) -> str:
    """The colour of a status (grey-blue for one without its own)."""
    return STATUS_COLOURS.get(status or "", DEFAULT_COLOUR)


def status_label(status: str | None, *, pending: bool = False, like: str | None = None) -> str:
    """A status as a coloured label in words, the Oozie name in its title; `pending` adds a quiet mark.

    `like`: the status whose colour it takes (a batch job in a pipeline stage is coloured as
    "processing"). The label carries its own style, so it looks the same on pages without the
    operator stylesheet.
    """
    label = format_html(
        '<span class="status-label" title="{}" style="display:inline-block;color:#fff;background:{};'
        'padding:1px 6px;border-radius:3px;font-size:11px;line-height:16px;white-space:nowrap">{}</span>',
        status or "", status_colour(like or status), status_words(status),
    )
    if pending:
        return format_html('{} <span class="status-pending" title="a command on it is in flight">pending</span>', label)
    return label


def short_job_id(job_id: str) -> str:
    """`0000123-C` for `0000123-261122093000123-C`: the sequence and the kind (the full id goes in a title)."""
    parts = job_id.split("-")
    return f"{parts[0]}-{parts[-1]}" if len(parts) >= 3 else job_id


def short_action_id(action_id: str) -> str:
    """`0000123-C@7` for `0000123-261122093000123-C@7`."""
    job_id, sep, number = action_id.partition("@")
    return f"{short_job_id(job_id)}{sep}{number}"


def short_id_html(full: str, url: str | None = None) -> str:
    """The short form of a job or action id, the full id in its title, linked when `url` is given."""
    short = short_action_id(full) if "@" in full else short_job_id(full)
    if url:
        return format_html('<a href="{}" title="{}" class="short-id">{}</a>', url, full, short)
    return format_html('<span title="{}" class="short-id">{}</span>', full, short)


def human_duration(value: timedelta | float | None) -> str:
    """`17 ms`, `4.2 s`, `2 min 5 s`, `3 h 12 min`, `2 d 4 h`: two units at most; '-' for None."""
    if value is None:
        return "-"
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    if seconds < 1:
        return f"{sign}{round(seconds * 1000)} ms"
    if seconds < 10:
        return f"{sign}{seconds:.1f} s".replace(".0 s", " s")
    whole = round(seconds)
    if whole < 60:
        return f"{sign}{whole} s"
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{sign}{days} d {hours} h" if hours else f"{sign}{days} d"
    if hours:
        return f"{sign}{hours} h {minutes} min" if minutes else f"{sign}{hours} h"
    return f"{sign}{minutes} min {secs} s" if secs else f"{sign}{minutes} min"


def exact_time(value: datetime | None) -> str:
    """The one way a time is written on every page: `2026-11-27 14:03:05 UTC`, 24-hour, in the operator's
    time zone (TIME_ZONE) with its abbreviation, as the admin writes DATETIME_FORMAT (project/formats)."""
    if value is None:
        return "-"
    return formats.date_format(timezone.localtime(value), "DATETIME_FORMAT")


def time_html(value: datetime | None, *, day: datetime | None = None, stacked: bool = False, zone: bool = True) -> str:
    """A time in the one format, with the ISO instant in `datetime`.

    With `day` (a row's nominal time, shown beside it), a time on that same local day is
    written `14:03:05` and one in the same year `11-27 14:03:05` (the full time in the title),
    so a list of runs stays narrow. `stacked`: the date above the time, for a narrow column.
    `zone=False`: without the zone's abbreviation (a column whose every row has the same zone).
    """
    if value is None:
        return "-"
    text = full = exact_time(value)
    if day is not None:
        local, reference = timezone.localtime(value), timezone.localtime(day)
        if local.date() == reference.date():
            text = local.strftime("%H:%M:%S")
        elif local.year == reference.year:
            text = local.strftime("%m-%d %H:%M:%S")
    elif not zone:
        text = timezone.localtime(value).strftime("%Y-%m-%d %H:%M:%S")
    if stacked and text == full:
        day_text, _, clock = full.partition(" ")
        return format_html('<time datetime="{}" title="{}" class="nowrap">{}<br>{}</time>', value.isoformat(), full,
                           day_text, clock)
    return format_html('<time datetime="{}" title="{}">{}</time>', value.isoformat(), full, text)


def number_ranges(numbers: Iterable[int]) -> str:
    """`1-3,7,9-10` for 1, 2, 3, 7, 9, 10: the scope syntax of a rerun by action numbers."""
    ordered = sorted(set(numbers))
    parts: list[str] = []
    start = previous = None
    for n in [*ordered, None]:
        if start is not None and (n is None or previous is None or n != previous + 1):
            parts.append(str(start) if start == previous else f"{start}-{previous}")
            start = None
        if n is not None and start is None:
            start = n
        previous = n
    return ",".join(parts)


def frequency_words(frequency: str, time_unit: str) -> str:
    """`60` MINUTE as `1 h`, `1` DAY as `1 day`, `1` MONTH as `1 month`; a cron expression as written."""
    unit = (time_unit or "").upper()
    if not frequency.isdigit():
        return frequency
    count = int(frequency)
    if unit == "MINUTE":
        return human_duration(count * 60)
    if unit == "HOUR":
        return human_duration(count * 3600)
    words = {"DAY": "day", "WEEK": "week", "MONTH": "month", "YEAR": "year", "END_OF_DAY": "day",
             "END_OF_WEEK": "week", "END_OF_MONTH": "month"}
    if unit in words:
        return f"{count} {words[unit]}{'s' if count != 1 else ''}"
    return f"{frequency} {unit.lower()}".strip()
