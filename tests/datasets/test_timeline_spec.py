"""The seed specification's example tables (sections 4.1, 4.4.1, 4.4.2, 6.6.1-6.6.5, 6.6.10) as tests.

Times in the tables are UTC in Oozie's format; `24:00` is the next day's midnight.
"""

from __future__ import annotations

import pytest

from datasets.timeline import (
    DatasetTimeline,
    Frequency,
    TimeUnit,
    days_in_month,
    first_nominal_time,
    format_datetime,
    frequency_minutes,
    hours_in_day,
    iter_nominal_times,
    parse_datetime,
    resolve_timezone,
    start_of_period,
    tz_offset,
)

P = parse_datetime
LA, UTC_, LONDON = "America/Los_Angeles", "UTC", "Europe/London"


def fmt(value: object) -> str:
    assert value is not None
    return format_datetime(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("2009-08-10T13:10Z", "2009-08-10T13:10Z", id="utc"),
        pytest.param("2009-08-10T13:10+0530", "2009-08-10T07:40Z", id="gmt-offset-india"),
        pytest.param("2009-08-10T24:00Z", "2009-08-11T00:00Z", id="end-of-day-24-00"),
        pytest.param("2009-12-31T24:00Z", "2010-01-01T00:00Z", id="end-of-year-24-00"),
        pytest.param("2008-02-28T24:00Z", "2008-02-29T00:00Z", id="leap-day-24-00"),
    ],
)
def test_datetime_representation(text: str, expected: str) -> None:
    """4.1: minute precision, UTC or a GMT offset; 24:00 is the next day's 00:00."""
    assert fmt(P(text)) == expected


# 4.4.1.1 coord:days(n): minutes of n whole local days starting with the nominal time's day.
@pytest.mark.parametrize(
    ("start", "tz", "n", "minutes", "first"),
    [
        pytest.param("2009-01-01T08:00Z", UTC_, 1, 1440, "2009-01-01T08:00Z", id="utc-jan01"),
        pytest.param("2009-01-01T08:00Z", LA, 1, 1440, "2009-01-01T08:00Z", id="la-jan01"),
        pytest.param("2009-01-01T08:00Z", LA, 2, 2880, "2009-01-01T08:00Z", id="la-jan01-two-days"),
        pytest.param("2009-03-08T08:00Z", UTC_, 1, 1440, "2009-03-08T08:00Z", id="utc-mar08"),
        pytest.param("2009-03-08T08:00Z", LONDON, 1, 1440, "2009-03-08T08:00Z", id="london-mar08"),
        pytest.param("2009-03-08T08:00Z", LA, 1, 1380, "2009-03-08T08:00Z", id="la-dst-switch-day"),
        pytest.param("2009-03-08T08:00Z", UTC_, 2, 2880, "2009-03-08T08:00Z", id="utc-two-days"),
        pytest.param("2009-03-08T08:00Z", LA, 2, 2820, "2009-03-08T08:00Z", id="la-two-days-over-switch"),
        # The table prints 2009-03-09T07:00Z as first occurrence, then says "for all these examples
        # the first occurrence will be at 08:00Z"; days(n) does not move the start (ADR 0004).
        pytest.param("2009-03-09T08:00Z", LA, 1, 1440, "2009-03-09T08:00Z", id="la-day-after-switch-adr-first-is-start"),
    ],
)
def test_days_frequency_minutes(start: str, tz: str, n: int, minutes: int, first: str) -> None:
    """4.4.1.1: coord:days(n) counts every minute of n local days (23 or 25 hours on DST days); the start is the first occurrence."""
    zone = resolve_timezone(tz)
    assert frequency_minutes(Frequency.days(n), P(start), zone) == minutes
    assert fmt(first_nominal_time(P(start), Frequency.days(n), zone)) == first


