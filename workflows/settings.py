"""The workflow runtime's settings, with their defaults (docs/configuration.md)."""

from __future__ import annotations

from datetime import timedelta

import kombu.exceptions
import redis.exceptions
from django import db
from django.conf import settings


def lease_seconds() -> float:
    """How long a running node's lease lasts without a heartbeat (renewed every third of it)."""
    return float(getattr(settings, "WORKFLOW_LEASE_SECONDS", getattr(settings, "COMMAND_LEASE_SECONDS", 60)))


def max_launches() -> int:
    """Launches of one node allowed when its worker is lost; then it FAILED, naming the worker."""
    return max(1, int(getattr(settings, "WORKFLOW_MAX_LAUNCHES", 3)))


def resend_after(dispatches: int) -> timedelta:
    """How long a sent, unclaimed node waits before its message is sent again (doubling, capped)."""
    base = float(getattr(settings, "WORKFLOW_RESEND_SECONDS", 60))
    cap = float(getattr(settings, "WORKFLOW_RESEND_MAX_SECONDS", 600))
    return timedelta(seconds=min(cap, base * 2 ** max(0, min(dispatches - 1, 20))))


def report_retry_seconds() -> float:
    """How long a worker keeps trying to record an outcome while the database is unreachable."""
    return float(getattr(settings, "WORKFLOW_REPORT_RETRY_SECONDS", 600))


def is_transient(exc: BaseException) -> bool:
    """An infrastructure error a task met (database or broker connection lost, a timeout), not its own bug.

    WORKFLOW_RETRY_TRANSIENT_ERRORS=false treats every exception as the task's final error.
    """
    if not getattr(settings, "WORKFLOW_RETRY_TRANSIENT_ERRORS", True):
        return False

    transient = (
        db.OperationalError, db.InterfaceError, ConnectionError, TimeoutError,
        redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, kombu.exceptions.OperationalError,
    )
    return isinstance(exc, transient)


def user_retry_interval() -> float:
    """Seconds in one unit of an action's `retry-interval` (Oozie: minutes, so 60; tests shorten it)."""
    return float(getattr(settings, "WORKFLOW_RETRY_INTERVAL_UNIT_SECONDS", 60))
