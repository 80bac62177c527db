"""Frequencies: minutes and hours (absolute), days and months (calendar), end-of variants, cron."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from datetime import tzinfo

from datasets.timeline.cron import CronSchedule
from datasets.timeline.errors import InvalidFrequencyError

MAX_AMOUNT = 10_000_000  # far beyond any schedule, small enough that arithmetic stays cheap


class TimeUnit(enum.Enum):
    """How a frequency steps: absolute minutes, or calendar days/months in a time zone."""

    MINUTE = "MINUTE"
    HOUR = "HOUR"
    DAY = "DAY"
    MONTH = "MONTH"
    YEAR = "YEAR"
    END_OF_DAY = "END_OF_DAY"
    END_OF_WEEK = "END_OF_WEEK"
    END_OF_MONTH = "END_OF_MONTH"
    CRON = "CRON"


CALENDAR_UNITS = frozenset(
    {TimeUnit.DAY, TimeUnit.MONTH, TimeUnit.YEAR, TimeUnit.END_OF_DAY, TimeUnit.END_OF_WEEK, TimeUnit.END_OF_MONTH}
)


_EL_NAMES = {
    TimeUnit.MINUTE: "minutes", TimeUnit.HOUR: "hours", TimeUnit.DAY: "days", TimeUnit.MONTH: "months",
    TimeUnit.YEAR: "years", TimeUnit.END_OF_DAY: "endOfDays", TimeUnit.END_OF_WEEK: "endOfWeeks",
    TimeUnit.END_OF_MONTH: "endOfMonths",
}


@dataclass(frozen=True, slots=True)
class Frequency:
    """A positive amount of a time unit (or a cron expression).

    A cron expression is read on the wall clock of `zone`, the processing time zone (reference
    4.4.4 notes); None means UTC. Other frequencies ignore it: they step in the job's zone.
    """

    amount: int
    unit: TimeUnit
    cron: str | None = None
    zone: tzinfo | None = None

    def __post_init__(self) -> None:
        if self.unit is TimeUnit.CRON:
            if not self.cron:
                raise InvalidFrequencyError("a cron frequency needs an expression")
            return
        if isinstance(self.amount, bool) or not isinstance(self.amount, int):
            raise InvalidFrequencyError(f"frequency amount must be an integer, got {self.amount!r}")
        if self.amount <= 0:
            raise InvalidFrequencyError(f"frequency must be positive, got {self.amount} {self.unit.value.lower()}")
        if self.amount > MAX_AMOUNT:
            raise InvalidFrequencyError(f"frequency {self.amount} is too large")

    def __str__(self) -> str:
        """The EL spelling: `coord:days(2)`, or the cron expression."""
        if self.unit is TimeUnit.CRON:
            return self.cron or ""
        return f"coord:{_EL_NAMES[self.unit]}({self.amount})"

    @classmethod
    def minutes(cls, n: int) -> Frequency:
        """coord:minutes(n), or a plain integer frequency."""
        return cls(n, TimeUnit.MINUTE)

    @classmethod
    def hours(cls, n: int) -> Frequency:
        """coord:hours(n): n * 60 absolute minutes."""
        return cls(n, TimeUnit.HOUR)

    @classmethod
    def days(cls, n: int) -> Frequency:
        """coord:days(n): n calendar days in the time zone (23, 24 or 25 hours each)."""
        return cls(n, TimeUnit.DAY)

    @classmethod
    def months(cls, n: int) -> Frequency:
        """coord:months(n): n calendar months in the time zone."""
        return cls(n, TimeUnit.MONTH)

    @classmethod
    def end_of_days(cls, n: int) -> Frequency:
        """coord:endOfDays(n): days, first occurrence moved to the end of its day."""
        return cls(n, TimeUnit.END_OF_DAY)

    @classmethod
    def end_of_weeks(cls, n: int) -> Frequency:
        """coord:endOfWeeks(n): weeks, first occurrence moved to the next start of week (Sunday)."""
        return cls(n, TimeUnit.END_OF_WEEK)

    @classmethod
    def end_of_months(cls, n: int) -> Frequency:
        """coord:endOfMonths(n): months, first occurrence moved to the end of its month."""
        return cls(n, TimeUnit.END_OF_MONTH)

    @classmethod
    def from_cron(cls, expression: str, zone: tzinfo | None = None) -> Frequency:
        """A cron-like frequency (validated by parsing it), read in `zone` (the processing time zone; UTC if None)."""
        CronSchedule.parse(expression)
        return cls(1, TimeUnit.CRON, cron=" ".join(expression.split()), zone=zone)

    @property
    def is_calendar(self) -> bool:
        """True when stepping depends on the time zone's calendar (days, months)."""
        return self.unit in CALENDAR_UNITS

    def fixed_minutes(self) -> int | None:
        """Length in minutes when it never varies (minutes, hours); None otherwise."""
        if self.unit is TimeUnit.MINUTE:
            return self.amount
        if self.unit is TimeUnit.HOUR:
            return self.amount * 60
        return None

    def base_unit(self) -> TimeUnit:
        """DAY for END_OF_DAY, MONTH for END_OF_MONTH and YEAR; the unit otherwise."""
        return {
            TimeUnit.END_OF_DAY: TimeUnit.DAY,
            TimeUnit.END_OF_WEEK: TimeUnit.DAY,
            TimeUnit.END_OF_MONTH: TimeUnit.MONTH,
            TimeUnit.YEAR: TimeUnit.MONTH,
        }.get(self.unit, self.unit)

    def step_amount(self) -> int:
        """Units added per step of base_unit() (a year is 12 months)."""
        if self.unit is TimeUnit.YEAR:
            return self.amount * 12
        return self.amount * 7 if self.unit is TimeUnit.END_OF_WEEK else self.amount


_PLAIN = re.compile(r"^[ \t]*[0-9]+[ \t]*$")


def parse_frequency(text: str) -> Frequency:
    """A frequency attribute after EL evaluation: integer minutes or a cron expression."""
    if not isinstance(text, str) or len(text) > 200:
        raise InvalidFrequencyError(f"frequency {text!r} is not understood")
    if _PLAIN.match(text):
        return Frequency.minutes(int(text))
    if re.match(r"^[ \t]*-[0-9]+[ \t]*$", text):
        raise InvalidFrequencyError(f"frequency must be positive, got {text.strip()}")
    if len(text.split()) == 5:
        return Frequency.from_cron(text)
    raise InvalidFrequencyError(
        f"frequency {text!r} is not understood (minutes, coord:days(n)-style functions or a 5-field cron expression)"
    )