# 4.4.1.2 coord:endOfDays(n): first occurrence moved to the end of its local day.
@pytest.mark.parametrize(
    ("start", "tz", "minutes", "first"),
    [
        pytest.param("2009-01-01T08:00Z", UTC_, 1440, "2009-01-02T00:00Z", id="utc"),
        pytest.param("2009-01-01T08:00Z", LA, 1440, "2009-01-02T08:00Z", id="la-at-local-midnight"),
        pytest.param("2009-01-01T08:01Z", LA, 1440, "2009-01-02T08:00Z", id="la-just-after-midnight"),
        pytest.param("2009-01-01T18:00Z", LA, 1440, "2009-01-02T08:00Z", id="la-mid-day"),
        pytest.param("2009-03-07T09:00Z", LA, 1380, "2009-03-08T08:00Z", id="la-before-switch"),
        # Same first occurrence as the row above, yet the table prints 1440: the value is the minutes
        # of the day that starts at the first occurrence, the 23-hour 2009-03-08 (ADR 0004).
        pytest.param("2009-03-08T07:00Z", LA, 1380, "2009-03-08T08:00Z", id="la-late-evening-adr-1380-not-1440"),
        pytest.param("2009-03-09T07:00Z", LA, 1440, "2009-03-10T07:00Z", id="la-after-switch"),
    ],
)
def test_end_of_days_first_occurrence(start: str, tz: str, minutes: int, first: str) -> None:
    """4.4.1.2: the first occurrence is the start of the local day after the start's day; the value is that day's minutes."""
    zone = resolve_timezone(tz)
    occurrence = first_nominal_time(P(start), Frequency.end_of_days(1), zone)
    assert fmt(occurrence) == first
    assert frequency_minutes(Frequency.end_of_days(1), occurrence, zone) == minutes


# 4.4.2.1 coord:months(n); the first occurrence is the start for every row.
@pytest.mark.parametrize(
    ("start", "tz", "n", "minutes"),
    [
        pytest.param("2009-01-01T08:00Z", UTC_, 1, 44640, id="utc-jan"),
        pytest.param("2009-01-01T08:00Z", LA, 1, 44640, id="la-jan"),
        pytest.param("2009-01-01T08:00Z", LA, 2, 84960, id="la-jan-feb"),
        pytest.param("2009-03-08T08:00Z", UTC_, 1, 44640, id="utc-mar"),
        pytest.param("2009-03-08T08:00Z", LONDON, 1, 44580, id="london-mar-dst"),
        pytest.param("2009-03-08T08:00Z", LA, 1, 44580, id="la-mar-dst"),
        pytest.param("2009-03-08T08:00Z", UTC_, 2, 87840, id="utc-mar-apr"),
        pytest.param("2009-03-08T08:00Z", LA, 2, 87780, id="la-mar-apr"),
    ],
)
def test_months_frequency_minutes(start: str, tz: str, n: int, minutes: int) -> None:
    """4.4.2.1: coord:months(n) counts the minutes of n whole local months, DST included; the start is the first occurrence."""
    zone = resolve_timezone(tz)
    assert frequency_minutes(Frequency.months(n), P(start), zone) == minutes
    assert first_nominal_time(P(start), Frequency.months(n), zone) == P(start)


# 4.4.2.2 coord:endOfMonths(n): value is the first occurrence's month.
@pytest.mark.parametrize(
    ("start", "tz", "minutes", "first"),
    [
        pytest.param("2009-01-01T00:00Z", UTC_, 40320, "2009-02-01T00:00Z", id="utc-at-month-start"),
        pytest.param("2009-01-01T08:00Z", UTC_, 40320, "2009-02-01T00:00Z", id="utc-jan01"),
        pytest.param("2009-01-31T08:00Z", UTC_, 40320, "2009-02-01T00:00Z", id="utc-jan31"),
        pytest.param("2009-01-01T08:00Z", LA, 40320, "2009-02-01T08:00Z", id="la-jan"),
        pytest.param("2009-02-02T08:00Z", LA, 44580, "2009-03-01T08:00Z", id="la-feb02"),
        pytest.param("2009-02-01T08:00Z", LA, 44580, "2009-03-01T08:00Z", id="la-feb01"),
    ],
)
def test_end_of_months(start: str, tz: str, minutes: int, first: str) -> None:
    """4.4.2.2: first occurrence at the start of the next local month; minutes of that month."""
    zone = resolve_timezone(tz)
    occurrence = first_nominal_time(P(start), Frequency.end_of_months(1), zone)
    assert fmt(occurrence) == first
    assert frequency_minutes(Frequency.end_of_months(1), occurrence, zone) == minutes


