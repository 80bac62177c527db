"""A worker that stops taking work while work waits for it stops, to be started again (issue 24, item 2).

A worker can go on answering `ping` while it takes nothing more from Redis: prefetch slots
leaked by a broker fault (kombu's QoS before project.broker's fix), a consumer that was
cancelled, a channel that never came back after a cut. Nothing outside the worker sees that.
The worker's main process checks itself instead, every few seconds: messages wait in a queue
it was started to consume, it has pool processes free (fewer messages reserved than its
concurrency), and it has started no task since the last check. When that has held for
`WORKER_STALL_SECONDS` without a break, it logs why and makes a warm shutdown with exit code 70
(EX_SOFTWARE): running tasks finish, and the supervisor (`manage.py up`, systemd's
`Restart=always`, Kubernetes) starts a fresh worker with all its capacity.

Broker errors while checking reset the count: a Redis that is down is the reconnect loop's
business, not a stall. The queues are those the worker was started with: a consumer cancelled
at run time (Flower's "cancel consumer") counts as stopped; change `--queues` to change what a
worker consumes. `WORKER_STALL_SECONDS=0` turns the check off.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import redis
from celery import bootsteps
from celery.worker import state
from django.conf import settings

log = logging.getLogger(__name__)

#: The exit code of a worker that stopped itself because it stalled (sysexits' EX_SOFTWARE).
EXIT_STALLED = 70
#: kombu's Redis transport keeps priorities 3, 6 and 9 of a queue in lists of their own.
PRIORITY_SUFFIXES = ("", "\x06\x163", "\x06\x166", "\x06\x169")


class ConsumptionWatchdog(bootsteps.StartStopStep):
    """Consumer step: stop the worker when work has waited for its free processes for WORKER_STALL_SECONDS."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.limit = float(settings.WORKER_STALL_SECONDS)
        self.interval = max(0.5, min(5.0, self.limit / 4))
        self.queues: list[str] = []
        self.stalled_since: float | None = None
        self.started_tasks = 0
        self.tref: Any = None
        self.client: redis.Redis | None = None

    def start(self, parent: Any) -> None:
        """Remember the queues the worker was started with; check every few seconds."""
        if self.limit <= 0 or self.tref is not None:
            return
        self.queues = sorted(parent.app.amqp.queues.consume_from)
        self.concurrency = int(parent.controller.concurrency or 1)
        self.started_tasks = state.all_total_count[0]
        self.tref = parent.timer.call_repeatedly(self.interval, self.check, priority=10)

    def stop(self, parent: Any) -> None:
        """Stop checking (the consumer restarts its steps after a broker reconnect)."""
        if self.tref is not None:
            self.tref.cancel()
            self.tref = None
        self.stalled_since = None
        if self.client is not None:
            self.client.close()
            self.client = None

    shutdown = stop

    def waiting(self) -> int:
        """Messages waiting in the worker's queues (Redis lists), all priorities."""
        if self.client is None:
            self.client = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=2, socket_connect_timeout=2)
        pipe = self.client.pipeline(transaction=False)
        for queue in self.queues:
            for suffix in PRIORITY_SUFFIXES:
                pipe.llen(queue + suffix)
        return int(sum(pipe.execute()))

    def check(self) -> None:
        """One look: progress, or waiting work with free processes; stop the worker past the limit."""
        started, self.started_tasks = self.started_tasks, state.all_total_count[0]
        free = self.concurrency - len(state.reserved_requests)
        try:
            waiting = self.waiting() if free > 0 and started == self.started_tasks else 0
        except (redis.RedisError, OSError):
            waiting = 0
        now = time.monotonic()
        if waiting == 0:
            self.stalled_since = None
            return
        if self.stalled_since is None:
            self.stalled_since = now
            return
        if now - self.stalled_since >= self.limit:
            log.error(
                "this worker started no task for %.0f s while %s messages waited in its queues (%s) and %s of "
                "its %s processes were free: it stopped consuming; stopping it (exit %s) so that its "
                "supervisor starts it again", now - self.stalled_since, waiting, ", ".join(self.queues), free,
                self.concurrency, EXIT_STALLED,
            )
            state.should_stop = EXIT_STALLED  # type: ignore[assignment]  # celery declares it None
