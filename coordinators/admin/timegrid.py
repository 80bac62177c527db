"""The time grid the coordinator grid and a bundle's timeline share: rows of jobs (and workflow nodes), nominal time across.

One axis for every row (kernel.time_axis): the operator picks a range (from/to, zoom, earlier,
later, first, last, all) and the bucket size follows from it, so a job of 10,000 actions is a
row of at most MAX_COLUMNS squares, each the worst status of its bucket with a count. The
counts come from SQL (one GROUP BY for the actions, one for the nodes of their workflow runs),
never one query per action. A square of one action opens that action (`#tries`); one of many
opens the action list filtered to the job and the bucket; a node's square opens its workflow
run at the node (`#node-<name>`).

Used by `grid` and `gantt` here and by the bundles admin (which sits above this app).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django.db.models import Case, Count, F, Func, IntegerField, Max, Min, Value, When
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html_join
from django.utils.safestring import SafeString
from django.utils.text import slugify

from coordinators.admin.pages import url_maker
from coordinators.models import CoordinatorAction
from kernel.display import exact_time, human_duration, status_colour, status_words
from kernel.time_axis import (
    EARLIEST,
    MAX_COLUMNS,
    MINUTE,
    Axis,
    RangeError,
    Window,
    by_severity,
    ceil_to,
    floor_to,
    make_axis,
    navigation,
    tick_format,
    tick_moments,
    worst_status,
)
from workflows.models import WorkflowNode

#: A default range shows this many nominal times of the (median) job: one square per action.
DEFAULT_COLUMNS = 48
#: The formats a from/to may be written in (datetime-local inputs send the first).
INPUT_FORMATS = ("%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d")


# --- the range asked for ----------------------------------------------------------------------


def parse_moment(raw: str, name: str) -> datetime:
    """A from/to of the query string, in the project's time zone; RangeError naming the field otherwise."""
    text = raw.strip()
    for fmt in INPUT_FORMATS:
        try:
            naive = datetime.strptime(text, fmt)  # noqa: DTZ007 - made aware on the next line, in the project's zone
        except ValueError:
            continue
        try:
            return timezone.make_aware(naive)
        except (ValueError, OverflowError) as exc:  # a moment skipped by a DST change, or beyond the calendar
            raise RangeError(f"{name}: {text!r} is not a time in {timezone.get_current_timezone_name()}") from exc
    raise RangeError(f"{name}: {text[:40]!r} is not a date or a date and time (YYYY-MM-DDTHH:MM)")


def requested_window(params: Mapping[str, str], default: Window) -> Window:
    """The range of the query string (`from`, `to`; one alone keeps the default's length); RangeError if bad."""
    raw_from, raw_to = params.get("from", "").strip(), params.get("to", "").strip()
    if not raw_from and not raw_to:
        return default
    begin = parse_moment(raw_from, "from") if raw_from else None
    end = parse_moment(raw_to, "to") if raw_to else None
    if begin is not None and end is not None:
        if end <= begin:
            raise RangeError("to must come after from")
        return Window(begin, end)
    if begin is not None:
        return Window.starting(begin, default.span)
    assert end is not None  # noqa: S101 - one of the two is set (checked above)
    return Window(max(EARLIEST, end - default.span), end)


def default_window(latest: datetime | None, steps: Sequence[timedelta], now: datetime) -> Window:
    """The range a page opens on: DEFAULT_COLUMNS nominal times of the median job, up to the newest one (or now)."""
    step = statistics.median_low(sorted(steps)) if steps else timedelta(hours=1)
    window = Window.ending(latest or now, DEFAULT_COLUMNS * step)
    # Whole minutes, as the from/to inputs write them: the axis drawn is the range the inputs show.
    return Window(floor_to(window.begin, MINUTE), ceil_to(window.end, MINUTE))


def _input_value(moment: datetime, *, up: bool) -> str:
    """A moment as a datetime-local value in the project's zone, to the minute (rounded up for an end)."""
    local = timezone.localtime(moment)
    if up and (local.second or local.microsecond):
        local += timedelta(minutes=1)
    return local.strftime("%Y-%m-%dT%H:%M")


@dataclass(frozen=True)
class RangeControls:
    """What the range form shows: the from/to values, the links of the buttons, the bucket size, an error."""

    from_value: str
    to_value: str
    hidden: list[tuple[str, str]]
    links: dict[str, str]
    description: str
    error: str = ""