LOGS = DatasetTimeline(P("2009-01-01T24:00Z"), Frequency.days(1), resolve_timezone("UTC"))
WEEKLY = DatasetTimeline(P("2009-01-07T24:00Z"), Frequency.days(7), resolve_timezone("UTC"))


@pytest.mark.parametrize(
    ("n", "logs", "weekly"),
    [
        pytest.param(0, "2009-05-29T24:00Z", "2009-05-27T24:00Z", id="current-0"),
        pytest.param(1, "2009-05-30T24:00Z", "2009-06-03T24:00Z", id="current-plus-1"),
        pytest.param(-1, "2009-05-28T24:00Z", "2009-05-20T24:00Z", id="current-minus-1"),
        pytest.param(-3, "2009-05-26T24:00Z", "2009-05-06T24:00Z", id="current-minus-3"),
    ],
)
def test_current(n: int, logs: str, weekly: str) -> None:
    """6.6.1: coord:current(n) depends on each dataset's initial instance and frequency."""
    nominal = P("2009-05-29T24:00Z")
    assert fmt(LOGS.current(nominal, n)) == fmt(P(logs))
    assert fmt(WEEKLY.current(nominal, n)) == fmt(P(weekly))


@pytest.mark.parametrize(
    ("n", "unit", "logs", "weekly"),
    [
        pytest.param(0, "MINUTE", "2009-05-29T24:00Z", "2009-05-27T24:00Z", id="zero-minute"),
        pytest.param(0, "HOUR", "2009-05-29T24:00Z", "2009-05-27T24:00Z", id="zero-hour"),
        pytest.param(0, "DAY", "2009-05-29T24:00Z", "2009-05-27T24:00Z", id="zero-day"),
        pytest.param(0, "MONTH", "2009-05-29T24:00Z", "2009-05-27T24:00Z", id="zero-month"),
        pytest.param(0, "YEAR", "2009-05-29T24:00Z", "2009-05-27T24:00Z", id="zero-year"),
        pytest.param(1440, "MINUTE", "2009-05-30T24:00Z", "2009-05-27T24:00Z", id="plus-1440-minutes"),
        pytest.param(24, "HOUR", "2009-05-30T24:00Z", "2009-05-27T24:00Z", id="plus-24-hours"),
        pytest.param(1, "DAY", "2009-05-30T24:00Z", "2009-05-27T24:00Z", id="plus-1-day-rewound"),
        pytest.param(-1440, "MINUTE", "2009-05-28T24:00Z", "2009-05-20T24:00Z", id="minus-1440-minutes"),
        pytest.param(-24, "HOUR", "2009-05-28T24:00Z", "2009-05-20T24:00Z", id="minus-24-hours"),
        pytest.param(-1, "DAY", "2009-05-28T24:00Z", "2009-05-20T24:00Z", id="minus-1-day"),
        pytest.param(-4320, "MINUTE", "2009-05-26T24:00Z", "2009-05-20T24:00Z", id="minus-4320-minutes"),
        pytest.param(-72, "HOUR", "2009-05-26T24:00Z", "2009-05-20T24:00Z", id="minus-72-hours"),
        pytest.param(-3, "DAY", "2009-05-26T24:00Z", "2009-05-20T24:00Z", id="minus-3-days"),
        pytest.param(11520, "MINUTE", "2009-06-06T24:00Z", "2009-06-03T24:00Z", id="plus-8-days-minutes"),
        pytest.param(192, "HOUR", "2009-06-06T24:00Z", "2009-06-03T24:00Z", id="plus-192-hours"),
        pytest.param(8, "DAY", "2009-06-06T24:00Z", "2009-06-03T24:00Z", id="plus-8-days"),
        pytest.param(10, "MINUTE", "2009-05-29T24:00Z", "2009-05-27T24:00Z", id="ten-minutes-rewound"),
    ],
)
def test_offset(n: int, unit: str, logs: str, weekly: str) -> None:
    """6.6.2 table (both editions): coord:offset(n, unit) moves current(0) by n units, then rewinds to an instance."""
    nominal = P("2009-05-29T24:00Z")
    assert fmt(LOGS.offset(nominal, n, unit)) == fmt(P(logs))
    assert fmt(WEEKLY.offset(nominal, n, unit)) == fmt(P(weekly))


