"""Typed errors of the time line: every one is a ValueError a user can cause and read."""

from __future__ import annotations


class TimelineError(ValueError):
    """Base of every time line error."""


class InvalidDatetimeError(TimelineError):
    """A datetime is not in Oozie's `YYYY-MM-DDTHH:mmZ` (or offset) form."""


class UnknownTimezoneError(TimelineError):
    """A time zone identifier is neither a zoneinfo name nor a GMT offset."""


class InvalidFrequencyError(TimelineError):
    """A frequency is zero, negative, or not understood."""


class TooManyInstancesError(TimelineError):
    """A dataset range resolves to more instances than the configured cap."""


class NaiveDatetimeError(TimelineError):
    """A naive datetime reached the time line; only aware datetimes are accepted."""
