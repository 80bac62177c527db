"""Celery tasks of the command engine: the recovery sweep, and importing the commands."""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from xcommands import keyed  # noqa: F401 - registers KeyedJobXCommand's task in every worker
from xcommands.recovery import purge_finished, sweep


@shared_task(name="xcommands.service.sweep", ignore_result=True)
def recovery_sweep() -> dict[str, int]:
    """Return expired leases to the queue and re-ring waiting heads (celery beat)."""
    report = sweep()
    return {"leases_expired": report.leases_expired, "rung": report.rung}


@shared_task(name="xcommands.service.purge", ignore_result=True)
def purge_history() -> int:
    """Delete finished commands older than COMMAND_HISTORY_DAYS (celery beat, hourly)."""
    days = int(settings.COMMAND_HISTORY_DAYS)
    return purge_finished(timezone.now(), timedelta(days=days))

