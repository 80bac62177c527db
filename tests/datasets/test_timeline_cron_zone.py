"""Cron frequencies read the processing time zone's clock; daily and longer ones keep the job zone's
local time across DST (issue 16, items 1 and 8; reference 4.4.4 notes and section 7's table).

The rows of section 7's table are the tests, with the start and end times of the Oozie test that
checks each row (TestCoordMaterializeTransitionXCommand.testWhenChangingDST...). Local times are
read as Oozie's test reads them (a lenient wall clock: 02:00 on the spring-forward day is 03:00).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from datasets.timeline import (
    Frequency,
    TimelineError,
    count_before,
    format_datetime,
    from_wall,
    iter_nominal_times,
    nominal_time,
    parse_datetime,
    resolve_timezone,
    to_local,
)
from datasets.timeline.stepping import add_months, dst_shift

P = parse_datetime
LA = resolve_timezone("America/Los_Angeles")


def la(local: str) -> datetime:
    """A Los Angeles wall time as the instant Oozie's tests mean (SimpleDateFormat, lenient)."""
    return from_wall(datetime.fromisoformat(local), LA)


def frequency(text: str) -> Frequency:
    """A table cell: `coord:months(1)`-style, or a cron expression (read in UTC, the default processing zone)."""
    if text.startswith("coord:"):
        name, amount = text[len("coord:"):].rstrip(")").split("(")
        names = {"endOfDays": "end_of_days", "endOfMonths": "end_of_months"}
        return getattr(Frequency, names.get(name, name))(int(amount))  # type: ignore[no-any-return]
    return Frequency.from_cron(text)


def times(text: str, start: str, end: str, tz: object = LA) -> list[datetime]:
    return list(iter_nominal_times(P(start), P(end), frequency(text), tz))  # type: ignore[arg-type]


MONTHLY = [la(f"2016-{m:02d}-01T15:10") for m in range(3, 13)]
QUARTERLY = [la(f"{y}-{m:02d}-01T05:10") for y in (2016, 2017) for m in (1, 4, 7, 10)]
DAILY = [la(f"2016-03-{d}T15:10") for d in (11, 12, 13, 14)]
TWENTIETH_DAY_CRON = [la(t) for t in (
    "2016-02-01T05:10", "2016-02-21T05:10", "2016-03-01T05:10", "2016-03-21T05:10",
    "2016-11-01T05:10", "2016-11-21T05:10", "2016-12-01T05:10",
)]
SPRING_HOURLY = [la(t) for t in (
    "2017-03-11T23:10", "2017-03-12T00:10", "2017-03-12T01:10", "2017-03-12T03:10", "2017-03-12T04:10", "2017-03-12T05:10",
)]
# The repeated hour: 01:10 twice, an hour apart in UTC.
FALL_HOURLY = [P(t) for t in ("2017-11-05T07:10Z", "2017-11-05T08:10Z", "2017-11-05T09:10Z", "2017-11-05T10:10Z")]
TWENTIETH_HOUR_MARCH = [la(t) for t in (
    "2016-03-11T16:10", "2016-03-12T12:10", "2016-03-12T16:10", "2016-03-13T13:10", "2016-03-13T17:10", "2016-03-14T13:10",
)]
TWENTIETH_HOUR_NOVEMBER = [la(t) for t in (
    "2016-11-04T16:10", "2016-11-05T13:10", "2016-11-05T17:10", "2016-11-06T12:10", "2016-11-06T16:10", "2016-11-07T12:10",
)]
HALF_HOURLY = [la(f"2016-03-13T{t}") for t in ("00:00", "00:30", "01:00", "01:30", "02:00", "02:30", "04:00", "04:30", "05:00", "05:30")]


