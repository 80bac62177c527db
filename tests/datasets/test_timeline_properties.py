"""Time line rules beyond the spec tables: DST stepping, month ends, hostile input, properties."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datasets.timeline import (
    DatasetTimeline,
    Frequency,
    InvalidDatetimeError,
    InvalidFrequencyError,
    NaiveDatetimeError,
    TimelineError,
    TooManyInstancesError,
    UnknownTimezoneError,
    count_before,
    expand_uri_template,
    format_datetime,
    iter_nominal_times,
    nominal_time,
    parse_datetime,
    parse_frequency,
    resolve_timezone,
    to_local,
)

P = parse_datetime


@pytest.mark.parametrize(
    ("tz", "start", "days"),
    [
        pytest.param("America/New_York", "2009-03-06T05:00Z", 5, id="new-york-spring-forward"),
        pytest.param("America/New_York", "2009-10-30T04:00Z", 5, id="new-york-fall-back"),
        pytest.param("Europe/London", "2009-03-27T00:00Z", 5, id="london-spring-forward"),
        pytest.param("Europe/London", "2009-10-23T23:00Z", 5, id="london-fall-back"),
        pytest.param("Australia/Lord_Howe", "2009-10-02T13:30Z", 5, id="lord-howe-half-hour-dst"),
    ],
)
def test_daily_job_stays_at_local_midnight_across_dst(tz: str, start: str, days: int) -> None:
    """coord:days(1) steps calendar days: always local midnight, so some steps are 23 or 25 hours."""
    zone = resolve_timezone(tz)
    times = list(iter_nominal_times(P(start), None, Frequency.days(1), zone, limit=days))
    assert all((to_local(t, zone).hour, to_local(t, zone).minute) == (0, 0) for t in times)
    gaps = {b - a for a, b in zip(times, times[1:], strict=False)}
    assert gaps - {timedelta(hours=24)}, "a DST switch should make one step shorter or longer"


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        pytest.param(
            "2009-01-31T00:00Z",
            ["2009-01-31T00:00Z", "2009-02-28T00:00Z", "2009-03-31T00:00Z", "2009-04-30T00:00Z"],
            id="month-end-does-not-drift",
        ),
        pytest.param(
            "2008-01-31T00:00Z",
            ["2008-01-31T00:00Z", "2008-02-29T00:00Z", "2008-03-31T00:00Z", "2008-04-30T00:00Z"],
            id="leap-year-february",
        ),
    ],
)
def test_monthly_steps_clamp_to_month_length_from_the_start(start: str, expected: list[str]) -> None:
    """coord:months(1) from the 31st: each month's last day, recomputed from the start (no drift)."""
    times = iter_nominal_times(P(start), None, Frequency.months(1), UTC, limit=4)
    assert [format_datetime(t) for t in times] == expected


def test_yearly_from_leap_day() -> None:
    """Twelve months from Feb 29 is Feb 28; four years is Feb 29 again."""
    assert format_datetime(nominal_time(P("2008-02-29T00:00Z"), 12, Frequency.months(1), UTC)) == "2009-02-28T00:00Z"
    assert format_datetime(nominal_time(P("2008-02-29T00:00Z"), 48, Frequency.months(1), UTC)) == "2012-02-29T00:00Z"


def test_nonexistent_local_time_moves_forward_by_the_gap() -> None:
    """A daily job at 02:30 New York time runs at 03:30 EDT on the spring-forward day."""
    zone = resolve_timezone("America/New_York")
    times = list(iter_nominal_times(P("2009-03-07T07:30Z"), None, Frequency.days(1), zone, limit=3))
    assert [to_local(t, zone).strftime("%d %H:%M") for t in times] == ["07 02:30", "08 03:30", "09 02:30"]


def test_end_is_exclusive_and_count_before_matches_iteration() -> None:
    """Nominal times stop before end; count_before agrees with the iterator."""
    zone = resolve_timezone("America/Los_Angeles")
    start, end = P("2009-01-02T08:00Z"), P("2009-01-04T08:00Z")
    times = list(iter_nominal_times(start, end, Frequency.days(1), zone))
    assert [format_datetime(t) for t in times] == ["2009-01-02T08:00Z", "2009-01-03T08:00Z"]
    assert count_before(start, end, Frequency.days(1), zone) == 2


