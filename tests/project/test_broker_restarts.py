"""A real worker and celery beat outlive a Redis that is SIGKILLed and restarted empty, or flushed.

The worker must reconnect every time (kombu's transport used to kill it while closing the
dropped connection: project/broker.py), beat must keep ticking and publish again once Redis is
back, and the command engine's sweep must re-ring every doorbell Redis lost, so each keyed job
enqueued before, during and after the outages ends SUCCEEDED, exactly once and in key order.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.db import transaction

from project.celery import app
from tests.support.celery_app import point_celery_at
from tests.support.processes import RedisServer, WorkerProcess, start_redis, wait_until
from xcommands.choices import CommandStatus
from xcommands.keyed import enqueue_job
from xcommands.models import Command

pytestmark = pytest.mark.integration

# Fewer keys than worker slots: the worker holds unacknowledged messages *and* keeps polling
# for more when Redis dies, the state in which kombu's own transport killed it every time.
KEYS = 2
CONCURRENCY = 3
ENGINE_ENV = {
    "COMMAND_LEASE_SECONDS": "3",
    "COMMAND_SWEEP_SECONDS": "1",
    "COMMAND_RING_STALE_SECONDS": "2",
}


@pytest.fixture
def own_redis(celery_to_test_redis: str) -> Iterator[RedisServer]:
    """A Redis only this test uses, so it may kill it; this process publishes to it too.

    Requested before the worker fixtures, so it is torn down after them: the workers' warm
    shutdown still has its broker.
    """
    server = start_redis()
    point_celery_at(app, server.url, server.url)
    try:
        yield server
    finally:
        point_celery_at(app, celery_to_test_redis, celery_to_test_redis)
        server.stop()
        shutil.rmtree(server.directory, ignore_errors=True)


class Jobs:
    """Keyed `examples.record` jobs, enqueued in batches over KEYS keys, each logging its run."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.rows: list[Command] = []
        self.order: dict[str, list[str]] = {f"key-{k}": [] for k in range(KEYS)}

    def enqueue(self, batch: str, count: int = 8) -> None:
        """Enqueue `count` jobs in one transaction; their doorbells ring on commit (or fail to)."""
        with transaction.atomic():
            for i in range(count):
                key, name = f"key-{i % KEYS}", f"{batch}-{i}"
                self.order[key].append(name)
                configuration = {"seconds": 0.2, "log": str(self.log)}
                self.rows.append(
                    enqueue_job(key, "examples.record", kwargs={"configuration": configuration, "nominal_time": name})
                )

    def wait_running(self, worker: WorkerProcess) -> None:
        """Wait until a job runs: the worker then holds its message unacknowledged."""
        running = Command.objects.filter(pk__in=[row.pk for row in self.rows], status=CommandStatus.RUNNING)

        def check() -> bool:
            if worker.process.poll() is not None:
                raise AssertionError(f"the worker exited:\n{worker.log()[-3000:]}")
            return running.exists()

        wait_until(check, 30, "a job to be running", interval=0.02)

    def unfinished(self) -> list[tuple[int, str]]:
        """(id, status) of every job not SUCCEEDED yet."""
        ids = [row.pk for row in self.rows]
        return list(
            Command.objects.filter(pk__in=ids).exclude(status=CommandStatus.SUCCEEDED).values_list("pk", "status")
        )

    def runs(self) -> list[str]:
        """Nominal times in the order their runs started, one entry per run."""
        lines = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [line["nominal_time"] for line in sorted(lines, key=lambda line: line["started"])]


def test_worker_and_beat_survive_redis_restarting_empty_and_flushall(
    own_redis: RedisServer,
    live_workers: Callable[..., WorkerProcess],
    live_beat: Callable[..., WorkerProcess],
    tmp_path: Path,
) -> None:
    """Three SIGKILL-and-restart-empty outages and one FLUSHALL, with jobs enqueued before, while
    Redis is down, and after: the worker and beat never exit, and every job ends SUCCEEDED,
    exactly once, in enqueue order per key."""
    env = {**ENGINE_ENV, "REDIS_URL": own_redis.url}
    worker = live_workers(name="w1", concurrency=CONCURRENCY, **env)
    beat = live_beat(**env, LOG_PERIODIC_TASKS="true")  # its "Sending due task" lines show it is alive
    jobs = Jobs(tmp_path / "record.log")

    jobs.enqueue("before", count=16)
    for outage in range(3):
        jobs.wait_running(worker)
        own_redis.kill()
        time.sleep(0.5)
        jobs.enqueue(f"down-{outage}", count=4)  # committed; the doorbells cannot be sent
        time.sleep(1)
        own_redis.start()  # empty: every doorbell and unacknowledged message is gone
        jobs.enqueue(f"up-{outage}", count=6)
    jobs.wait_running(worker)
    own_redis.client().flushall()
    jobs.enqueue("flushed", count=4)
    time.sleep(1)
    beat_log_at_end = len(beat.log())
    jobs.enqueue("after")

    try:
        wait_until(lambda: not jobs.unfinished(), 90, "every job to succeed", interval=0.2)
    except AssertionError:
        raise AssertionError(f"unfinished: {jobs.unfinished()}\n{worker.log()[-4000:]}") from None
    assert worker.process.poll() is None, worker.log()[-3000:]
    assert beat.process.poll() is None, beat.log()[-3000:]
    assert "Unrecoverable error" not in worker.log()
    assert "Connection to broker lost" in worker.log()  # the outages did reach the worker
    wait_until(lambda: "Sending due task" in beat.log()[beat_log_at_end:], 10, "beat to send again")

    runs = jobs.runs()
    assert sorted(runs) == sorted(name for names in jobs.order.values() for name in names)  # once each
    for key, names in jobs.order.items():
        assert [run for run in runs if run in set(names)] == names, key
