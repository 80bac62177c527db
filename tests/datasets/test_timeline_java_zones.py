"""Java's time zone ids, three-letter ones included (issue 16, item 5).

Oozie resolves every zone (job, dataset, coord:dateTzOffset) with DateUtils.getTimeZone, that is
Java's TimeZone.getTimeZone: `PST` is America/Los_Angeles with its DST, `EST`, `MST` and `HST`
are fixed offsets (Java 8 and later), and an id Java does not know is refused.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from datasets.timeline import (
    UnknownTimezoneError,
    available_timezone_ids,
    date_tz_offset,
    parse_datetime,
    resolve_timezone,
    tz_offset,
)
from datasets.timeline.datetimes import JAVA_FIXED_IDS, JAVA_SHORT_IDS

WINTER, SUMMER = parse_datetime("2012-12-13T00:00Z"), parse_datetime("2012-06-13T00:00Z")


def offset_hours(zone: str, moment: object) -> float:
    tz = resolve_timezone(zone)
    value = moment.astimezone(tz).utcoffset()  # type: ignore[attr-defined]
    assert value is not None
    return float(value / timedelta(hours=1))


@pytest.mark.parametrize(
    ("zone", "winter", "summer"),
    [
        pytest.param("PST", -8, -7, id="PST-is-los-angeles-with-dst"),
        pytest.param("CST", -6, -5, id="CST-is-chicago"),
        pytest.param("EST", -5, -5, id="EST-is-fixed"),
        pytest.param("MST", -7, -7, id="MST-is-fixed"),
        pytest.param("HST", -10, -10, id="HST-is-fixed"),
        pytest.param("IST", 5.5, 5.5, id="IST-is-kolkata"),
        pytest.param("JST", 9, 9, id="JST-is-tokyo"),
        pytest.param("ECT", 1, 2, id="ECT-is-paris"),
        pytest.param("BST", 6, 6, id="BST-is-dhaka-as-in-java"),
    ],
)
def test_three_letter_ids_mean_what_java_means(zone: str, winter: float, summer: float) -> None:
    """Each three-letter id has Java's offsets in winter and summer."""
    assert (offset_hours(zone, WINTER), offset_hours(zone, SUMMER)) == (winter, summer)


def test_every_java_short_id_resolves() -> None:
    """All of ZoneId.SHORT_IDS resolve, and are listed by the time zone tool (spec 4.2)."""
    listed = set(available_timezone_ids())
    for zone in (*JAVA_SHORT_IDS, *JAVA_FIXED_IDS):
        assert resolve_timezone(zone) is not None
        assert zone in listed


@pytest.mark.parametrize(
    ("base", "zone", "expected"),
    [
        pytest.param("2012-06-13T00:00Z", "America/Los_Angeles", "2012-06-12T17:00Z", id="reference-summer"),
        pytest.param("2012-12-13T00:00Z", "America/Los_Angeles", "2012-12-12T16:00Z", id="reference-winter"),
        pytest.param("2012-06-13T00:00Z", "PST", "2012-06-12T17:00Z", id="PST-summer-as-java"),
        pytest.param("2012-12-13T00:00Z", "PST", "2012-12-12T16:00Z", id="PST-winter"),
        pytest.param("2012-06-13T00:00Z", "EST", "2012-06-12T19:00Z", id="EST-fixed-in-summer"),
        pytest.param("2012-06-13T00:00Z", "IST", "2012-06-13T05:30Z", id="IST"),
    ],
)
def test_date_tz_offset_takes_java_ids(base: str, zone: str, expected: str) -> None:
    """coord:dateTzOffset (6.9.2): base + (zone - processing zone), with Java's ids too."""
    assert date_tz_offset(base, resolve_timezone(zone)) == expected


def test_tz_offset_with_three_letter_zones() -> None:
    """coord:tzOffset() (6.6.5), dataset in PST, job in EST: PST has DST and EST does not (Java),
    so the difference is -120 minutes in summer and -180 in winter."""
    assert tz_offset(SUMMER, resolve_timezone("PST"), resolve_timezone("EST")) == -120
    assert tz_offset(WINTER, resolve_timezone("PST"), resolve_timezone("EST")) == -180


@pytest.mark.parametrize("zone", ["PDT", "pst", "XYZ", "CEST", "PST8", "America/Nowhere"])
def test_ids_java_does_not_know_are_refused_naming_the_forms(zone: str) -> None:
    """PDT, lower case, made-up ids: refused with a message naming the forms that work."""
    with pytest.raises(UnknownTimezoneError) as caught:
        resolve_timezone(zone)
    message = str(caught.value)
    assert repr(zone) in message
    for form in ("America/Los_Angeles", "GMT+05:30", "PST"):
        assert form in message
