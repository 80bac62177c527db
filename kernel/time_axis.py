"""One time axis for the operator pages: a range, its buckets, its ticks and its navigation (pure).

The coordinator grid, a bundle's timeline and the Gantt view draw their squares and bars on
this axis: nominal time (or wall-clock time) across, a range chosen by the operator, a bucket
size chosen from the range so that a range of any length fits `MAX_COLUMNS` columns. Buckets
are aligned to round moments in UTC (a 6 h bucket starts at 00:00, 06:00, ...; a week on a
Monday), so the same moment falls in the same bucket on every page.

Pure: no Django, no clock, no database; aware datetimes in, frozen dataclasses out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

MINUTE, HOUR, DAY = timedelta(minutes=1), timedelta(hours=1), timedelta(days=1)
#: The bucket sizes, smallest first; a range is drawn with the smallest that fits.
STEPS: tuple[timedelta, ...] = (
    MINUTE, 5 * MINUTE, 15 * MINUTE, 30 * MINUTE, HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR,
    DAY, 2 * DAY, 7 * DAY, 14 * DAY, 28 * DAY, 91 * DAY, 364 * DAY,
)
#: The most buckets a row shows: about 13 px each in the grid's width at 1,280 px.
MAX_COLUMNS = 60
#: The moment every bucket is aligned to: a Monday at 00:00 UTC (weeks start on Mondays).
ORIGIN = datetime(1970, 1, 5, tzinfo=UTC)
#: The earliest and latest moments a range may name (a year 1 or 9999 would overflow the arithmetic).
EARLIEST = datetime(1970, 1, 5, tzinfo=UTC)
LATEST = datetime(2200, 1, 1, tzinfo=UTC)

#: Statuses from the most to the least worth an operator's look: what a bucket of many actions shows.
SEVERITY: tuple[str, ...] = (
    "FAILED", "ERROR", "TIMEDOUT", "KILLED", "RUNNING", "USER_RETRY", "SUBMITTED", "PREP", "READY", "WAITING",
    "SUSPENDED", "SUCCEEDED", "OK", "SKIPPED", "IGNORED",
)
_RANK = {status: rank for rank, status in enumerate(SEVERITY)}


class RangeError(ValueError):
    """A range an operator asked for that cannot be drawn (end before start, outside the years allowed)."""


def _require_aware(*moments: datetime) -> None:
    for moment in moments:
        if moment.tzinfo is None or moment.utcoffset() is None:
            raise ValueError(f"naive datetime {moment!r}: the time axis takes aware datetimes only")


def floor_to(moment: datetime, step: timedelta) -> datetime:
    """The start of the bucket of size `step` that holds `moment` (buckets aligned to ORIGIN, in UTC)."""
    _require_aware(moment)
    buckets = (moment - ORIGIN) // step
    return ORIGIN + buckets * step


def ceil_to(moment: datetime, step: timedelta) -> datetime:
    """The first bucket boundary at or after `moment`."""
    floor = floor_to(moment, step)
    return floor if floor == moment else floor + step


def choose_step(begin: datetime, end: datetime, max_columns: int = MAX_COLUMNS,
                at_least: timedelta = MINUTE) -> timedelta:
    """The smallest bucket (not under `at_least`) with which [begin, end) fits in `max_columns` aligned buckets.

    Beyond the largest step of STEPS, a whole multiple of it.
    """
    _require_aware(begin, end)
    for step in STEPS:
        if step >= at_least and (ceil_to(end, step) - floor_to(begin, step)) / step <= max_columns:
            return step
    largest = STEPS[-1]
    return largest * math.ceil((end - begin) / (largest * (max_columns - 1)))


@dataclass(frozen=True)
class Axis:
    """Buckets of `step` from `start`: bucket i holds the moments in [start + i*step, start + (i+1)*step)."""

    start: datetime
    step: timedelta
    columns: int

    @property
    def end(self) -> datetime:
        """The end of the last bucket (excluded)."""
        return self.start + self.columns * self.step

    def bucket_starts(self) -> list[datetime]:
        """Where each bucket starts, oldest first."""
        return [self.start + i * self.step for i in range(self.columns)]

    def boundaries(self) -> list[datetime]:
        """The columns + 1 moments that bound the buckets: a moment in bucket i is >= boundaries[i], < [i+1]."""
        return [self.start + i * self.step for i in range(self.columns + 1)]

    def index(self, moment: datetime) -> int | None:
        """The bucket that holds `moment`, or None outside the axis."""
        if moment < self.start or moment >= self.end:
            return None
        return int((moment - self.start) // self.step)

    def fraction(self, moment: datetime) -> float:
        """Where `moment` sits across the axis, 0 at its start and 1 at its end (clamped)."""
        span = (self.end - self.start).total_seconds()
        return min(1.0, max(0.0, (moment - self.start).total_seconds() / span))


def make_axis(begin: datetime, end: datetime, max_columns: int = MAX_COLUMNS,
              at_least: timedelta = MINUTE) -> Axis:
    """The axis that covers [begin, end) with aligned buckets of the smallest step that fits `max_columns`."""
    step = choose_step(begin, end, max_columns, at_least)
    start = floor_to(begin, step)
    columns = max(1, int((ceil_to(end, step) - start) / step))
    return Axis(start=start, step=step, columns=columns)


@dataclass(frozen=True)
class Window:
    """A range of time an operator looks at: [begin, end), begin before end; the navigation moves it."""

    begin: datetime
    end: datetime

    def __post_init__(self) -> None:
        _require_aware(self.begin, self.end)
        if self.end <= self.begin:
            raise RangeError("the range must end after it begins")
        if self.begin < EARLIEST or self.end > LATEST:
            raise RangeError(f"the range must lie between {EARLIEST:%Y-%m-%d} and {LATEST:%Y-%m-%d}")

    @property
    def span(self) -> timedelta:
        """How long the range is."""
        return self.end - self.begin

    def shifted(self, by: timedelta) -> Window:
        """The same length moved by `by` (negative: earlier), kept inside the years allowed."""
        begin = min(max(self.begin + by, EARLIEST), LATEST - self.span)
        return Window(begin, begin + self.span)

    def zoomed(self, factor: float) -> Window:
        """The range `factor` times as long around the same middle (factor < 1 zooms in; at least a minute)."""
        span = max(MINUTE, self.span * factor)
        middle = self.begin + self.span / 2
        begin = max(EARLIEST, middle - span / 2)
        return Window(begin, min(LATEST, begin + span))

    @classmethod
    def ending(cls, end: datetime, span: timedelta) -> Window:
        """The range of length `span` that ends at `end` (just after it: the moment itself is inside)."""
        end = min(LATEST, end + MINUTE)
        return cls(max(EARLIEST, end - span), end)

    @classmethod
    def starting(cls, begin: datetime, span: timedelta) -> Window:
        """The range of length `span` that starts at `begin`."""
        begin = max(EARLIEST, begin)
        return cls(begin, min(LATEST, begin + span))

    @classmethod
    def covering(cls, first: datetime, last: datetime) -> Window:
        """The smallest range that holds both moments (a minute at least)."""
        return cls(max(EARLIEST, first), min(LATEST, max(last, first) + MINUTE))


@dataclass(frozen=True)
class Navigation:
    """Where the range controls lead: the first and last ranges that hold an action, earlier, later, zoom, all."""

    first: Window | None
    earlier: Window
    zoom_in: Window
    zoom_out: Window
    later: Window
    last: Window | None
    whole: Window | None


def navigation(window: Window, earliest: datetime | None, latest: datetime | None) -> Navigation:
    """The ranges the controls offer from `window`, given the first and last moments there is anything at."""
    return Navigation(
        first=Window.starting(earliest, window.span) if earliest is not None else None,
        earlier=window.shifted(-window.span),
        zoom_in=window.zoomed(0.5),
        zoom_out=window.zoomed(2.0),
        later=window.shifted(window.span),
        last=Window.ending(latest, window.span) if latest is not None else None,
        whole=Window.covering(earliest, latest) if earliest is not None and latest is not None else None,
    )


#: Tick intervals for the labels under an axis, smallest first.
TICKS: tuple[timedelta, ...] = (
    MINUTE, 2 * MINUTE, 5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE, HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR,
    12 * HOUR, DAY, 2 * DAY, 7 * DAY, 14 * DAY, 28 * DAY, 91 * DAY, 364 * DAY,
)


def tick_moments(start: datetime, end: datetime, max_ticks: int = 8) -> tuple[timedelta, list[datetime]]:
    """Round moments inside [start, end] to label an axis: the interval and at most `max_ticks` of them."""
    _require_aware(start, end)
    span = end - start
    interval = next((t for t in TICKS if span / t <= max_ticks), None)
    if interval is None:
        interval = TICKS[-1] * math.ceil(span / (TICKS[-1] * max_ticks))
    moments = []
    moment = ceil_to(start, interval)
    while moment <= end:
        moments.append(moment)
        moment += interval
    return interval, moments


def tick_format(interval: timedelta, span: timedelta) -> str:
    """The strftime format of the tick labels: seconds never, the date when the ticks are days apart."""
    if interval >= DAY:
        return "%Y-%m-%d" if span >= 364 * DAY else "%m-%d"
    if span > DAY:
        return "%m-%d %H:%M"
    return "%H:%M"


def worst_status(counts: Mapping[str, int]) -> str:
    """The status a bucket of several actions shows: the one most worth a look (SEVERITY), ties by name."""
    present = [status for status, n in counts.items() if n]
    if not present:
        return ""
    return min(present, key=lambda status: (_RANK.get(status, len(SEVERITY)), status))


def by_severity(statuses: Iterable[str]) -> list[str]:
    """Statuses ordered as SEVERITY orders them (unknown ones last, by name)."""
    return sorted(set(statuses), key=lambda status: (_RANK.get(status, len(SEVERITY)), status))


UNIT_SECONDS = {"MINUTE": 60, "HOUR": 3600, "DAY": 86400, "END_OF_DAY": 86400, "WEEK": 7 * 86400,
                "END_OF_WEEK": 7 * 86400, "MONTH": 30 * 86400, "END_OF_MONTH": 30 * 86400, "YEAR": 365 * 86400}


def frequency_step(frequency: str, time_unit: str) -> timedelta:
    """About how far apart a coordinator's nominal times are (a month is 30 days; a cron expression an hour)."""
    unit = UNIT_SECONDS.get((time_unit or "").upper())
    if not frequency.isdigit() or unit is None or int(frequency) < 1:
        return HOUR
    return timedelta(seconds=int(frequency) * unit)
