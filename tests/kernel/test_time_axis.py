"""The time axis of the operator pages (kernel.time_axis): buckets, ticks, ranges and their moves; no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kernel.time_axis import (
    DAY,
    EARLIEST,
    HOUR,
    LATEST,
    MAX_COLUMNS,
    MINUTE,
    RangeError,
    Window,
    by_severity,
    ceil_to,
    choose_step,
    floor_to,
    frequency_step,
    make_axis,
    navigation,
    tick_format,
    tick_moments,
    worst_status,
)

T = datetime(2026, 3, 11, 14, 37, 12, tzinfo=UTC)  # a Wednesday


@pytest.mark.parametrize(("step", "floor"), [
    pytest.param(MINUTE, datetime(2026, 3, 11, 14, 37, tzinfo=UTC), id="minute"),
    pytest.param(15 * MINUTE, datetime(2026, 3, 11, 14, 30, tzinfo=UTC), id="quarter-hour"),
    pytest.param(6 * HOUR, datetime(2026, 3, 11, 12, tzinfo=UTC), id="six-hours-from-midnight"),
    pytest.param(DAY, datetime(2026, 3, 11, tzinfo=UTC), id="day-at-utc-midnight"),
    pytest.param(7 * DAY, datetime(2026, 3, 9, tzinfo=UTC), id="week-on-monday"),
])
def test_buckets_start_at_round_moments(step: timedelta, floor: datetime) -> None:
    """A moment's bucket starts at the round moment before it, so every page puts it in the same bucket."""
    assert floor_to(T, step) == floor
    assert ceil_to(T, step) == floor + step
    assert ceil_to(floor, step) == floor  # a boundary is its own ceiling


@pytest.mark.parametrize(("span", "step"), [
    pytest.param(timedelta(minutes=45), MINUTE, id="under-an-hour-by-minute"),
    pytest.param(timedelta(hours=48), HOUR, id="two-days-by-hour"),
    pytest.param(timedelta(days=10), 6 * HOUR, id="ten-days-by-six-hours"),
    pytest.param(timedelta(days=450), 14 * DAY, id="fifteen-months-by-fortnight"),
    pytest.param(timedelta(days=365 * 100), 2 * 364 * DAY, id="a-century-beyond-the-ladder"),
])
def test_the_bucket_is_the_smallest_that_fits_the_columns(span: timedelta, step: timedelta) -> None:
    """A range of any length is drawn in at most MAX_COLUMNS aligned buckets, as fine as that allows."""
    begin = datetime(2026, 1, 1, tzinfo=UTC)
    assert choose_step(begin, begin + span) == step
    axis = make_axis(begin, begin + span)
    assert axis.step == step and axis.columns <= MAX_COLUMNS
    assert axis.start <= begin and axis.end >= begin + span  # the whole range is on the axis


def test_an_axis_places_moments_in_buckets_and_fractions() -> None:
    """Bucket i holds [start + i*step, start + (i+1)*step); outside the axis there is no bucket; fractions clamp."""
    axis = make_axis(datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 3, tzinfo=UTC))
    assert (axis.step, axis.columns) == (HOUR, 48)
    assert axis.index(datetime(2026, 1, 1, tzinfo=UTC)) == 0
    assert axis.index(datetime(2026, 1, 2, 23, 59, tzinfo=UTC)) == 47
    assert axis.index(axis.end) is None and axis.index(axis.start - MINUTE) is None
    assert axis.boundaries()[0] == axis.start and axis.boundaries()[-1] == axis.end == axis.bucket_starts()[-1] + HOUR
    assert axis.fraction(datetime(2026, 1, 2, tzinfo=UTC)) == 0.5
    assert axis.fraction(axis.end + DAY) == 1.0 and axis.fraction(axis.start - DAY) == 0.0


def test_the_axis_refuses_naive_datetimes() -> None:
    """Naive datetimes are bugs: the axis takes aware ones only."""
    with pytest.raises(ValueError, match="naive"):
        floor_to(datetime(2026, 1, 1), HOUR)  # noqa: DTZ001 - the naive datetime under test


@pytest.mark.parametrize(("begin", "end", "reason"), [
    pytest.param(T, T, "end after it begins", id="empty"),
    pytest.param(T, T - HOUR, "end after it begins", id="backwards"),
    pytest.param(datetime(1900, 1, 1, tzinfo=UTC), T, "between", id="before-1970"),
    pytest.param(T, datetime(2300, 1, 1, tzinfo=UTC), "between", id="after-2200"),
])
def test_a_range_that_cannot_be_drawn_is_refused(begin: datetime, end: datetime, reason: str) -> None:
    """A range ends after it begins and lies in the years allowed (no overflow on any move)."""
    with pytest.raises(RangeError, match=reason):
        Window(begin, end)


