"""Template filters of the operator pages: statuses in words, short ids, human durations (kernel.display)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import template

from kernel import display as admin_display

register = template.Library()


@register.filter
def status_words(status: str | None) -> str:
    """`RUNNINGWITHERROR` → `running with error`."""
    return admin_display.status_words(status)


@register.filter
def status_label(status: str | None) -> str:
    """A coloured label in words."""
    return admin_display.status_label(status)


@register.filter
def status_colour(status: str | None) -> str:
    """The colour of a status."""
    return admin_display.status_colour(status)


@register.filter
def short_id(full: str) -> str:
    """`0000123-C` or `0000123-C@7`."""
    return admin_display.short_action_id(full) if "@" in full else admin_display.short_job_id(full)


@register.filter
def duration(value: timedelta | float | None) -> str:
    """`17 ms`, `2 min 5 s`."""
    return admin_display.human_duration(value)


@register.filter
def compact(value: datetime | None) -> str:
    """`2025-11-23 14:05` in the project's time zone."""
    return admin_display.compact_time(value)
