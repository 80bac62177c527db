"""The pure time line: Oozie datetimes, time zones, frequencies, nominal times, dataset instances.

No Django, no Celery, no clock: every function takes aware datetimes and returns values or
raises a TimelineError.
"""

from __future__ import annotations

from datasets.timeline.datetimes import (
    available_timezone_ids,
    format_datetime,
    from_wall,
    parse_datetime,
    require_aware,
    resolve_timezone,
    to_local,
)
from datasets.timeline.errors import (
    InvalidDatetimeError,
    InvalidFrequencyError,
    NaiveDatetimeError,
    TimelineError,
    TooManyInstancesError,
    UnknownTimezoneError,
)
from datasets.timeline.frequency import Frequency, TimeUnit, parse_frequency
from datasets.timeline.instances import (
    DEFAULT_MAX_INSTANCES,
    DatasetTimeline,
    days_in_month,
    hours_in_day,
    shift,
    tz_offset,
)
from datasets.timeline.javaformat import (
    date_offset,
    date_tz_offset,
    epoch_time,
    format_java,
    format_time,
)
from datasets.timeline.stepping import (
    count_before,
    first_nominal_time,
    frequency_minutes,
    iter_nominal_times,
    minutes_in_days,
    minutes_in_months,
    nominal_time,
    start_of_period,
)
from datasets.timeline.uritemplate import expand_uri_template

__all__ = [
    "DEFAULT_MAX_INSTANCES",
    "DatasetTimeline",
    "Frequency",
    "InvalidDatetimeError",
    "InvalidFrequencyError",
    "NaiveDatetimeError",
    "TimeUnit",
    "TimelineError",
    "TooManyInstancesError",
    "UnknownTimezoneError",
    "available_timezone_ids",
    "count_before",
    "date_offset",
    "date_tz_offset",
    "days_in_month",
    "epoch_time",
    "expand_uri_template",
    "first_nominal_time",
    "format_datetime",
    "format_java",
    "format_time",
    "frequency_minutes",
    "from_wall",
    "hours_in_day",
    "iter_nominal_times",
    "minutes_in_days",
    "minutes_in_months",
    "nominal_time",
    "parse_datetime",
    "parse_frequency",
    "require_aware",
    "resolve_timezone",
    "shift",
    "start_of_period",
    "to_local",
    "tz_offset",
]
