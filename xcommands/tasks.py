"""Celery tasks of the command engine: the recovery sweep, and importing the commands."""

from __future__ import annotations

from celery import shared_task

from xcommands import keyed  # noqa: F401 - registers KeyedJobXCommand's task in every worker
from xcommands.recovery import sweep


@shared_task(name="xcommands.service.sweep", ignore_result=True)
def recovery_sweep() -> dict[str, int]:
    """Return expired leases to the queue and re-ring waiting heads (celery beat)."""
    report = sweep()
    return {"leases_expired": report.leases_expired, "rung": report.rung}