def range_controls(window: Window, axis: Axis | None, earliest: datetime | None, latest: datetime | None,
                   params: Mapping[str, str], *, anchor: str = "", error: str = "") -> RangeControls:
    """The controls of a range: keep the other query parameters, move the range (first, earlier, zoom, later, last, all)."""
    kept = {key: value for key, value in params.items() if key not in ("from", "to") and value}
    suffix = f"#{anchor}" if anchor else ""

    def link(target: Window | None) -> str:
        if target is None:
            return ""
        query = {**kept, "from": _input_value(target.begin, up=False), "to": _input_value(target.end, up=True)}
        return f"?{urlencode(query)}{suffix}"

    moves = navigation(window, earliest, latest)
    links = {
        "first": link(moves.first), "earlier": link(moves.earlier), "zoom_in": link(moves.zoom_in),
        "zoom_out": link(moves.zoom_out), "later": link(moves.later), "last": link(moves.last),
        "whole": link(moves.whole),
    }
    if axis is None:
        description = f"{exact_time(window.begin)} → {exact_time(window.end)} ({human_duration(window.span)})"
    else:
        description = (f"{exact_time(axis.start)} → {exact_time(axis.end)} · {axis.columns} "
                       f"bucket{'s' if axis.columns != 1 else ''} of {human_duration(axis.step)}")
    return RangeControls(
        from_value=_input_value(window.begin, up=False), to_value=_input_value(window.end, up=True),
        hidden=sorted(kept.items()), links=links, description=description, error=error,
    )


def axis_ticks(start: datetime, end: datetime, max_ticks: int = 8) -> list[dict[str, Any]]:
    """The labels under an axis: round moments, their place in %, in the project's time zone."""
    interval, moments = tick_moments(start, end, max_ticks)
    fmt = tick_format(interval, end - start)
    span = (end - start).total_seconds()
    ticks = []
    for moment in moments:
        left = round(100 * (moment - start).total_seconds() / span, 3)
        edge = "edge-left" if left < 4 else ("edge-right" if left > 96 else "")
        ticks.append({"left": left, "edge": edge, "label": timezone.localtime(moment).strftime(fmt),
                      "title": exact_time(moment), "at": moment.isoformat()})
    return ticks


def tick_lines(ticks: Sequence[Mapping[str, Any]]) -> str:
    """A CSS background drawing a hairline under each tick across a track (one rule for every row of a page)."""
    line = "linear-gradient(var(--hairline-color),var(--hairline-color))"
    return ",".join(f"{line} {tick['left']}% 0/1px 100% no-repeat" for tick in ticks) or "none"


# --- the squares --------------------------------------------------------------------------------


class BucketIndex(Func):
    """The bucket of a datetime column on an axis, computed in SQL: floor((moment - start) / step).

    Arithmetic on SQLite (seconds since the epoch) and PostgreSQL (EXTRACT(EPOCH ...)): a
    constant cost per row; elsewhere a CASE over the axis' boundaries. Rows must be filtered to
    the axis first (start <= moment < end): the index of a moment before the start is not
    defined.
    """

    output_field = IntegerField()

    def __init__(self, path: str, axis: Axis) -> None:
        super().__init__(F(path))
        self.path, self.axis = path, axis

    def _seconds(self) -> tuple[int, int]:
        return int(self.axis.start.timestamp()), int(self.axis.step.total_seconds())

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        sql, params = compiler.compile(self.source_expressions[0])
        start, step = self._seconds()
        return f"((CAST(strftime('%%s', {sql}) AS INTEGER) - %s) / %s)", [*params, start, step]

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        sql, params = compiler.compile(self.source_expressions[0])
        start, step = self._seconds()
        return f"CAST(FLOOR((EXTRACT(EPOCH FROM {sql}) - %s) / %s) AS INTEGER)", [*params, start, step]

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:  # type: ignore[override]
        path, bounds = self.path, self.axis.boundaries()[1:]
        case = Case(
            *[When(**{f"{path}__lt": bound}, then=Value(i)) for i, bound in enumerate(bounds)],
            default=Value(-1), output_field=IntegerField(),
        )
        return compiler.compile(case.resolve_expression(compiler.query))  # type: ignore[no-any-return]


def bucket_of(path: str, axis: Axis) -> BucketIndex:
    """The bucket index of `path` (a datetime field) on the axis, as an SQL expression."""
    return BucketIndex(path, axis)