def test_uri_template_uses_the_dataset_time_zone() -> None:
    """${YEAR}..${MINUTE} are the instance's local date parts, zero padded; other variables stay."""
    zone = resolve_timezone("America/Los_Angeles")
    uri = expand_uri_template("hdfs://bar/${market}/${YEAR}/${MONTH}/${DAY}/${HOUR}/${MINUTE}", P("2009-01-02T08:05Z"), zone)
    assert uri == "hdfs://bar/${market}/2009/01/02/00/05"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        pytest.param("2009-13-01T00:00Z", InvalidDatetimeError, id="month-13"),
        pytest.param("2009-02-30T00:00Z", InvalidDatetimeError, id="february-30"),
        pytest.param("2009-01-01T25:00Z", InvalidDatetimeError, id="hour-25"),
        pytest.param("2009-01-01T24:01Z", InvalidDatetimeError, id="past-24-00"),
        pytest.param("2009-01-01 00:00Z", InvalidDatetimeError, id="space-separator"),
        pytest.param("2009-01-01T00:00", InvalidDatetimeError, id="no-zone"),
        pytest.param("2009-01-01T00:00:00Z", InvalidDatetimeError, id="seconds"),
        pytest.param("x" * 10_000, InvalidDatetimeError, id="huge"),
    ],
)
def test_bad_datetimes_are_refused(text: str, error: type[Exception]) -> None:
    """Anything but the Oozie format is a typed error naming the text."""
    with pytest.raises(error):
        parse_datetime(text)


@pytest.mark.parametrize(
    "name",
    ["Mars/Olympus_Mons", "../../etc/passwd", "GMT+25:00", "", "America/Los Angeles", "/etc/localtime"],
)
def test_unknown_time_zones_are_refused(name: str) -> None:
    """Unknown or path-like identifiers are UnknownTimezoneError, never a file read."""
    with pytest.raises(UnknownTimezoneError):
        resolve_timezone(name)


@pytest.mark.parametrize(
    ("name", "offset_minutes"),
    [("GMT+05:30", 330), ("GMT-0800", -480), ("GMT+5", 300), ("UTC", 0), ("GMT", 0)],
)
def test_gmt_offsets_are_fixed_zones(name: str, offset_minutes: int) -> None:
    """GMT[+/-]##:## is a fixed, DST-free offset (spec 4.2)."""
    zone = resolve_timezone(name)
    for month in (1, 7):
        offset = datetime(2009, month, 1, tzinfo=UTC).astimezone(zone).utcoffset()
        assert offset == timedelta(minutes=offset_minutes)


@pytest.mark.parametrize("amount", [0, -1, -1440])
def test_zero_and_negative_frequencies_are_refused(amount: int) -> None:
    """A frequency must be positive."""
    with pytest.raises(InvalidFrequencyError):
        Frequency.minutes(amount)
    with pytest.raises(InvalidFrequencyError):
        Frequency.days(amount)
    with pytest.raises(InvalidFrequencyError):
        parse_frequency(str(amount))


def test_naive_datetimes_are_refused() -> None:
    """The time line takes aware datetimes only."""
    with pytest.raises(NaiveDatetimeError):
        nominal_time(datetime(2009, 1, 1), 1, Frequency.days(1), UTC)  # noqa: DTZ001 - the point of the test


def test_hostile_ranges_fail_fast() -> None:
    """current(-1000000000)..current(0) is refused by the cap before computing anything."""
    logs = DatasetTimeline(P("2000-01-01T00:00Z"), Frequency.minutes(1), UTC)
    nominal = P("2009-01-01T00:00Z")
    with pytest.raises(TooManyInstancesError, match="at most 10000"):
        logs.between(logs.current_index(nominal, -1_000_000_000), logs.current_index(nominal, 0))
    with pytest.raises(TimelineError):
        logs.current(nominal, 10**15)