@pytest.mark.parametrize(
    ("text", "start", "end", "expected"),
    [
        pytest.param("coord:months(1)", "2016-03-01T23:10Z", "2016-12-03T00:00Z", MONTHLY, id="months-1"),
        pytest.param("10 23 1 1-12 *", "2016-03-01T23:10Z", "2016-12-03T00:00Z", MONTHLY, id="cron-monthly-keeps-15-10-local"),
        pytest.param("coord:months(3)", "2016-01-01T13:10Z", "2017-12-03T00:00Z", QUARTERLY, id="months-3"),
        pytest.param("10 13 1 */3 *", "2016-01-01T13:10Z", "2017-12-03T00:00Z", QUARTERLY, id="cron-every-third-month"),
        pytest.param("10 13 */20 2-3,11,12 *", "2016-02-01T13:10Z", "2016-12-03T00:00Z", TWENTIETH_DAY_CRON,
                     id="cron-every-20th-day-months-of-oozie-test"),
        pytest.param("coord:days(1)", "2016-03-11T23:10Z", "2016-03-15T02:00Z", DAILY, id="days-1"),
        pytest.param("10 23 * * *", "2016-03-11T23:10Z", "2016-03-15T02:00Z", DAILY, id="cron-daily-keeps-15-10-local"),
        pytest.param("coord:hours(1)", "2017-03-12T07:10Z", "2017-03-12T12:30Z", SPRING_HOURLY, id="hours-1-spring"),
        pytest.param("10 * * * *", "2017-03-12T07:10Z", "2017-03-12T12:30Z", SPRING_HOURLY, id="cron-hourly-skips-hour-2"),
        pytest.param("coord:hours(1)", "2017-11-05T07:10Z", "2017-11-05T10:30Z", FALL_HOURLY, id="hours-1-fall"),
        pytest.param("10 * * * *", "2017-11-05T07:10Z", "2017-11-05T10:30Z", FALL_HOURLY, id="cron-hourly-doubles-hour-1"),
        pytest.param("10 */20 12-14 3 *", "2016-01-01T13:10Z", "2016-12-03T00:00Z", TWENTIETH_HOUR_MARCH,
                     id="cron-every-20th-hour-march-not-shifted"),
        pytest.param("10 */20 5-7 11 *", "2016-01-01T13:10Z", "2016-12-03T00:00Z", TWENTIETH_HOUR_NOVEMBER,
                     id="cron-every-20th-hour-november"),
        pytest.param("coord:minutes(30)", "2016-03-13T08:00Z", "2016-03-13T13:00Z", HALF_HOURLY, id="minutes-30"),
        pytest.param("*/30 * * * *", "2016-03-13T08:00Z", "2016-03-13T13:00Z", HALF_HOURLY, id="cron-every-30-minutes"),
    ],
)
def test_section_7_table(text: str, start: str, end: str, expected: list[datetime]) -> None:
    """Each row of section 7's table: cron in UTC, moved by the job zone's DST only when firings are a day or more apart."""
    assert [format_datetime(t) for t in times(text, start, end)] == [format_datetime(t) for t in expected]


@pytest.mark.parametrize(
    ("text", "start", "expected"),
    [
        pytest.param("coord:days(20)", "2016-02-01T13:10Z",
                     ["2016-02-01T05:10", "2016-02-21T05:10", "2016-03-12T05:10", "2016-04-01T05:10", "2016-04-21T05:10"],
                     id="days-20"),
        pytest.param("coord:hours(24)", "2016-03-11T23:10Z",
                     ["2016-03-11T15:10", "2016-03-12T15:10", "2016-03-13T16:10", "2016-03-14T16:10"], id="hours-24-shifts"),
        pytest.param("coord:hours(20)", "2016-03-12T13:10Z",
                     ["2016-03-12T05:10", "2016-03-13T01:10", "2016-03-13T22:10", "2016-03-14T18:10"], id="hours-20"),
    ],
)
def test_section_7_table_frequency_functions(text: str, start: str, expected: list[str]) -> None:
    """The table's rows without a cron form: calendar days keep local time, hours are absolute."""
    got = list(iter_nominal_times(P(start), None, frequency(text), LA, limit=len(expected)))
    assert [to_local(t, LA).strftime("%Y-%m-%dT%H:%M") for t in got] == expected


def test_printed_every_20th_day_row_needs_the_month_field_of_oozies_test() -> None:
    """Section 7 prints `10 13 */20 * *` but lists no firing from April to October: that row comes from
    Oozie's test of `10 13 */20 2-3,11,12 *`; as printed, April 1st 05:10 local follows March 21st."""
    got = times("10 13 */20 * *", "2016-03-01T13:10Z", "2016-04-02T00:00Z")
    assert [to_local(t, LA).strftime("%m-%d %H:%M") for t in got] == ["03-01 05:10", "03-21 05:10", "04-01 05:10"]


def test_tokyo_example_of_the_notes() -> None:
    """4.4.4 notes: for 10:00 in Tokyo write `0 1 * * 2-6` (UTC); `0 10 * * 2-6` fires at 19:00 Tokyo."""
    tokyo = resolve_timezone("Asia/Tokyo")
    start, end = "2024-01-08T00:00Z", "2024-01-13T00:00Z"  # Monday to Saturday
    assert [to_local(t, tokyo).strftime("%a %H:%M") for t in times("0 1 * * 2-6", start, end, tokyo)] == [
        "Mon 10:00", "Tue 10:00", "Wed 10:00", "Thu 10:00", "Fri 10:00",
    ]
    assert {to_local(t, tokyo).strftime("%H:%M") for t in times("0 10 * * 2-6", start, end, tokyo)} == {"19:00"}


def test_a_window_with_firings_in_utc_only() -> None:
    """01:00 UTC falls in a two-hour UTC window; 01:00 Tokyo (16:00 UTC) would not: the job has one action."""
    tokyo = resolve_timezone("Asia/Tokyo")
    assert [format_datetime(t) for t in times("0 1 * * *", "2024-01-01T00:00Z", "2024-01-01T02:00Z", tokyo)] == [
        "2024-01-01T01:00Z"
    ]


