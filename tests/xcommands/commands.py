"""Commands and tasks used by the engine's tests; workers import them via EXTRA_TASK_MODULES.

Each traces its start and end into the real Redis (so tests can check order and overlap
across processes), counts failures and rollbacks there, and makes a transactional database
effect by enqueueing a marker command on the key ``effects:<label>``.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any

import redis
from celery import shared_task
from django.conf import settings

from xcommands.base import XCommand
from xcommands.errors import PermanentError, PreconditionFailed, TransientError
from xcommands.queue import enqueue


def trace_client() -> redis.Redis:
    """Redis client for traces: the test's Redis (REDIS_URL)."""
    return redis.Redis.from_url(settings.REDIS_URL)


def record(key: str, label: str, event: str) -> None:
    """Append a timestamped event to the key's trace list."""
    trace_client().rpush(
        f"trace:{key}",
        json.dumps({"label": label, "event": event, "t": time.time(), "pid": os.getpid()}),
    )


def read_trace(client: redis.Redis, key: str) -> list[dict[str, Any]]:
    """Every event recorded for the key, in order."""
    return [json.loads(item) for item in client.lrange(f"trace:{key}", 0, -1)]


@dataclass
class MarkerXCommand(XCommand):
    """No-op: its existence records that an effect committed."""

    key: str
    label: str = ""

    def job_key(self) -> str:
        return self.key

    def execute(self) -> None:
        return None


@dataclass
class TraceXCommand(XCommand):
    """Trace start/end, optionally sleep, fail, or refuse its precondition."""

    key: str
    label: str
    sleep: float = 0.0
    fail_times: int = 0
    fail_kind: str = "transient"
    rollback_fails: bool = False
    applies: bool = True
    transactional: bool = True
    effect: bool = True

    max_retries = 3
    backoff_base_seconds = 0.2
    backoff_cap_seconds = 2.0

    def job_key(self) -> str:
        return self.key

    def is_atomic(self) -> bool:
        return self.transactional

    def verify_precondition(self) -> None:
        if not self.applies:
            raise PreconditionFailed(f"{self.label} does not apply")

    def execute(self) -> dict[str, Any]:
        record(self.key, self.label, "start")
        if self.sleep:
            time.sleep(self.sleep)
        client = trace_client()
        if self.fail_times and client.incr(f"fails:{self.label}") <= self.fail_times:
            record(self.key, self.label, "fail")
            if self.fail_kind == "permanent":
                raise PermanentError(f"{self.label} failed for good")
            raise TransientError(f"{self.label} failed for now")
        if self.effect:
            enqueue(MarkerXCommand(key=f"effects:{self.label}", label=self.label))
        record(self.key, self.label, "end")
        return {"label": self.label, "pid": os.getpid()}

    def rollback(self, error: str) -> None:
        trace_client().incr(f"rollbacks:{self.label}")
        if self.rollback_fails:
            raise RuntimeError(f"rollback of {self.label} failed")


@shared_task(name="actions.tests.append")
def append_task(key: str, label: str, fail_times: int = 0) -> str:
    """A keyed-job task: append the label to a Redis list; fail the first fail_times calls."""
    client = trace_client()
    if fail_times and client.incr(f"fails:{label}") <= fail_times:
        raise TransientError(f"{label} failed for now")
    client.rpush(f"appended:{key}", label)
    return label


@shared_task(name="actions.tests.undo")
def undo_task(key: str, label: str, fail_times: int = 0, error: str = "") -> None:
    """A keyed-job rollback task: count rollbacks in Redis."""
    trace_client().incr(f"rollbacks:{label}")
