"""The workflow runtime's settings, with their defaults (docs/configuration.md)."""

from __future__ import annotations

from datetime import timedelta

import kombu.exceptions
import redis.exceptions
from django import db
from django.conf import settings


def lease_seconds() -> float:
    """How long a running node's lease lasts without a heartbeat (renewed every third of it)."""
    return float(settings.WORKFLOW_LEASE_SECONDS)


def max_launches() -> int:
    """Launches of one node allowed when its worker is lost; then it FAILED, naming the worker."""
    return max(1, int(settings.WORKFLOW_MAX_LAUNCHES))


def resend_after(dispatches: int) -> timedelta:
    """How long a sent, unclaimed node waits before its message is sent again (doubling, capped)."""
    base = float(settings.WORKFLOW_RESEND_SECONDS)
    cap = float(settings.WORKFLOW_RESEND_MAX_SECONDS)
    return timedelta(seconds=min(cap, base * 2 ** max(0, min(dispatches - 1, 20))))


def report_retry_seconds() -> float:
    """How long a worker keeps trying to record an outcome while the database is unreachable."""
    return float(settings.WORKFLOW_REPORT_RETRY_SECONDS)


def is_transient(exc: BaseException) -> bool:
    """An infrastructure error a task met (database or broker connection lost, a timeout), not its own bug.

    WORKFLOW_RETRY_TRANSIENT_ERRORS=false treats every exception as the task's final error.
    """
    if not settings.WORKFLOW_RETRY_TRANSIENT_ERRORS:
        return False

    transient = (
        db.OperationalError, db.InterfaceError, ConnectionError, TimeoutError,
        redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, kombu.exceptions.OperationalError,
    )
    return isinstance(exc, transient)


def user_retry_interval() -> float:
    """Seconds in one unit of an action's `retry-interval` (Oozie: minutes, so 60; tests shorten it)."""
    return float(settings.WORKFLOW_RETRY_INTERVAL_UNIT_SECONDS)