MOMENTS = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2090, 1, 1), timezones=st.just(UTC)).map(
    lambda d: d.replace(second=0, microsecond=0)
)
ZONES = st.sampled_from(["UTC", "America/Los_Angeles", "Europe/London", "Australia/Lord_Howe", "Asia/Kolkata", "GMT+05:30"])
FREQUENCIES = st.one_of(
    st.integers(1, 2000).map(Frequency.minutes),
    st.integers(1, 48).map(Frequency.hours),
    st.integers(1, 40).map(Frequency.days),
    st.integers(1, 14).map(Frequency.months),
    st.integers(1, 3).map(Frequency.end_of_days),
    st.integers(1, 3).map(Frequency.end_of_months),
    st.integers(1, 3).map(Frequency.end_of_weeks),
)


@settings(max_examples=200, deadline=None)
@given(start=MOMENTS, zone=ZONES, frequency=FREQUENCIES, n=st.integers(0, 60))
def test_nominal_times_increase_and_o1_agrees_with_iteration(start: datetime, zone: str, frequency: Frequency, n: int) -> None:
    """nominal_time(n) is strictly increasing and equals the n-th item of the iterator."""
    tz = resolve_timezone(zone)
    times = list(iter_nominal_times(start, None, frequency, tz, limit=n + 2))
    assert all(a < b for a, b in zip(times, times[1:], strict=False))
    assert nominal_time(start, n, frequency, tz) == times[n]
    assert count_before(start, times[n], frequency, tz) == n
    assert count_before(start, times[n] + timedelta(minutes=1), frequency, tz) == n + 1


@settings(max_examples=200, deadline=None)
@given(initial=MOMENTS, zone=ZONES, frequency=FREQUENCIES, moment=MOMENTS)
def test_current_zero_is_the_latest_instance_at_or_before(initial: datetime, zone: str, frequency: Frequency, moment: datetime) -> None:
    """instance(current 0) <= nominal < instance(current 1); instances before the initial one are dropped."""
    timeline = DatasetTimeline(initial, frequency, resolve_timezone(zone))
    k = timeline.current_index(moment, 0)
    assert timeline.instance(k) <= moment < timeline.instance(k + 1)
    assert (timeline.current(moment, 0) is None) == (k < 0)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_random_text_is_a_result_or_a_timeline_error(text: str) -> None:
    """Parsers never fail with anything but a TimelineError."""
    for parser in (parse_datetime, resolve_timezone, parse_frequency):
        try:
            parser(text)
        except TimelineError:
            pass


@settings(max_examples=200, deadline=None)
@given(MOMENTS)
def test_format_parse_roundtrip(moment: datetime) -> None:
    """format_datetime and parse_datetime are inverse at minute precision."""
    assert parse_datetime(format_datetime(moment)) == moment


@pytest.mark.parametrize(
    ("zone", "text"),
    [
        pytest.param("UTC", "2009-08-10T07:40Z", id="utc"),
        pytest.param("GMT+05:30", "2009-08-10T13:10+0530", id="india-spec-4.1-example"),
        pytest.param("GMT-0800", "2009-08-09T23:40-0800", id="negative-offset"),
    ],
)
def test_datetimes_are_written_in_the_processing_zone(zone: str, text: str) -> None:
    """4.1: with a GMT-offset processing zone datetimes read `YYYY-MM-DDTHH:mm+HHMM`; they parse back to the instant."""
    moment = P("2009-08-10T13:10+0530")
    assert format_datetime(moment, resolve_timezone(zone)) == text
    assert P(text) == moment


def test_iteration_ends_quietly_at_the_end_of_the_calendar() -> None:
    """Nominal times past year 9999 do not exist: iteration stops instead of failing (all are after any end)."""
    times = list(iter_nominal_times(P("9999-10-01T00:00Z"), P("9999-12-31T00:00Z"), Frequency.months(1), UTC))
    assert [format_datetime(t) for t in times] == ["9999-10-01T00:00Z", "9999-11-01T00:00Z", "9999-12-01T00:00Z"]
    assert len(list(iter_nominal_times(P("9999-12-01T00:00Z"), None, Frequency.months(1), UTC))) == 1