def test_offset_start_instance_fast_forwards() -> None:
    """6.6.2 example 2: in start-instance, offset(-90, MINUTE) on an hourly dataset means current(-1)."""
    hourly = DatasetTimeline(P("2009-01-01T01:00Z"), Frequency.hours(1), resolve_timezone("UTC"))
    nominal = P("2009-05-29T24:00Z")
    assert hourly.offset(nominal, -90, "MINUTE", fast_forward=True) == hourly.current(nominal, -1)
    assert hourly.offset(nominal, -90, "MINUTE") == hourly.current(nominal, -2)  # rewound elsewhere


@pytest.mark.parametrize(
    ("nominal", "tz", "n", "hours"),
    [
        pytest.param("2009-01-01T08:00Z", UTC_, 0, 24, id="utc"),
        pytest.param("2009-01-01T08:00Z", LA, 0, 24, id="la"),
        pytest.param("2009-01-01T08:00Z", LA, -1, 24, id="la-previous-day"),
        pytest.param("2009-03-08T08:00Z", UTC_, 0, 24, id="utc-mar08"),
        pytest.param("2009-03-08T08:00Z", LONDON, 0, 24, id="london-mar08"),
        pytest.param("2009-03-08T08:00Z", LA, 0, 23, id="la-spring-forward"),
        pytest.param("2009-03-08T08:00Z", LA, 1, 24, id="la-day-after-spring-forward"),
        pytest.param("2009-03-07T08:00Z", LA, 0, 24, id="la-end-of-day-mar07"),
        pytest.param("2009-03-07T08:00Z", LA, 1, 23, id="la-end-of-day-next-is-spring-forward"),
        pytest.param("2009-11-01T08:00Z", LA, 0, 25, id="la-fall-back"),
        pytest.param("2009-10-25T08:00Z", LONDON, 0, 25, id="london-fall-back"),
    ],
)
def test_hours_in_day(nominal: str, tz: str, n: int, hours: int) -> None:
    """6.6.3: coord:hoursInDay(n) is 23 or 25 on DST switch days of the time zone."""
    assert hours_in_day(P(nominal), n, resolve_timezone(tz)) == hours


@pytest.mark.parametrize(
    ("nominal", "tz", "n", "days"),
    [
        pytest.param("2008-02-01T00:00Z", UTC_, 0, 29, id="leap-february"),
        pytest.param("2009-02-01T00:00Z", UTC_, 0, 28, id="february"),
        pytest.param("2009-02-01T00:00Z", UTC_, -1, 31, id="previous-month"),
        pytest.param("2009-03-01T00:00Z", UTC_, 1, 30, id="next-month-april"),
        pytest.param("2009-02-01T00:00Z", LA, 0, 31, id="la-still-january"),
    ],
)
def test_days_in_month(nominal: str, tz: str, n: int, days: int) -> None:
    """6.6.4: coord:daysInMonth(n) in the time zone, leap years included."""
    assert days_in_month(P(nominal), n, resolve_timezone(tz)) == days


