"""Cron-like frequencies (newer reference, section 4.4.4): five Quartz-style fields, no seconds.

Fields: minute (0-59), hour (0-23), day-of-month (1-31, ? L L-n nW LW), month (1-12 or
JAN-DEC), day-of-week (1-7 = SUN-SAT, ? L nL n#k). `*`, lists, ranges (also overflowing,
e.g. 22-2), and `a/b` increments. Evaluated on the wall clock of the given time zone:
coordinators pass the processing time zone (UTC or a fixed offset, reference 4.4.4 notes),
whatever the job's zone; the job zone's DST correction happens in stepping. In a zone with
DST, wall times skipped by it are not fired and repeated ones fire once.
"""

from __future__ import annotations

import re
from calendar import monthrange
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo
from typing import Any

from datasets.timeline.datetimes import from_wall, require_aware, to_local, wall
from datasets.timeline.errors import InvalidFrequencyError

MONTHS = {name: i for i, name in enumerate(
    ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"], start=1)}
WEEKDAYS = {name: i for i, name in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"], start=1)}
SEARCH_YEARS = 8  # a valid expression fires within this many years (29 Feb needs up to 8)


def _error(expression: str, message: str) -> InvalidFrequencyError:
    return InvalidFrequencyError(f"cron frequency {expression!r}: {message}")


def _number(token: str, low: int, high: int, names: dict[str, int], expression: str) -> int:
    upper = token.upper()
    if upper in names:
        return names[upper]
    if not token.isdigit():
        raise _error(expression, f"{token!r} is not a number")
    value = int(token)
    if not low <= value <= high:
        raise _error(expression, f"{value} is outside {low}-{high}")
    return value


def _field(text: str, low: int, high: int, names: dict[str, int], expression: str) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        if not part:
            raise _error(expression, "empty list item")
        step = 1
        if "/" in part:
            part, step_text = part.split("/", 1)
            if not step_text.isdigit() or int(step_text) == 0:
                raise _error(expression, f"bad increment {step_text!r}")
            step = int(step_text)
        if part in {"*", "?"}:
            first, last = low, high
        elif "-" in part:
            a, b = part.split("-", 1)
            first, last = _number(a, low, high, names, expression), _number(b, low, high, names, expression)
        else:
            first = _number(part, low, high, names, expression)
            last = high if step > 1 or "/" in text else first
        span = list(range(first, last + 1)) if first <= last else [*range(first, high + 1), *range(low, last + 1)]
        values.update(span[::step])
    return frozenset(values)


@dataclass(frozen=True, slots=True)
class CronSchedule:
    """A parsed cron-like expression; `next_at_or_after` finds firings on a time zone's wall clock."""

    expression: str
    minutes: frozenset[int]
    hours: frozenset[int]
    months: frozenset[int]
    dom: frozenset[int] | None  # None: no day-of-month restriction (or '?')
    dom_last_offset: int | None  # L (0) or L-n (n)
    dom_nearest_weekday: int | None  # nW
    dom_last_weekday: bool  # LW
    dow: frozenset[int] | None  # 1=SUN..7=SAT
    dow_last: int | None  # nL: last weekday n of the month
    dow_nth: tuple[int, int] | None  # n#k
    dom_star: bool
    dow_star: bool

    @classmethod
    def parse(cls, expression: str) -> CronSchedule:
        """Parse five fields, or raise InvalidFrequencyError naming the problem."""
        if not isinstance(expression, str) or len(expression) > 200:
            raise InvalidFrequencyError(f"cron frequency {expression!r} is not understood")
        fields = expression.split()
        if len(fields) != 5:
            raise _error(expression, "needs 5 fields: minute hour day-of-month month day-of-week")
        minute, hour, dom_text, month, dow_text = fields
        dom_text, dow_text = dom_text.upper(), dow_text.upper()
        parsed: dict[str, Any] = dict(
            expression=" ".join(fields),
            minutes=_field(minute, 0, 59, {}, expression),
            hours=_field(hour, 0, 23, {}, expression),
            months=_field(month, 1, 12, MONTHS, expression),
            dom=None, dom_last_offset=None, dom_nearest_weekday=None, dom_last_weekday=False,
            dow=None, dow_last=None, dow_nth=None,
            dom_star=dom_text in {"*", "?"}, dow_star=dow_text in {"*", "?"},
        )
        if dom_text == "LW":
            parsed["dom_last_weekday"] = True
        elif re.fullmatch(r"L(-\d{1,2})?", dom_text):
            last_offset = int(dom_text[2:]) if "-" in dom_text else 0
            parsed["dom_last_offset"] = last_offset
            if last_offset > 30:
                raise _error(expression, "L-n needs n below 31")
        elif re.fullmatch(r"\d{1,2}W", dom_text):
            day = int(dom_text[:-1])
            if not 1 <= day <= 31:
                raise _error(expression, f"{day}W is not a day of the month")
            parsed["dom_nearest_weekday"] = day
        elif not parsed["dom_star"]:
            parsed["dom"] = _field(dom_text, 1, 31, {}, expression)
        if dow_text == "L":
            parsed["dow"] = frozenset({7})
        elif re.fullmatch(r"[1-7]L|[A-Z]{3}L", dow_text):
            parsed["dow_last"] = _number(dow_text[:-1], 1, 7, WEEKDAYS, expression)
        elif "#" in dow_text:
            day_text, nth_text = dow_text.split("#", 1)
            if not nth_text.isdigit() or not 1 <= int(nth_text) <= 5:
                raise _error(expression, "n#k needs k from 1 to 5")
            parsed["dow_nth"] = (_number(day_text, 1, 7, WEEKDAYS, expression), int(nth_text))
        elif not parsed["dow_star"]:
            parsed["dow"] = _field(dow_text, 1, 7, WEEKDAYS, expression)
        schedule = cls(**parsed)
        if not schedule._fires_in_some_month():
            raise _error(expression, "never fires (no month has such a day)")
        return schedule

    # --- day matching --------------------------------------------------------------------
    def _dom_restricted(self) -> bool:
        return not self.dom_star

    def _dow_restricted(self) -> bool:
        return not self.dow_star

    def _dom_matches(self, day: date) -> bool:
        last = monthrange(day.year, day.month)[1]
        if self.dom_last_weekday:
            target = last
            while date(day.year, day.month, target).weekday() >= 5:
                target -= 1
            return day.day == target
        if self.dom_last_offset is not None:
            return day.day == last - self.dom_last_offset
        if self.dom_nearest_weekday is not None:
            return day.day == _nearest_weekday(day.year, day.month, self.dom_nearest_weekday)
        return self.dom is None or day.day in self.dom

    def _dow_matches(self, day: date) -> bool:
        weekday = (day.isoweekday() % 7) + 1  # 1=SUN..7=SAT
        last = monthrange(day.year, day.month)[1]
        if self.dow_last is not None:
            return weekday == self.dow_last and day.day + 7 > last
        if self.dow_nth is not None:
            wanted, nth = self.dow_nth
            return weekday == wanted and (day.day - 1) // 7 + 1 == nth
        return self.dow is None or weekday in self.dow

    def day_matches(self, day: date) -> bool:
        """Whether the schedule fires on this calendar day (month included).

        As in Vixie cron, when both day fields are restricted a day matching either fires.
        """
        if day.month not in self.months:
            return False
        if self._dom_restricted() and self._dow_restricted():
            return self._dom_matches(day) or self._dow_matches(day)
        if self._dom_restricted():
            return self._dom_matches(day)
        if self._dow_restricted():
            return self._dow_matches(day)
        return True

    def _fires_in_some_month(self) -> bool:
        for year in (2023, 2024, 2025, 2026):  # covers leap and every weekday layout we need
            for month in self.months:
                for day_number in range(1, monthrange(year, month)[1] + 1):
                    if self.day_matches(date(year, month, day_number)):
                        return True
        return False

    # --- search ----------------------------------------------------------------------------
    def next_at_or_after(self, moment: datetime, tz: tzinfo) -> datetime | None:
        """The first firing at or after moment (minute precision), or None within the search horizon."""
        local = to_local(require_aware(moment), tz)
        start = wall(local.year, local.month, local.day, local.hour, local.minute)
        if local.second or local.microsecond:
            start += timedelta(minutes=1)
        day = start.date()
        horizon = day + timedelta(days=366 * SEARCH_YEARS)
        while day <= horizon:
            if self.day_matches(day):
                for hour in sorted(self.hours):
                    if day == start.date() and hour < start.hour:
                        continue  # already past on the first day
                    for minute in sorted(self.minutes):
                        candidate = wall(day.year, day.month, day.day, hour, minute)
                        if candidate < start:
                            continue
                        instant = from_wall(candidate, tz)
                        if to_local(instant, tz).replace(tzinfo=None) != candidate:
                            continue  # skipped by a DST gap
                        if instant >= moment:
                            return instant
            day += timedelta(days=1)
        return None


def _nearest_weekday(year: int, month: int, day: int) -> int:
    last = monthrange(year, month)[1]
    day = min(day, last)
    weekday = date(year, month, day).weekday()  # 0=MON..6=SUN
    if weekday == 5:  # Saturday: Friday before, unless that leaves the month
        return day - 1 if day > 1 else day + 2
    if weekday == 6:  # Sunday: Monday after, unless that leaves the month
        return day + 1 if day < last else day - 2
    return day
