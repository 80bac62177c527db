"""Cron-like frequencies (newer reference 4.4.4): the reference's examples and its error rules."""

from __future__ import annotations

from datetime import UTC, timedelta

import pytest

from datasets.timeline import (
    Frequency,
    InvalidFrequencyError,
    format_datetime,
    iter_nominal_times,
    parse_datetime,
    parse_frequency,
    resolve_timezone,
    to_local,
)
from datasets.timeline.cron import CronSchedule

P = parse_datetime


def firings(expression: str, start: str, count: int, tz: str = "UTC") -> list[str]:
    zone = resolve_timezone(tz)
    return [format_datetime(t) for t in iter_nominal_times(P(start), None, Frequency.from_cron(expression), zone, limit=count)]


@pytest.mark.parametrize(
    ("expression", "start", "expected"),
    [
        pytest.param("10 9 * * *", "2013-10-18T00:00Z", ["2013-10-18T09:10Z", "2013-10-19T09:10Z"], id="daily-9-10"),
        pytest.param("10,30,45 9 * * *", "2013-10-18T00:00Z", ["2013-10-18T09:10Z", "2013-10-18T09:30Z", "2013-10-18T09:45Z"], id="list"),
        pytest.param("0,10 15 * * 2-6", "2013-10-18T00:00Z", ["2013-10-18T15:00Z", "2013-10-18T15:10Z", "2013-10-21T15:00Z"], id="weekdays-3pm"),
        pytest.param("0/20 9-17 * * 2-5", "2013-10-17T16:50Z", ["2013-10-17T17:00Z", "2013-10-17T17:20Z", "2013-10-17T17:40Z", "2013-10-21T09:00Z"], id="mon-thu-every-20"),
        pytest.param("1 2 L-3 * *", "2013-10-01T00:00Z", ["2013-10-28T02:01Z", "2013-11-27T02:01Z"], id="third-to-last-day"),
        pytest.param("1 2 6W 3 ?", "2013-01-01T00:00Z", ["2013-03-06T02:01Z", "2014-03-06T02:01Z", "2015-03-06T02:01Z", "2016-03-07T02:01Z"], id="nearest-weekday"),
        pytest.param("1 2 * 3 3#2", "2013-01-01T00:00Z", ["2013-03-12T02:01Z", "2014-03-11T02:01Z"], id="second-tuesday-of-march"),
        pytest.param("0 10,13 * * MON-FRI", "2013-10-18T11:00Z", ["2013-10-18T13:00Z", "2013-10-21T10:00Z"], id="weekday-names"),
        pytest.param("0 0 LW * *", "2013-11-01T00:00Z", ["2013-11-29T00:00Z", "2013-12-31T00:00Z"], id="last-weekday"),
        pytest.param("0 0 * * 6L", "2013-11-01T00:00Z", ["2013-11-29T00:00Z", "2013-12-27T00:00Z"], id="last-friday"),
        pytest.param("0 0 29 2 *", "2013-01-01T00:00Z", ["2016-02-29T00:00Z"], id="leap-day-only"),
        pytest.param("30 23 * * *", "2013-10-18T23:30Z", ["2013-10-18T23:30Z"], id="start-inclusive"),
    ],
)
def test_reference_cron_examples(expression: str, start: str, expected: list[str]) -> None:
    """Each example of the reference fires at the listed UTC minutes."""
    assert firings(expression, start, len(expected)) == expected


def test_cron_schedule_on_a_dst_wall_clock_skips_the_gap() -> None:
    """CronSchedule read on a DST zone's clock fires at 02:30 local except on the spring-forward day (no 02:30).

    Coordinators read cron on the processing time zone's clock (issue 16, tests/datasets/timeline/
    test_cron_zone.py); the schedule itself still handles a clock with DST.
    """
    zone = resolve_timezone("America/New_York")
    schedule = CronSchedule.parse("30 2 * * *")
    first = schedule.next_at_or_after(P("2009-03-07T00:00Z"), zone)
    assert first is not None
    second = schedule.next_at_or_after(first + timedelta(minutes=1), zone)
    assert second is not None
    assert [to_local(t, zone).strftime("%m-%d %H:%M") for t in (first, second)] == ["03-07 02:30", "03-09 02:30"]


@pytest.mark.parametrize(
    "expression",
    ["0 10 30 2 *", "61 * * * *", "* 24 * * *", "* * * 13 *", "* * * * 8", "*/0 * * * *", "* * *", "a b c d e", "0 0 1W,2 * *", "0 0 * * 2#6"],
)
def test_invalid_cron_is_refused(expression: str) -> None:
    """Feb 30th, out-of-range values and malformed fields are InvalidFrequencyError (reference 4.4.4)."""
    with pytest.raises(InvalidFrequencyError):
        parse_frequency(expression)


def test_cron_end_is_exclusive() -> None:
    """Firings stop before the end time."""
    times = list(iter_nominal_times(P("2013-10-18T09:00Z"), P("2013-10-18T10:00Z"), Frequency.from_cron("0/15 * * * *"), UTC))
    assert [format_datetime(t) for t in times] == ["2013-10-18T09:00Z", "2013-10-18T09:15Z", "2013-10-18T09:30Z", "2013-10-18T09:45Z"]