@pytest.mark.parametrize(
    ("nominal", "dataset_tz", "job_tz", "minutes"),
    [
        pytest.param("2009-01-15T00:00Z", LA, UTC_, -480, id="la-winter"),
        pytest.param("2009-07-15T00:00Z", LA, UTC_, -420, id="la-summer"),
        pytest.param("2009-01-15T00:00Z", "Asia/Kolkata", UTC_, 330, id="india"),
        pytest.param("2009-01-15T00:00Z", "Europe/Berlin", LA, 540, id="berlin-vs-la"),
        pytest.param("2009-03-15T00:00Z", "Europe/Berlin", LA, 480, id="berlin-vs-la-us-dst-only"),
    ],
)
def test_tz_offset(nominal: str, dataset_tz: str, job_tz: str, minutes: int) -> None:
    """6.6.5: coord:tzOffset() = dataset offset - job offset, which DST can change."""
    assert tz_offset(P(nominal), resolve_timezone(dataset_tz), resolve_timezone(job_tz)) == minutes


def test_instances_before_the_initial_instance_are_dropped() -> None:
    """6.6.10: current(-23)..current(0) on an hourly dataset yields 1, 2, ... 24 instances."""
    logs = DatasetTimeline(P("2009-01-01T00:00Z"), Frequency.hours(1), resolve_timezone("UTC"))
    starts = list(iter_nominal_times(P("2009-01-01T01:00Z"), None, Frequency.hours(1), resolve_timezone("UTC"), limit=26))
    sizes = [len(logs.between(logs.current_index(t, -23), logs.current_index(t, 0))) for t in starts]
    assert sizes[:3] == [2, 3, 4]  # the first action at 01:00 already sees 00:00 and 01:00
    assert sizes[22:] == [24, 24, 24, 24]
    first = logs.between(logs.current_index(starts[0], -23), logs.current_index(starts[0], 0))
    assert [fmt(t) for t in first] == ["2009-01-01T00:00Z", "2009-01-01T01:00Z"]


@pytest.mark.parametrize(
    ("start", "tz", "first"),
    [
        pytest.param("2017-01-04T00:00Z", UTC_, "2017-01-08T00:00Z", id="utc-midnight"),
        pytest.param("2017-01-04T08:00Z", UTC_, "2017-01-08T08:00Z", id="utc-keeps-time-of-day"),
        pytest.param("2017-01-06T08:00Z", UTC_, "2017-01-08T08:00Z", id="utc-friday"),
        pytest.param("2017-01-04T08:00Z", LA, "2017-01-08T08:00Z", id="la-wednesday"),
        pytest.param("2017-01-06T08:00Z", LA, "2017-01-08T08:00Z", id="la-friday"),
    ],
)
def test_end_of_weeks(start: str, tz: str, first: str) -> None:
    """Reference 4.4.3: coord:endOfWeeks(1) starts on the next Sunday and lasts 10080 minutes."""
    zone = resolve_timezone(tz)
    occurrence = first_nominal_time(P(start), Frequency.end_of_weeks(1), zone)
    assert fmt(occurrence) == first
    assert frequency_minutes(Frequency.end_of_weeks(1), occurrence, zone) == 10080


@pytest.mark.parametrize(
    ("n", "expected"),
    [(-1, "2009-05-01T00:00Z"), (0, "2009-06-01T00:00Z"), (-2, "2009-04-01T00:00Z"), (-3, "2009-03-01T00:00Z")],
)
def test_end_of_months_as_instance(n: int, expected: str) -> None:
    """Reference 6.6.9: in a start-instance, coord:endOfMonths(n) is the start of month n+1 from the nominal month."""
    assert fmt(start_of_period(P("2009-05-29T00:00Z"), n, TimeUnit.END_OF_MONTH, resolve_timezone("UTC"))) == expected
