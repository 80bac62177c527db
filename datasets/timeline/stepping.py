"""Nominal times of a recurrence: start + k * frequency, in calendar terms in its time zone.

Every nominal time is computed from the first one (never by repeated addition), as Oozie
does, so month-end clamping never drifts (Jan 31, Feb 28, Mar 31, ...) and a daily job at
local midnight stays at local midnight across 23- and 25-hour days.

Cron frequencies fire on the processing time zone's wall clock (the frequency's `zone`),
and firings a day or more after the previous one move by the job zone's DST difference
from the start (Oozie's CoordMaterializeTransitionXCommand.addDSTChangeToNominalTime).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, tzinfo

from dateutil.relativedelta import relativedelta

from datasets.timeline.cron import CronSchedule
from datasets.timeline.datetimes import from_wall, require_aware, to_local, wall
from datasets.timeline.errors import InvalidFrequencyError, TimelineError
from datasets.timeline.frequency import Frequency, TimeUnit

MAX_CRON_STEPS = 1_000_000
ONE_DAY = timedelta(days=1)


def add_months(wall: datetime, months: int) -> datetime:
    """Add calendar months to a wall time, clamping the day to the month's length (Jan 31 + 1 = Feb 28/29).

    relativedelta clamps exactly as Java's Calendar.add(MONTH, n) does.
    """
    try:
        return wall + relativedelta(months=months)
    except (ValueError, OverflowError):  # past year 9999 or before year 1
        raise TimelineError(f"date out of range: {months} months from {wall:%Y-%m-%d}") from None


def _wall(value: datetime, tz: tzinfo) -> datetime:
    return to_local(value, tz).replace(tzinfo=None)


def first_nominal_time(start: datetime, frequency: Frequency, tz: tzinfo) -> datetime:
    """The first occurrence: start itself, or moved to the end of its local day/month, or the first cron match."""
    require_aware(start, "start")
    if frequency.unit is TimeUnit.END_OF_DAY:
        local = _wall(start, tz)
        return from_wall(wall(local.year, local.month, local.day) + timedelta(days=1), tz)
    if frequency.unit is TimeUnit.END_OF_WEEK:
        # Weeks start on Sunday (Java's US default); the time of day is kept (reference 4.4.3).
        local = _wall(start, tz)
        days_ahead = (6 - local.weekday()) % 7 or 7
        return from_wall(local + timedelta(days=days_ahead), tz)
    if frequency.unit is TimeUnit.END_OF_MONTH:
        local = _wall(start, tz)
        return from_wall(add_months(wall(local.year, local.month, 1), 1), tz)
    if frequency.unit is TimeUnit.CRON:
        found = next(_cron_times(start, frequency, tz), None)
        if found is None:
            raise InvalidFrequencyError(f"cron frequency {frequency.cron!r} never fires")
        return found
    return start.astimezone(UTC)


def dst_shift(start: datetime, firing: datetime, tz: tzinfo) -> timedelta:
    """Oozie's DaylightOffsetCalculator.getDSTOffset(tz, start, firing): + the start's DST, - the firing's, or 0."""
    begin = start.astimezone(tz).dst() or timedelta(0)
    end = firing.astimezone(tz).dst() or timedelta(0)
    if begin and not end:
        return begin
    if end and not begin:
        return -end
    return timedelta(0)


def _cron_times(start: datetime, frequency: Frequency, tz: tzinfo) -> Iterator[datetime]:
    """The nominal times of a cron frequency from start, strictly increasing, until the schedule stops.

    Firings are searched on the wall clock of frequency.zone (the processing time zone, UTC if
    None). A firing a day or more after the previous one (the first: after start minus a
    minute, as Oozie's first materialization) moves by dst_shift(start, firing, tz), so that a
    daily or monthly cron keeps its local time in the job's zone across DST (reference section
    7's table). The search goes on from the unshifted firing, as Oozie's does. A forward shift
    that would reach the next firing is not applied, so nominal times never go backwards.
    """
    require_aware(start, "start")
    schedule = CronSchedule.parse(frequency.cron or "")
    zone = frequency.zone or UTC
    previous = start - timedelta(minutes=1)
    current = schedule.next_at_or_after(start, zone)
    while current is not None:
        following = schedule.next_at_or_after(current + timedelta(minutes=1), zone)
        shift = dst_shift(start, current, tz) if current - previous >= ONE_DAY else timedelta(0)
        if shift > timedelta(0) and following is not None and following <= current + shift:
            shift = timedelta(0)
        yield current + shift
        previous, current = current, following


def step(base: datetime, k: int, frequency: Frequency, tz: tzinfo) -> datetime:
    """base moved by k frequency steps (k may be negative); not for cron frequencies."""
    fixed = frequency.fixed_minutes()
    try:
        if fixed is not None:
            return base + timedelta(minutes=fixed * k)
        if frequency.unit is TimeUnit.CRON:
            raise InvalidFrequencyError("cron frequencies are stepped by CronSchedule, not by k")
        wall = _wall(base, tz)
        if frequency.base_unit() is TimeUnit.DAY:
            return from_wall(wall + timedelta(days=frequency.step_amount() * k), tz)
        return from_wall(add_months(wall, frequency.step_amount() * k), tz)
    except OverflowError:
        raise TimelineError(f"date out of range: {k} steps of {frequency} from {base.isoformat()}") from None