@dataclass
class Bucket:
    """What one square stands for: counts by status, the lowest and highest action number, one id to open."""

    counts: dict[str, int] = field(default_factory=dict)
    low: int = 0
    high: int = 0
    nominal: datetime | None = None
    target: str = ""  # the one action's or workflow run's id when the bucket holds one
    first_started: datetime | None = None

    @property
    def total(self) -> int:
        """How many actions (or node runs) fall in the bucket."""
        return sum(self.counts.values())

    def add(self, status: str, n: int, low: int, high: int, nominal: datetime | None, target: str,
            started: datetime | None = None) -> None:
        """Fold one GROUP BY row (one status) into the bucket."""
        self.counts[status] = self.counts.get(status, 0) + n
        self.low = min(self.low, low) if self.low else low
        self.high = max(self.high, high)
        self.nominal = nominal if self.nominal is None or (nominal and nominal < self.nominal) else self.nominal
        self.target = target
        if started is not None and (self.first_started is None or started < self.first_started):
            self.first_started = started


def action_buckets(job_ids: Iterable[str], axis: Axis) -> dict[str, dict[int, Bucket]]:
    """The jobs' actions inside the axis, counted by bucket and status: one GROUP BY query."""
    ids = list(job_ids)
    found: dict[str, dict[int, Bucket]] = {}
    if not ids:
        return found
    rows = (
        CoordinatorAction.objects.filter(job_id__in=ids, nominal_time__gte=axis.start, nominal_time__lt=axis.end)
        .annotate(bucket=bucket_of("nominal_time", axis)).order_by()
        .values_list("job_id", "bucket", "status")
        .annotate(n=Count("pk"), low=Min("number"), high=Max("number"), nominal=Min("nominal_time"))
    )
    for job_id, index, status, n, low, high, nominal in rows:
        bucket = found.setdefault(job_id, {}).setdefault(index, Bucket())
        bucket.add(status, n, low, high, nominal, CoordinatorAction.action_id(job_id, low))
    return found


def node_buckets(job_ids: Iterable[str], axis: Axis) -> dict[str, dict[str, dict[int, Bucket]]]:
    """The action nodes of the jobs' current workflow runs, by job, node name, bucket and status: one query.

    Only workflow applications (a `task:` run has no nodes of its own) and only action nodes
    (start, end, fork, join, decision and kill are the graph's, not work).
    """
    ids = list(job_ids)
    found: dict[str, dict[str, dict[int, Bucket]]] = {}
    if not ids:
        return found
    nominal = "workflow__coord_action__nominal_time"
    rows = (
        WorkflowNode.objects.filter(
            workflow__coord_action__job_id__in=ids, **{f"{nominal}__gte": axis.start, f"{nominal}__lt": axis.end},
            workflow__run=F("workflow__coord_action__run_count"),
        )
        .exclude(type__startswith=":").exclude(workflow__app_path__startswith="task:")
        .annotate(bucket=bucket_of(nominal, axis)).order_by()
        .values_list("workflow__coord_action__job_id", "name", "bucket", "status")
        .annotate(n=Count("pk"), low=Min("workflow__coord_action__number"), high=Max("workflow__coord_action__number"),
                  nominal=Min(nominal), run=Min("workflow_id"), started=Min("started_at"))
    )
    for job_id, name, index, status, n, low, high, when, run, started in rows:
        bucket = found.setdefault(job_id, {}).setdefault(name, {}).setdefault(index, Bucket())
        bucket.add(status, n, low, high, when, run, started)
    return found


def bounds(job_ids: Iterable[str]) -> tuple[datetime | None, datetime | None]:
    """The first and last nominal times among the jobs' actions (one aggregate query)."""
    ids = list(job_ids)
    if not ids:
        return None, None
    found = CoordinatorAction.objects.filter(job_id__in=ids).aggregate(first=Min("nominal_time"), last=Max("nominal_time"))
    return found["first"], found["last"]


@dataclass(frozen=True)
class Square:
    """A drawn square: its bucket, colour, the status it shows, how many it stands for, where it leads."""

    index: int
    colour: str
    status: str
    count: int
    url: str
    title: str


