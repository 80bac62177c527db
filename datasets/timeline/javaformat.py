"""Java SimpleDateFormat patterns (coord:formatTime), dateOffset, dateTzOffset and epochTime."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache

from datasets.timeline.datetimes import format_datetime, parse_datetime, require_aware
from datasets.timeline.errors import TimelineError
from datasets.timeline.instances import shift

_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December"]
MAX_PATTERN = 200


def _offset_text(value: datetime, style: str, width: int) -> str:
    offset = value.utcoffset() or timedelta(0)
    minutes = int(offset.total_seconds() // 60)
    sign = "-" if minutes < 0 else "+"
    hours, mins = divmod(abs(minutes), 60)
    if style == "X" and minutes == 0:
        return "Z"
    if style == "X":
        return f"{sign}{hours:02d}" if width == 1 else (f"{sign}{hours:02d}{mins:02d}" if width == 2 else f"{sign}{hours:02d}:{mins:02d}")
    return f"{sign}{hours:02d}{mins:02d}"


def _week_of_year(value: datetime) -> int:
    """Java's WEEK_OF_YEAR in the default (US) locale: weeks start on Sunday, week 1 holds January 1st."""
    sunday_index = value.isoweekday() % 7  # Sunday 0 .. Saturday 6
    days_left = (value.replace(month=12, day=31).date() - value.date()).days
    if 6 - sunday_index > days_left:
        return 1  # the week that ends in next year is that year's week 1
    jan1 = value.replace(month=1, day=1)
    return (value.timetuple().tm_yday - 1 + jan1.isoweekday() % 7) // 7 + 1


_NUMBERS: dict[str, Callable[[datetime], int]] = {
    "d": lambda value: value.day, "H": lambda value: value.hour, "m": lambda value: value.minute,
    "s": lambda value: value.second, "k": lambda value: value.hour or 24, "K": lambda value: value.hour % 12,
    "h": lambda value: (value.hour % 12) or 12, "D": lambda value: value.timetuple().tm_yday,
    "u": lambda value: value.isoweekday(), "w": _week_of_year, "F": lambda value: (value.day - 1) // 7 + 1,
}


def _field(letter: str, width: int, value: datetime) -> str:
    if letter == "y":
        return f"{value.year % 100:02d}" if width == 2 else f"{value.year:0{width}d}"
    if letter == "M":
        if width >= 4:
            return _MONTHS[value.month - 1]
        return _MONTHS[value.month - 1][:3] if width == 3 else f"{value.month:0{width}d}"
    number = _NUMBERS.get(letter)
    if number is not None:
        return f"{number(value):0{width}d}"
    if letter == "S":
        return f"{value.microsecond // 1000:0{max(width, 3)}d}"
    if letter == "E":
        name = _DAYS[value.weekday()]
        return name if width >= 4 else name[:3]
    if letter == "a":
        return "AM" if value.hour < 12 else "PM"
    if letter == "z":
        return value.tzname() or "UTC"
    if letter in "ZX":
        return _offset_text(value, letter, width)
    if letter == "G":
        return "AD"
    raise TimelineError(f"date pattern letter {letter!r} is not supported")


#: A compiled pattern: literal text, or (letter, width) of a field.
Token = str | tuple[str, int]


@lru_cache(maxsize=256)
def _compile(pattern: str) -> tuple[Token, ...]:
    """A pattern split into literals and fields, once per pattern (materialization formats the same one per action)."""
    if len(pattern) > MAX_PATTERN:
        raise TimelineError(f"date pattern longer than {MAX_PATTERN} characters")
    out: list[Token] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "'":
            if i + 1 < n and pattern[i + 1] == "'":
                out.append("'")
                i += 2
                continue
            end = i + 1
            literal: list[str] = []
            while end < n:
                if pattern[end] == "'" and end + 1 < n and pattern[end + 1] == "'":
                    literal.append("'")
                    end += 2
                    continue
                if pattern[end] == "'":
                    break
                literal.append(pattern[end])
                end += 1
            if end >= n:
                raise TimelineError(f"unterminated quote in date pattern {pattern!r}")
            out.append("".join(literal))
            i = end + 1
            continue
        if ch.isascii() and ch.isalpha():
            width = 1
            while i + width < n and pattern[i + width] == ch:
                width += 1
            if ch not in _LETTERS:
                raise TimelineError(f"date pattern letter {ch!r} is not supported")
            out.append((ch, width))
            i += width
            continue
        out.append(ch)
        i += 1
    return tuple(out)


#: Every letter _field knows; any other is refused when the pattern is compiled.
_LETTERS = frozenset("yMSEazZXG") | frozenset(_NUMBERS)


def format_java(value: datetime, pattern: str) -> str:
    """Format an aware datetime with a Java SimpleDateFormat pattern ('quoted' text, '' for a quote)."""
    require_aware(value)
    if len(pattern) > MAX_PATTERN:
        raise TimelineError(f"date pattern longer than {MAX_PATTERN} characters")
    return "".join(token if isinstance(token, str) else _field(token[0], token[1], value) for token in _compile(pattern))


def format_time(timestamp: str, pattern: str, tz: tzinfo = UTC) -> str:
    """coord:formatTime: an Oozie timestamp formatted with a Java pattern (in tz, UTC by default)."""
    return format_java(parse_datetime(timestamp).astimezone(tz), pattern)


def date_offset(base: str, instance: int, unit: str, tz: tzinfo = UTC) -> str:
    """coord:dateOffset: base moved instance units (MINUTE, HOUR, DAY, MONTH, YEAR), calendar units in tz.

    tz is the processing time zone: the result is written in it (spec 4.1).
    """
    return format_datetime(shift(parse_datetime(base), int(instance), unit, tz), tz)


def date_tz_offset(base: str, tz: tzinfo, processing_tz: tzinfo = UTC) -> str:
    """coord:dateTzOffset: base + (offset of tz - offset of the processing zone) at base, written in the processing zone."""
    moment = parse_datetime(base)
    delta = (moment.astimezone(tz).utcoffset() or timedelta(0)) - (moment.astimezone(processing_tz).utcoffset() or timedelta(0))
    return format_datetime(moment + delta, processing_tz)


def epoch_time(timestamp: str, millis: bool | str = False) -> str:
    """coord:epochTime: seconds (or milliseconds) since 1970-01-01T00:00Z, as text."""
    seconds = int(parse_datetime(timestamp).timestamp())
    wants_millis = millis if isinstance(millis, bool) else str(millis).lower() == "true"
    return str(seconds * 1000 if wants_millis else seconds)
