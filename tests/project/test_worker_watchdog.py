"""A worker that stops consuming while work waits stops itself, to be started again (issue 24, item 2).

Real workers on a real Redis. A worker told to stop consuming its queue (the remote-control
`cancel_consumer`, as Flower's button does) still answers ping; with messages waiting and its
process free, it exits with code 70 within WORKER_STALL_SECONDS and a few checks, saying why,
and the messages stay in Redis for the worker that replaces it. A busy worker with messages
waiting behind its running task is not stalled and keeps running.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from project.celery import app
from project.worker_watchdog import EXIT_STALLED
from tests.support.processes import WorkerProcess, wait_until

pytestmark = pytest.mark.integration


def test_a_worker_that_stopped_consuming_while_work_waits_exits_for_a_restart(
    live_workers: Callable[..., WorkerProcess], celery_to_test_redis: str
) -> None:
    worker = live_workers(name="stall", queues=("default",), concurrency=1, WORKER_STALL_SECONDS="3")
    replies = app.control.cancel_consumer("default", destination=[f"stall@{_hostname()}"], reply=True, timeout=5)
    assert replies, "the worker did not answer the remote control"
    assert app.control.ping(destination=[f"stall@{_hostname()}"], timeout=5), "the worker should still answer ping"
    for n in range(3):
        app.send_task("examples.noop_any", args=[n], queue="default")
    began = time.monotonic()
    wait_until(lambda: worker.process.poll() is not None, 30, "the stalled worker to stop itself")
    assert worker.process.returncode == EXIT_STALLED
    assert time.monotonic() - began >= 3
    log = worker.log()
    assert "stopped consuming" in log and "3 messages waited" in log, log[-2000:]
    assert redis.Redis.from_url(celery_to_test_redis).llen("default") == 3  # left for the next worker

    # Its replacement (what `manage.py up` or systemd does) consumes them.
    replacement = live_workers(name="fresh", queues=("default",), concurrency=1, WORKER_STALL_SECONDS="3")
    wait_until(lambda: redis.Redis.from_url(celery_to_test_redis).llen("default") == 0, 30,
               "the new worker to take the waiting messages")
    assert replacement.process.poll() is None


def test_a_busy_worker_with_work_waiting_behind_it_is_not_stalled(
    live_workers: Callable[..., WorkerProcess], celery_to_test_redis: str, tmp_path: Path
) -> None:
    worker = live_workers(name="busy", queues=("actions",), concurrency=1, WORKER_STALL_SECONDS="2")
    log_file = tmp_path / "ran.jsonl"
    for n in range(3):
        app.send_task("examples.record", args=[{"seconds": 3, "log": f"file://{log_file}", "n": n}, f"n{n}"])
    wait_until(lambda: log_file.exists() and len(log_file.read_text().splitlines()) == 3, 60, "the three tasks to run")
    assert worker.process.poll() is None, worker.log()[-2000:]
    assert "stopped consuming" not in worker.log()


def _hostname() -> str:
    return socket.gethostname()
