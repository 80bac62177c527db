"""Oozie datetimes (`YYYY-MM-DDTHH:mmZ`, `24:00` = next day) and time zone identifiers."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from datasets.timeline.errors import InvalidDatetimeError, NaiveDatetimeError, UnknownTimezoneError

_DATETIME = re.compile(
    r"^(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})T(?P<h>\d{2}):(?P<mi>\d{2})"
    r"(?P<tz>Z|[+-]\d{4}|[+-]\d{2}:\d{2})$"
)
_GMT_OFFSET = re.compile(r"^GMT(?P<sign>[+-])(?P<h>\d{1,2}):?(?P<m>\d{2})?$")
MAX_TEXT = 64

#: Java's three-letter time zone ids (java.time.ZoneId.SHORT_IDS, the aliases TimeZone.getTimeZone
#: maps), which Oozie's DateUtils.getTimeZone accepts with a warning. PST is Los Angeles with its
#: DST, as in Java; EST, MST and HST are fixed offsets, as in Java 8 and later.
JAVA_SHORT_IDS: dict[str, str] = {
    "ACT": "Australia/Darwin", "AET": "Australia/Sydney", "AGT": "America/Argentina/Buenos_Aires",
    "ART": "Africa/Cairo", "AST": "America/Anchorage", "BET": "America/Sao_Paulo", "BST": "Asia/Dhaka",
    "CAT": "Africa/Harare", "CNT": "America/St_Johns", "CST": "America/Chicago", "CTT": "Asia/Shanghai",
    "EAT": "Africa/Addis_Ababa", "ECT": "Europe/Paris", "IET": "America/Indiana/Indianapolis",
    "IST": "Asia/Kolkata", "JST": "Asia/Tokyo", "MIT": "Pacific/Apia", "NET": "Asia/Yerevan",
    "NST": "Pacific/Auckland", "PLT": "Asia/Karachi", "PNT": "America/Phoenix", "PRT": "America/Puerto_Rico",
    "PST": "America/Los_Angeles", "SST": "Pacific/Guadalcanal", "VST": "Asia/Ho_Chi_Minh",
}
JAVA_FIXED_IDS: dict[str, timedelta] = {"EST": timedelta(hours=-5), "MST": timedelta(hours=-7), "HST": timedelta(hours=-10)}


def require_aware(value: datetime, what: str = "datetime") -> datetime:
    """Return value if it carries a time zone, else NaiveDatetimeError."""
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        raise NaiveDatetimeError(f"{what} {value!r} has no time zone; the time line takes aware datetimes only")
    return value


def _offset(text: str) -> timedelta:
    if text == "Z":
        return timedelta(0)
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:])
    if hours > 23 or minutes > 59:
        raise ValueError("offset out of range")
    return sign * timedelta(hours=hours, minutes=minutes)


def parse_datetime(text: str) -> datetime:
    """Parse `YYYY-MM-DDTHH:mmZ` or `YYYY-MM-DDTHH:mm+HHMM` to an aware UTC datetime.

    `24:00` is the next day's `00:00` (spec 4.1.1); seconds are not part of the format.
    """
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        raise InvalidDatetimeError(f"{text!r} is not a datetime (expected YYYY-MM-DDTHH:mmZ)")
    match = _DATETIME.match(text.strip())
    if match is None:
        raise InvalidDatetimeError(f"{text!r} is not a datetime (expected YYYY-MM-DDTHH:mmZ)")
    hour, minute = int(match["h"]), int(match["mi"])
    end_of_day = hour == 24 and minute == 0
    try:
        local = wall(int(match["y"]), int(match["mo"]), int(match["d"]), 0 if end_of_day else hour, minute)
        offset = _offset(match["tz"])
    except ValueError as exc:
        raise InvalidDatetimeError(f"{text!r} is not a valid datetime: {exc}") from None
    if end_of_day:
        local += timedelta(days=1)
    try:
        return local.replace(tzinfo=timezone(offset)).astimezone(UTC)
    except OverflowError:
        raise InvalidDatetimeError(f"{text!r} is out of range") from None


def format_datetime(value: datetime, tz: tzinfo = UTC) -> str:
    """Format an aware datetime as `YYYY-MM-DDTHH:mmZ` (UTC), or `YYYY-MM-DDTHH:mm+HHMM` in another zone.

    Spec 4.1: with a GMT-offset processing time zone, datetime values are written in
    that offset (`2009-08-10T13:10+0530`); parse_datetime reads both forms back.
    """
    local = require_aware(value).astimezone(tz)
    offset = local.utcoffset() or timedelta(0)
    if not offset:
        return local.strftime("%Y-%m-%dT%H:%MZ")
    minutes = int(offset // timedelta(minutes=1))
    sign = "-" if minutes < 0 else "+"
    hours, rest = divmod(abs(minutes), 60)
    return local.strftime("%Y-%m-%dT%H:%M") + f"{sign}{hours:02d}{rest:02d}"


def resolve_timezone(name: str) -> tzinfo:
    """A zoneinfo name (`America/Los_Angeles`), `UTC`/`GMT`, a fixed `GMT+05:30` offset, or a Java
    three-letter id (`PST` is America/Los_Angeles, `EST` is GMT-05:00: JAVA_SHORT_IDS, JAVA_FIXED_IDS)."""
    if not isinstance(name, str) or not name or len(name) > MAX_TEXT:
        raise UnknownTimezoneError(f"unknown time zone {name!r}")
    text = name.strip()
    if text in {"UTC", "GMT", "Z"}:
        return UTC
    match = _GMT_OFFSET.match(text)
    if match:
        hours, minutes = int(match["h"]), int(match["m"] or 0)
        if hours > 23 or minutes > 59:
            raise UnknownTimezoneError(f"time zone offset {name!r} is out of range")
        delta = timedelta(hours=hours, minutes=minutes)
        return timezone(-delta if match["sign"] == "-" else delta, name=text)
    if text in JAVA_FIXED_IDS:
        return timezone(JAVA_FIXED_IDS[text], name=text)
    if text in JAVA_SHORT_IDS:
        return ZoneInfo(JAVA_SHORT_IDS[text])
    if ".." in text or text.startswith("/") or not re.fullmatch(r"[A-Za-z0-9_+\-/]+", text):
        raise UnknownTimezoneError(f"unknown time zone {name!r}")
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise UnknownTimezoneError(
            f"unknown time zone {name!r} (use a zoneinfo name such as America/Los_Angeles, a GMT offset "
            "such as GMT+05:30, UTC, or one of Java's three-letter ids such as PST or EST)"
        ) from None


def available_timezone_ids() -> list[str]:
    """Every zoneinfo identifier this installation understands and Java's three-letter ids, sorted (spec 4.2's tool)."""
    return sorted(available_timezones() | set(JAVA_SHORT_IDS) | set(JAVA_FIXED_IDS))


def wall(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    """A wall-clock time with no zone: calendar arithmetic happens on these, then from_wall()."""
    return datetime(year, month, day, hour, minute)  # noqa: DTZ001 - zone-less by definition


def to_local(value: datetime, tz: tzinfo) -> datetime:
    """The wall-clock time of an instant in tz (aware, in tz)."""
    return require_aware(value).astimezone(tz)


def from_wall(wall: datetime, tz: tzinfo) -> datetime:
    """The UTC instant of a naive wall-clock time in tz.

    A wall time skipped by a DST gap moves forward by the gap (02:30 -> 03:30, as Java's
    lenient Calendar does); an ambiguous one (the repeated hour) takes the first, earlier
    instant.
    """
    # With fold=0, zoneinfo reads a skipped wall time with the offset from before the gap
    # (so the instant lands after it, shifted by the gap) and a repeated one as the first.
    return wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
