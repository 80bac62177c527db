"""Template filters of the operator pages: statuses in words and colours, times, short ids, durations (kernel.display).

Every colour a template paints comes from here (`status_colour`, `colour`): no template names one."""

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
def exact_time(value: datetime | None) -> str:
    """`2026-11-27 14:03:05 UTC`: the one format (kernel.display.exact_time)."""
    return admin_display.exact_time(value)


@register.simple_tag
def colour(name: str) -> str:
    """A colour of the pages that is not a status's: `track`, `ink`, `paper`, `error_text`... (kernel.display)."""
    return admin_display.PAGE_COLOURS[name]