def nominal_time(start: datetime, n: int, frequency: Frequency, tz: tzinfo) -> datetime:
    """The n-th (0-based) nominal time; O(1) except for cron frequencies."""
    if frequency.unit is TimeUnit.CRON:
        for index, value in enumerate(_cron_times(start, frequency, tz)):
            if index == n:
                return value
        raise TimelineError(f"cron frequency {frequency.cron!r} has no nominal time number {n + 1}")
    return step(first_nominal_time(start, frequency, tz), n, frequency, tz)


def iter_nominal_times(
    start: datetime,
    end: datetime | None,
    frequency: Frequency,
    tz: tzinfo,
    *,
    limit: int | None = None,
    first_index: int = 0,
) -> Iterator[datetime]:
    """Nominal times of the recurrence from start, beginning with number first_index (0-based),
    stopping before end (exclusive) or after limit items.

    Continuing a recurrence takes the job's start and first_index, never a later nominal time
    as start: endOf* frequencies would move it again, month clamping would drift, and cron
    DST shifts are measured from the start.
    """
    if end is not None:
        require_aware(end, "end")
    produced = 0
    if frequency.unit is TimeUnit.CRON:
        for index, current in enumerate(_cron_times(start, frequency, tz)):
            if (end is not None and current >= end) or (limit is not None and produced >= limit):
                return
            if index >= first_index:
                yield current
                produced += 1
        return
    first = first_nominal_time(start, frequency, tz)
    k = max(first_index, 0)
    while limit is None or produced < limit:
        try:
            value = step(first, k, frequency, tz)
        except TimelineError:
            return  # past year 9999: no datetime is left, so certainly none before end
        if end is not None and value >= end:
            return
        yield value
        produced += 1
        k += 1


def count_before(start: datetime, moment: datetime, frequency: Frequency, tz: tzinfo) -> int:
    """How many nominal times fall strictly before moment (the actions due by then); O(1) for non-cron."""
    require_aware(moment, "moment")
    if frequency.unit is TimeUnit.CRON:
        return sum(1 for _ in iter_nominal_times(start, moment, frequency, tz, limit=MAX_CRON_STEPS))
    first = first_nominal_time(start, frequency, tz)
    if moment <= first:
        return 0
    # Index of the last nominal time < moment, then count = index + 1.
    k = floor_index(first, moment - timedelta(microseconds=1), frequency, tz)
    return k + 1


def floor_index(first: datetime, moment: datetime, frequency: Frequency, tz: tzinfo) -> int:
    """The largest k with step(first, k) <= moment (k may be negative)."""
    fixed = frequency.fixed_minutes()
    if fixed is not None:
        return int((moment - first) // timedelta(minutes=fixed))
    a, b = _wall(first, tz), _wall(moment, tz)
    size = frequency.step_amount()
    if frequency.base_unit() is TimeUnit.DAY:
        estimate = (b.date() - a.date()).days // size
    else:
        estimate = ((b.year - a.year) * 12 + (b.month - a.month)) // size
    k = estimate
    while step(first, k, frequency, tz) > moment:
        k -= 1
    while step(first, k + 1, frequency, tz) <= moment:
        k += 1
    return k


def minutes_in_days(nominal: datetime, n: int, tz: tzinfo) -> int:
    """coord:days(n) as minutes: n whole local days starting with the nominal time's day (DST aware)."""
    local = _wall(nominal, tz)
    day = wall(local.year, local.month, local.day)
    return int((from_wall(day + timedelta(days=n), tz) - from_wall(day, tz)) // timedelta(minutes=1))


def minutes_in_months(nominal: datetime, n: int, tz: tzinfo) -> int:
    """coord:months(n) as minutes: n whole local months starting with the nominal time's month."""
    local = _wall(nominal, tz)
    month = wall(local.year, local.month, 1)
    return int((from_wall(add_months(month, n), tz) - from_wall(month, tz)) // timedelta(minutes=1))


def start_of_period(nominal: datetime, n: int, unit: TimeUnit, tz: tzinfo) -> datetime:
    """The start of the local day/week/month n+1 periods after the nominal time's (coord:endOfDays(n) ... in instance context)."""
    local = _wall(nominal, tz)
    if unit is TimeUnit.END_OF_DAY:
        return from_wall(wall(local.year, local.month, local.day) + timedelta(days=n + 1), tz)
    if unit is TimeUnit.END_OF_WEEK:
        sunday = wall(local.year, local.month, local.day) - timedelta(days=(local.weekday() + 1) % 7)
        return from_wall(sunday + timedelta(days=7 * (n + 1)), tz)
    if unit is TimeUnit.END_OF_MONTH:
        return from_wall(add_months(wall(local.year, local.month, 1), n + 1), tz)
    raise InvalidFrequencyError(f"{unit.value} has no period start")


def frequency_minutes(frequency: Frequency, nominal: datetime, tz: tzinfo) -> int:
    """The frequency's length in minutes at a nominal time (the integer Oozie's EL functions return)."""
    fixed = frequency.fixed_minutes()
    if fixed is not None:
        return fixed
    if frequency.base_unit() is TimeUnit.DAY:
        return minutes_in_days(nominal, frequency.step_amount(), tz)
    if frequency.unit is TimeUnit.CRON:
        raise InvalidFrequencyError("a cron frequency has no length in minutes")
    return minutes_in_months(nominal, frequency.step_amount(), tz)