def test_a_gmt_offset_processing_zone_reads_cron_on_its_clock() -> None:
    """With processing zone GMT+05:30, `0 10 * * *` fires at 10:00 +0530, 04:30 UTC."""
    zone = resolve_timezone("GMT+05:30")
    got = list(iter_nominal_times(P("2024-01-01T00:00Z"), None, Frequency.from_cron("0 10 * * *", zone), UTC, limit=2))
    assert [format_datetime(t) for t in got] == ["2024-01-01T04:30Z", "2024-01-02T04:30Z"]
    assert [format_datetime(t, zone) for t in got] == ["2024-01-01T10:00+0530", "2024-01-02T10:00+0530"]


def test_dst_shift_follows_oozies_calculator() -> None:
    """+DST when the start is in DST and the firing not, -DST the other way round, else 0."""
    summer, winter = P("2016-07-01T00:00Z"), P("2016-12-01T00:00Z")
    assert dst_shift(summer, winter, LA) == timedelta(hours=1)
    assert dst_shift(winter, summer, LA) == timedelta(hours=-1)
    assert dst_shift(summer, summer, LA) == timedelta(0)
    assert dst_shift(summer, winter, UTC) == timedelta(0)


def test_a_start_in_summer_keeps_the_summer_local_time_in_winter() -> None:
    """Start in PDT, monthly cron at 22:10 UTC (15:10 PDT): December fires at 15:10 PST, 23:10 UTC."""
    got = times("10 22 1 * *", "2016-07-01T00:00Z", "2017-01-01T00:00Z")
    assert {to_local(t, LA).strftime("%H:%M") for t in got} == {"15:10"}
    assert format_datetime(got[-1]) == "2016-12-01T23:10Z"


def test_a_forward_shift_never_passes_the_next_firing() -> None:
    """`0,30 0 1 * *` from a summer start: in winter 00:00 UTC would move to 01:00, after the 00:30 firing
    that follows within the shift; it stays, so nominal times keep increasing."""
    got = times("0,30 0 1 * *", "2016-07-01T00:00Z", "2017-01-02T00:00Z")
    assert all(a < b for a, b in zip(got, got[1:], strict=False))
    assert [format_datetime(t) for t in got[-2:]] == ["2017-01-01T00:00Z", "2017-01-01T00:30Z"]


@pytest.mark.parametrize(
    ("text", "start", "tz"),
    [
        pytest.param("10 23 * * *", "2016-03-01T23:10Z", "America/Los_Angeles", id="cron-daily-dst"),
        pytest.param("coord:endOfDays(1)", "2016-03-01T10:00Z", "America/Los_Angeles", id="end-of-days"),
        pytest.param("coord:months(1)", "2016-01-31T00:00Z", "UTC", id="month-end-clamping"),
        pytest.param("coord:endOfMonths(1)", "2016-01-15T00:00Z", "Europe/Berlin", id="end-of-months"),
    ],
)
def test_continuing_from_an_index_is_the_same_recurrence(text: str, start: str, tz: str) -> None:
    """Materialization goes on from the job's start with first_index, and gets exactly the later nominal times;
    nominal_time and count_before agree with the iteration."""
    zone, freq = resolve_timezone(tz), frequency(text)
    whole = list(iter_nominal_times(P(start), None, freq, zone, limit=15))
    assert whole == sorted(set(whole))
    for k in (1, 5, 11):
        assert list(iter_nominal_times(P(start), None, freq, zone, limit=3, first_index=k)) == whole[k:k + 3]
        assert nominal_time(P(start), k, freq, zone) == whole[k]
        assert count_before(P(start), whole[k], freq, zone) == k
        assert count_before(P(start), whole[k] + timedelta(minutes=1), freq, zone) == k + 1


def test_month_steps_clamp_with_relativedelta() -> None:
    """Calendar months (dateutil's relativedelta) clamp to the month's length; past year 9999 is a TimelineError."""
    jan31 = datetime(2024, 1, 31)  # noqa: DTZ001 - a wall time
    assert add_months(jan31, 1) == datetime(2024, 2, 29)  # noqa: DTZ001
    assert add_months(jan31, 2) == datetime(2024, 3, 31)  # noqa: DTZ001
    assert add_months(jan31, -2) == datetime(2023, 11, 30)  # noqa: DTZ001
    assert add_months(jan31, 12 * 3 + 1) == datetime(2027, 2, 28)  # noqa: DTZ001
    with pytest.raises(TimelineError, match="out of range"):
        add_months(datetime(9999, 12, 1), 1)  # noqa: DTZ001
    with pytest.raises(TimelineError, match="out of range"):
        add_months(jan31, -10**7)
