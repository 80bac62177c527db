"""Synchronous dataset instances: coord:current, coord:offset, ranges, hoursInDay, daysInMonth, tzOffset.

Instance k of a dataset is its initial instance moved k frequency steps in the dataset's time
zone (k >= 0). Instances before the initial one are silently dropped (spec 6.6.10).
"""

from __future__ import annotations

from calendar import monthrange
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo

from datasets.timeline.datetimes import format_datetime, from_wall, require_aware, to_local, wall
from datasets.timeline.errors import InvalidFrequencyError, TimelineError, TooManyInstancesError
from datasets.timeline.frequency import Frequency, TimeUnit
from datasets.timeline.stepping import add_months, first_nominal_time, floor_index, step

DEFAULT_MAX_INSTANCES = 10_000
OFFSET_UNITS = ("MINUTE", "HOUR", "DAY", "MONTH", "YEAR")


@dataclass(frozen=True, slots=True)
class DatasetTimeline:
    """The instance calculus of one synchronous dataset (initial instance, frequency, time zone)."""

    initial_instance: datetime
    frequency: Frequency
    tz: tzinfo
    #: Instance 0 (the initial instance, moved to the end of its day/month for endOf* frequencies).
    first: datetime = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        require_aware(self.initial_instance, "initial-instance")
        if self.frequency.unit is TimeUnit.CRON:
            raise InvalidFrequencyError("a dataset frequency cannot be a cron expression")
        object.__setattr__(self, "first", first_nominal_time(self.initial_instance, self.frequency, self.tz))

    def instance(self, k: int) -> datetime:
        """The nominal time of instance k (k may be negative: a time before the initial instance)."""
        return step(self.first, k, self.frequency, self.tz)

    def index_at_or_before(self, moment: datetime) -> int:
        """The largest k with instance(k) <= moment (negative when moment precedes the initial instance)."""
        return floor_index(self.first, require_aware(moment), self.frequency, self.tz)

    def index_at_or_after(self, moment: datetime) -> int:
        """The smallest k with instance(k) >= moment."""
        k = self.index_at_or_before(moment)
        return k if self.instance(k) == moment else k + 1

    def exact_index(self, moment: datetime, role: str = "start-instance") -> int:
        """The index of the instance at exactly moment (coord:absolute, an endOf* start-instance).

        Oozie refuses (ph2_coord_absolute_range, E1010) a moment before the first instance or
        between two instances; so does this, in Oozie's words.
        """
        first, at = format_datetime(self.first), format_datetime(require_aware(moment))
        if moment < self.first:
            raise TimelineError(
                f"initial-instance should be equal or earlier than the {role}. initial-instance is {first} and {role} is {at}"
            )
        k = self.index_at_or_before(moment)
        if self.instance(k) != moment:
            raise TimelineError(
                f"initial-instance is not in phase with {role}. initial-instance is {first} and {role} is {at} "
                f"(instances are {format_datetime(self.instance(k))} and {format_datetime(self.instance(k + 1))})"
            )
        return k

    def current_index(self, nominal: datetime, n: int) -> int:
        """The index that coord:current(n) names at this nominal time."""
        return self.index_at_or_before(nominal) + n

    def current(self, nominal: datetime, n: int) -> datetime | None:
        """coord:current(n): None when it falls before the initial instance."""
        k = self.current_index(nominal, n)
        return self.instance(k) if k >= 0 else None

    def offset_index(self, nominal: datetime, n: int, unit: str, *, fast_forward: bool = False) -> int:
        """The index coord:offset(n, unit) names: current(0) moved n units, then rewound to an
        instance (instance, end-instance) or fast-forwarded to one (start-instance)."""
        anchor = self.instance(self.index_at_or_before(nominal))
        target = shift(anchor, n, unit, self.tz)
        return self.index_at_or_after(target) if fast_forward else self.index_at_or_before(target)

    def offset(self, nominal: datetime, n: int, unit: str, *, fast_forward: bool = False) -> datetime | None:
        """coord:offset(n, unit): None when it falls before the initial instance."""
        k = self.offset_index(nominal, n, unit, fast_forward=fast_forward)
        return self.instance(k) if k >= 0 else None

    def between(self, first_index: int, last_index: int, *, max_instances: int = DEFAULT_MAX_INSTANCES) -> list[datetime]:
        """Instances first_index..last_index (inclusive), oldest first as the spec's examples list them.

        Indexes before the initial instance are dropped. The count is checked before any
        instance is computed, so a hostile range such as current(-1000000000) costs nothing.
        """
        return [self.instance(k) for k in self.indexes_between(first_index, last_index, max_instances=max_instances)]

    def indexes_between(self, first_index: int, last_index: int, *, max_instances: int = DEFAULT_MAX_INSTANCES) -> range:
        """The indexes `between` returns the instances of: before the initial instance dropped, the count checked."""
        low = max(first_index, 0)
        if last_index < low:
            return range(0)
        count = last_index - low + 1
        if count > max_instances:
            raise TooManyInstancesError(
                f"the range resolves to {count} instances; at most {max_instances} are allowed"
            )
        return range(low, last_index + 1)


def shift(moment: datetime, n: int, unit: str, tz: tzinfo) -> datetime:
    """moment moved n units: MINUTE and HOUR absolute, DAY/MONTH/YEAR in local calendar terms."""
    name = unit.upper() if isinstance(unit, str) else ""
    if name not in OFFSET_UNITS:
        raise TimelineError(f"time unit {unit!r} is not one of {', '.join(OFFSET_UNITS)}")
    try:
        if name == "MINUTE":
            return moment + timedelta(minutes=n)
        if name == "HOUR":
            return moment + timedelta(hours=n)
        wall = to_local(moment, tz).replace(tzinfo=None)
        if name == "DAY":
            return from_wall(wall + timedelta(days=n), tz)
        return from_wall(add_months(wall, n * (12 if name == "YEAR" else 1)), tz)
    except OverflowError:
        raise TimelineError(f"date out of range: {n} {name.lower()}s from {moment.isoformat()}") from None


def hours_in_day(nominal: datetime, n: int, tz: tzinfo) -> int:
    """coord:hoursInDay(n): hours of the local day n days from the nominal time's day (23, 24 or 25)."""
    local = to_local(nominal, tz)
    day = wall(local.year, local.month, local.day) + timedelta(days=n)
    return int((from_wall(day + timedelta(days=1), tz) - from_wall(day, tz)) // timedelta(hours=1))


def days_in_month(nominal: datetime, n: int, tz: tzinfo) -> int:
    """coord:daysInMonth(n): days of the local month n months from the nominal time's month."""
    local = to_local(nominal, tz)
    month = add_months(wall(local.year, local.month, 1), n)
    return monthrange(month.year, month.month)[1]


def tz_offset(nominal: datetime, dataset_tz: tzinfo, job_tz: tzinfo) -> int:
    """coord:tzOffset(): dataset UTC offset minus job UTC offset, in minutes, at the nominal time."""
    moment = require_aware(nominal).astimezone(UTC)

    def minutes(tz: tzinfo) -> int:
        offset = moment.astimezone(tz).utcoffset()
        return int(offset // timedelta(minutes=1)) if offset is not None else 0

    return minutes(dataset_tz) - minutes(job_tz)