def test_the_moves_keep_the_length_and_reach_the_first_and_last_moments() -> None:
    """Earlier/later shift by the length; zoom halves or doubles around the middle; first starts at the earliest
    moment, last ends just after the latest, all covers both."""
    window = Window(datetime(2026, 1, 10, tzinfo=UTC), datetime(2026, 1, 12, tzinfo=UTC))
    first, last = datetime(2025, 1, 1, 7, tzinfo=UTC), datetime(2026, 2, 1, 5, tzinfo=UTC)
    moves = navigation(window, first, last)
    assert moves.earlier == Window(datetime(2026, 1, 8, tzinfo=UTC), datetime(2026, 1, 10, tzinfo=UTC))
    assert moves.later == Window(datetime(2026, 1, 12, tzinfo=UTC), datetime(2026, 1, 14, tzinfo=UTC))
    assert moves.zoom_in == Window(datetime(2026, 1, 10, 12, tzinfo=UTC), datetime(2026, 1, 11, 12, tzinfo=UTC))
    assert moves.zoom_out == Window(datetime(2026, 1, 9, tzinfo=UTC), datetime(2026, 1, 13, tzinfo=UTC))
    assert moves.first == Window(first, first + 2 * DAY)
    assert moves.last is not None and moves.last.end == last + MINUTE and moves.last.span == 2 * DAY
    assert moves.whole == Window(first, last + MINUTE)
    empty = navigation(window, None, None)
    assert empty.first is None and empty.last is None and empty.whole is None


def test_the_moves_stay_inside_the_years_allowed() -> None:
    """Moving or zooming out at the edges of the allowed years clamps instead of overflowing."""
    window = Window(EARLIEST, EARLIEST + DAY)
    assert window.shifted(-100 * DAY) == window
    assert Window(LATEST - DAY, LATEST).shifted(DAY) == Window(LATEST - DAY, LATEST)
    wide = Window(EARLIEST, LATEST).zoomed(2.0)
    assert wide.begin == EARLIEST and wide.end == LATEST
    assert Window(T, T + MINUTE).zoomed(0.5).span == MINUTE  # a minute at least


@pytest.mark.parametrize(("span", "interval", "fmt"), [
    pytest.param(timedelta(hours=2), 15 * MINUTE, "%H:%M", id="hours-by-quarter"),
    pytest.param(timedelta(days=2), 6 * HOUR, "%m-%d %H:%M", id="days-by-six-hours"),
    pytest.param(timedelta(days=40), 7 * DAY, "%m-%d", id="weeks"),
    pytest.param(timedelta(days=800), 364 * DAY, "%Y-%m-%d", id="years"),
])
def test_ticks_are_round_moments_inside_the_axis(span: timedelta, interval: timedelta, fmt: str) -> None:
    """At most eight ticks, each a whole multiple of a round interval, all inside the axis."""
    start = datetime(2026, 1, 1, 0, 7, tzinfo=UTC)
    found, moments = tick_moments(start, start + span)
    assert found == interval and 1 <= len(moments) <= 8
    assert all(start <= m <= start + span and floor_to(m, interval) == m for m in moments)
    assert tick_format(interval, span) == fmt


@pytest.mark.parametrize(("counts", "worst"), [
    pytest.param({"SUCCEEDED": 40, "FAILED": 1}, "FAILED", id="one-failure-shows"),
    pytest.param({"SUCCEEDED": 3, "RUNNING": 1, "WAITING": 2}, "RUNNING", id="running-before-waiting"),
    pytest.param({"OK": 2, "ERROR": 1}, "ERROR", id="node-error"),
    pytest.param({"SUCCEEDED": 2, "SKIPPED": 5}, "SUCCEEDED", id="skipped-least"),
    pytest.param({"SUCCEEDED": 0}, "", id="nothing-counted"),
    pytest.param({"ODD": 1, "SUCCEEDED": 1}, "SUCCEEDED", id="unknown-last"),
])
def test_a_bucket_shows_its_most_relevant_status(counts: dict[str, int], worst: str) -> None:
    """Failures first, then what is at work, then what waits, then what ended well."""
    assert worst_status(counts) == worst


def test_statuses_sort_by_severity() -> None:
    """Legends list statuses in the order the buckets rank them."""
    assert by_severity(["SUCCEEDED", "KILLED", "WAITING", "FAILED", "ODD"]) == [
        "FAILED", "KILLED", "WAITING", "SUCCEEDED", "ODD"]


@pytest.mark.parametrize(("frequency", "unit", "step"), [
    pytest.param("60", "MINUTE", HOUR, id="hourly-in-minutes"),
    pytest.param("1", "DAY", DAY, id="daily"),
    pytest.param("1", "MONTH", 30 * DAY, id="monthly-as-30-days"),
    pytest.param("0 * * * *", "CRON", HOUR, id="cron-as-an-hour"),
    pytest.param("0", "MINUTE", HOUR, id="zero-as-an-hour"),
])
def test_a_coordinators_step_comes_from_its_frequency(frequency: str, unit: str, step: timedelta) -> None:
    """A default range shows a number of the job's nominal times; what cannot be read counts as an hour."""
    assert frequency_step(frequency, unit) == step
