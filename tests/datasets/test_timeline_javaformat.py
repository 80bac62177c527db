"""coord:formatTime takes Java SimpleDateFormat patterns; coord:epochTime counts seconds or milliseconds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datasets.timeline import (
    TimelineError,
    epoch_time,
    format_java,
    format_time,
    parse_datetime,
    resolve_timezone,
)

MOMENT = parse_datetime("2009-03-08T09:05Z")  # a Sunday, the US spring-forward day (01:05 PST)
LA = resolve_timezone("America/Los_Angeles")


@pytest.mark.parametrize(
    ("pattern", "utc", "los_angeles"),
    [
        pytest.param("yyyy-MM-dd", "2009-03-08", "2009-03-08", id="iso-date"),
        pytest.param("yyyyMMdd", "20090308", "20090308", id="compact-date"),
        pytest.param("yy", "09", "09", id="two-digit-year"),
        pytest.param("MMM MMMM", "Mar March", "Mar March", id="month-names"),
        pytest.param("EEE EEEE", "Sun Sunday", "Sun Sunday", id="day-names"),
        pytest.param("HH:mm:ss.SSS", "09:05:00.000", "01:05:00.000", id="time-with-millis"),
        pytest.param("hh:mm a", "09:05 AM", "01:05 AM", id="twelve-hour-clock"),
        pytest.param("k K", "9 9", "1 1", id="hour-1-24-and-0-11"),
        pytest.param("D u F", "67 7 2", "67 7 2", id="day-of-year-weekday-number-weekday-in-month"),
        pytest.param("w", "11", "11", id="week-of-year-us-locale"),
        pytest.param("z Z", "UTC +0000", "PST -0800", id="zone-name-and-rfc822"),
        pytest.param("X XX XXX", "Z Z Z", "-08 -0800 -08:00", id="iso-8601-zone"),
        pytest.param("yyyy-MM-dd'T'HH:mm'Z'", "2009-03-08T09:05Z", "2009-03-08T01:05Z", id="quoted-literals"),
        pytest.param("h 'o''clock'", "9 o'clock", "1 o'clock", id="escaped-quote-inside-literal"),
        pytest.param("''yy''", "'09'", "'09'", id="doubled-quote-outside-literal"),
        pytest.param("G", "AD", "AD", id="era"),
    ],
)
def test_simple_date_format_patterns(pattern: str, utc: str, los_angeles: str) -> None:
    """Java SimpleDateFormat letters, widths and quoting, in the zone the value is in (US locale)."""
    assert format_java(MOMENT, pattern) == utc
    assert format_java(MOMENT.astimezone(LA), pattern) == los_angeles


@pytest.mark.parametrize(
    ("day", "week"),
    [
        pytest.param("2009-01-01T00:00Z", 1, id="january-1st"),
        pytest.param("2009-12-26T00:00Z", 52, id="last-full-week"),
        pytest.param("2009-12-31T00:00Z", 1, id="week-holding-next-january-1st"),
        pytest.param("2010-01-03T00:00Z", 2, id="first-sunday-starts-week-2"),
        pytest.param("9999-12-31T00:00Z", 1, id="end-of-calendar"),
    ],
)
def test_week_of_year_follows_java_us_rules(day: str, week: int) -> None:
    """'w': weeks start on Sunday and week 1 is the one holding January 1st (java.util.Calendar, US)."""
    assert format_java(parse_datetime(day), "w") == str(week)


@pytest.mark.parametrize("pattern", ["Q", "yyyy-'MM", "W", "x" * 300])
def test_unsupported_patterns_are_typed_errors(pattern: str) -> None:
    """Unknown letters, an unterminated quote and huge patterns are TimelineErrors."""
    with pytest.raises(TimelineError):
        format_time("2009-01-01T00:00Z", pattern)


@pytest.mark.parametrize(
    ("millis", "expected"),
    [pytest.param("false", "1230768000", id="seconds"), pytest.param("true", "1230768000000", id="milliseconds")],
)
def test_epoch_time(millis: str, expected: str) -> None:
    """Reference 6.9.4: coord:epochTime(ts, 'true'|'false')."""
    assert epoch_time("2009-01-01T00:00Z", millis) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30))
def test_random_patterns_give_text_or_a_timeline_error(pattern: str) -> None:
    """Any pattern formats or fails with a TimelineError."""
    try:
        format_java(MOMENT, pattern)
    except TimelineError:
        pass