class Links:
    """The URLs squares lead to, each reversed once per page (a page links thousands of squares)."""

    def __init__(self) -> None:
        self.action = url_maker("admin:coordinators_coordinatoraction_change")
        self.workflow = url_maker("admin:workflows_workflowjob_change")
        self.actions = reverse("admin:coordinators_coordinatoraction_changelist")

    def action_list(self, job_id: str, axis: Axis, index: int) -> str:
        """The action list filtered to the job and the bucket's nominal times."""
        begin = axis.start + index * axis.step
        query = urlencode({"job": job_id, "nominal_time__gte": str(begin), "nominal_time__lt": str(begin + axis.step)})
        return f"{self.actions}?{query}"


def _counts_words(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{counts[s]} {status_words(s)}" for s in by_severity(counts))


def action_squares(name: str, job_id: str, buckets: Mapping[int, Bucket], axis: Axis, links: Links) -> list[Square]:
    """A job row's squares: one action opens its page at its tries; several open the list of the bucket."""
    squares = []
    for index in sorted(buckets):
        if index < 0:
            continue
        bucket = buckets[index]
        status = worst_status(bucket.counts)
        if bucket.total == 1:
            url = f"{links.action(bucket.target)}#tries"
            title = f"{name} #{bucket.low} · {exact_time(bucket.nominal)} · {status_words(status)}"
        else:
            url = links.action_list(job_id, axis, index)
            begin = axis.start + index * axis.step
            title = (f"{name}: {bucket.total} actions #{bucket.low}-#{bucket.high} · {exact_time(begin)} → "
                     f"{exact_time(begin + axis.step)} · {_counts_words(bucket.counts)}")
        squares.append(Square(index, status_colour(status), status, bucket.total, url, title))
    return squares


def node_squares(node: str, job_id: str, buckets: Mapping[int, Bucket], axis: Axis, links: Links) -> list[Square]:
    """A node row's squares: one run opens its workflow run at the node; several the action list of the bucket."""
    squares = []
    for index in sorted(buckets):
        if index < 0:
            continue
        bucket = buckets[index]
        status = worst_status(bucket.counts)
        if bucket.total == 1:
            url = f"{links.workflow(bucket.target)}#node-{slugify(node)}"
            title = f"{node} of #{bucket.low} · {exact_time(bucket.nominal)} · {status_words(status)}"
        else:
            url = links.action_list(job_id, axis, index)
            title = f"{node} of {bucket.total} actions #{bucket.low}-#{bucket.high} · {_counts_words(bucket.counts)}"
        squares.append(Square(index, status_colour(status), status, bucket.total, url, title))
    return squares


def squares_html(squares: Sequence[Square], axis: Axis, kind: str) -> SafeString:
    """A row's squares placed on its track by bucket (rendered here: a page may draw 10,000 of them)."""
    width = 100 / axis.columns
    return format_html_join(
        "",
        '<a class="tg-cell {}" href="{}" title="{}" aria-label="{}" data-status="{}" data-count="{}" '
        'data-bucket="{}" style="left:{}%;width:{}%;background:{}">{}</a>',
        ((kind, s.url, s.title, s.title, s.status, s.count, s.index, round(s.index * width, 4), round(width, 4),
          s.colour, s.count if s.count > 1 else "") for s in squares),
    )


def node_rows(job_id: str, nodes: Mapping[str, Mapping[int, Bucket]], axis: Axis, links: Links) -> list[dict[str, Any]]:
    """A job's node rows, in the order the nodes first started (then by name)."""
    def first(name: str) -> tuple[datetime, str]:
        started = [b.first_started for b in nodes[name].values() if b.first_started is not None]
        return (min(started) if started else datetime.max.replace(tzinfo=timezone.get_current_timezone()), name)

    return [
        {"name": name, "cells": squares_html(node_squares(name, job_id, nodes[name], axis, links), axis, "node")}
        for name in sorted(nodes, key=first)
    ]


def legend(statuses: Iterable[str]) -> list[dict[str, str]]:
    """The statuses drawn, in severity order, with their colour."""
    return [{"status": s, "words": status_words(s), "colour": status_colour(s)} for s in by_severity(statuses)]


def grid_axis(window: Window) -> Axis:
    """The axis a range is drawn on: at most MAX_COLUMNS buckets."""
    return make_axis(window.begin, window.end, MAX_COLUMNS)


def window_or_error(params: Mapping[str, str], default: Window) -> tuple[Window, str]:
    """The range asked for, or the default and why the one asked for was refused."""
    try:
        return requested_window(params, default), ""
    except RangeError as exc:
        return default, str(exc)
