"""Benchmark of the keyed queue against raw Celery, run by `manage.py bench keyed-queue`.

Workers import this module (EXTRA_TASK_MODULES) for the no-op command and task. Both
no-ops do the same work: one RPUSH of (seq, start, end) to Redis, so the ratio measures
the engine's cost (claims, fenced completion, ordering), not the payload.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from kombu import pools

from project.celery import app
from project.launcher import find_redis_server, free_port, redis_answers, wait_for
from xcommands import broker
from xcommands.base import XCommand
from xcommands.choices import ACTIVE_STATUSES, CommandStatus
from xcommands.models import Command, CommandKey
from xcommands.queue import enqueue

_client: redis.Redis | None = None

#: The tasks benchmarks run for users (actions' no-ops): the examples, which ALLOWED_TASKS leaves
#: out by default. A benchmark is the operator's run: it allows them in its own processes only.
BENCH_TASKS = ("examples.*",)


def bench_allowed_tasks() -> list[str]:
    """ALLOWED_TASKS with the benchmarks' tasks added (kernel.user_tasks still refuses internal ones)."""
    current = [str(pattern) for pattern in settings.ALLOWED_TASKS]
    return [*current, *(pattern for pattern in BENCH_TASKS if pattern not in current)]


def bench_env(**extra: str) -> dict[str, str]:
    """The environment of a benchmark's worker or beat: this process's, with the benchmarks' tasks allowed."""
    env = dict(os.environ, ALLOWED_TASKS=",".join(bench_allowed_tasks()))
    env.update(extra)
    env.pop("CELERY_RESULT_BACKEND", None)
    return env


def _redis() -> redis.Redis:
    global _client
    if _client is None:
        _client = redis.Redis.from_url(settings.REDIS_URL)
    return _client


def _trace(run: str, key: str, seq: int, started: float) -> None:
    _redis().rpush(f"bench:{run}:{key}", f"{seq},{started},{time.time()},{os.getpid()}")


@shared_task(name="xcommands.bench.raw_noop", ignore_result=True, acks_late=True)
def raw_noop(run: str, key: str, seq: int) -> None:
    """Raw Celery baseline: trace and return."""
    _trace(run, key, seq, time.time())


def fresh_redis(tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A redis-server of the run's own (no persistence, files in `tmp`) and its URL, once it answers.

    Its broker epoch is set at once: a new, empty Redis has lost nothing, and without the epoch
    the first recovery sweep would take the run's queued messages for lost ones and send every
    waiting node again (xcommands.broker).
    """
    port = free_port()
    proc = subprocess.Popen(  # noqa: S603
        [find_redis_server(), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(tmp)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    wait_for(lambda: redis_answers(url), 15, "redis-server")
    redis.Redis.from_url(url).set(broker.SENTINEL, timezone.now().isoformat(), nx=True)
    return proc, url


@dataclass
class BenchNoopXCommand(XCommand):
    """Engine no-op: trace and return, under its key."""

    run_id: str
    key: str
    seq: int

    command_name = "xcommands.BenchNoopXCommand"

    def job_key(self) -> str:
        """bench:<run>:<key>."""
        return f"bench:{self.run_id}:{self.key}"

    def execute(self) -> None:
        """Trace start and end to Redis."""
        _trace(self.run_id, self.key, self.seq, time.time())


# --- the driver ----------------------------------------------------------------------------


def _percentile(values: list[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def _read(client: redis.Redis, run: str, key: str) -> list[tuple[int, float, float]]:
    rows = []
    for item in client.lrange(f"bench:{run}:{key}", 0, -1):
        seq, start, end, _pid = (item.decode() if isinstance(item, bytes) else item).split(",")
        rows.append((int(seq), float(start), float(end)))
    return rows


def _violations(rows: list[tuple[int, float, float]]) -> tuple[int, int]:
    """Order violations (a later seq started first) and overlaps within one key."""
    by_start = sorted(rows, key=lambda r: r[1])
    order = sum(1 for a, b in zip(by_start, by_start[1:], strict=False) if b[0] < a[0])
    overlap = sum(1 for a, b in zip(by_start, by_start[1:], strict=False) if b[1] < a[2])
    return order, overlap


class Bench:
    """Starts Redis (unless given) and workers, runs the phases, prints one JSON object."""

    def __init__(self, commands: int, keys: int, workers: int, log: Callable[[str], None]) -> None:
        self.commands, self.keys, self.workers, self.log = commands, keys, workers, log
        self.run = uuid.uuid4().hex[:8]
        self.tmp = Path(tempfile.mkdtemp(prefix="bench-"))
        self.procs: list[subprocess.Popen[bytes]] = []
        self.redis_url = ""
        self.rounds = 3
        self.hostname = ""
        self.task_modules: list[str] = ["tooling.benchmarks.keyed_queue"]
        self.queues = "commands,default"

    def _start_redis(self) -> str:
        configured = os.environ.get("REDIS_URL")
        if configured and redis_answers(configured):
            return configured
        proc, url = fresh_redis(self.tmp)
        self.procs.append(proc)
        return url

    def _start_worker(self) -> None:
        self.hostname = f"bench-{self.run}@{socket.gethostname()}"
        env = bench_env(REDIS_URL=self.redis_url, EXTRA_TASK_MODULES=",".join(self.task_modules), LOG_LEVEL="WARNING")
        log = (self.tmp / "worker.log").open("wb")
        proc = subprocess.Popen(  # noqa: S603
            [sys.executable, "-m", "celery", "-A", "project", "worker", "--loglevel", "WARNING",
             "--concurrency", str(self.workers), "--queues", self.queues,
             "--without-gossip", "--without-mingle", "--hostname", self.hostname],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            cwd=str(Path(settings.BASE_DIR)),
        )
        self.procs.append(proc)
        client = redis.Redis.from_url(self.redis_url)
        # Ready when a raw task round-trips.
        probe = f"{self.run}-probe"
        deadline = time.monotonic() + 60
        raw_noop.apply_async(args=(probe, "probe", 0), queue="default")
        while not client.llen(f"bench:{probe}:probe"):
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"bench worker did not start; see {self.tmp / 'worker.log'}")
            time.sleep(0.1)

    def _wait_traces(
        self,
        client: redis.Redis,
        run: str,
        keys: list[str],
        total: int,
        timeout: float,
        nudge: Callable[[], None] | None = None,
    ) -> float:
        """Wait until `total` traces exist; call `nudge` whenever nothing moved for 5 s."""
        deadline = time.monotonic() + timeout
        last_done, last_move = -1, time.monotonic()
        while True:
            done = sum(client.llen(f"bench:{run}:{key}") for key in keys)
            if done >= total:
                return time.perf_counter()
            now = time.monotonic()
            if done != last_done:
                last_done, last_move = done, now
            elif nudge is not None and now - last_move > 5:
                nudge()
                last_move = now
            if now > deadline:
                raise RuntimeError(f"only {done} of {total} benchmark tasks finished in {timeout:.0f} s")
            time.sleep(0.01)

    def _drain_rate(self, client: redis.Redis, run: str, keys: list[str]) -> tuple[float, int, int]:
        """Throughput seen by the workers (first start to last end), and key violations."""
        rows = [row for key in keys for row in _read(client, run, key)]
        first = min(row[1] for row in rows)
        last = max(row[2] for row in rows)
        order = overlap = 0
        for key in keys:
            o, v = _violations(_read(client, run, key))
            order += o
            overlap += v
        return len(rows) / (last - first), order, overlap

    def _raw_round(self, client: redis.Redis, round_no: int) -> float:
        """Raw Celery: load the queue with the consumer paused, then let the worker drain it."""
        run = f"{self.run}r{round_no}"
        keys = [f"k{i}" for i in range(self.keys)]
        app.control.cancel_consumer("default", destination=[self.hostname], reply=True, timeout=10)
        for n in range(self.commands):
            raw_noop.apply_async(args=(run, keys[n % self.keys], n), queue="default")
        def resume() -> None:
            # A broadcast can be missed (the worker's control connection is itself on Redis):
            # when the queue does not move, say it again.
            app.control.add_consumer("default", destination=[self.hostname], reply=True, timeout=10)

        resume()
        self._wait_traces(client, run, keys, self.commands, 600, nudge=resume)
        return self._drain_rate(client, run, keys)[0]

    def _keyed_round(self, client: redis.Redis, round_no: int) -> tuple[float, int, int]:
        """Engine: enqueue the backlog in one transaction (doorbells ring at commit), then drain."""
        run = f"{self.run}k{round_no}"
        keys = [f"k{i}" for i in range(self.keys)]
        with transaction.atomic():
            for n in range(self.commands):
                enqueue(BenchNoopXCommand(run_id=run, key=keys[n % self.keys], seq=n))
        self._wait_traces(client, run, keys, self.commands, 900)
        return self._drain_rate(client, run, keys)

    def _cold_latencies(self, client: redis.Redis, samples: int, tag: str) -> list[float]:
        run = f"{self.run}{tag}"
        enqueued: dict[str, float] = {}
        for i in range(samples):
            key = f"cold{i}"
            enqueued[key] = time.time()
            enqueue(BenchNoopXCommand(run_id=run, key=key, seq=0))
            time.sleep(0.02)
        self._wait_traces(client, run, list(enqueued), samples, 300)
        return [(_read(client, run, key)[0][1] - t0) * 1000 for key, t0 in enqueued.items()]

    def _hot_backlog(self, size: int) -> str:
        run = f"{self.run}h"
        batch = 500
        for first in range(0, size, batch):
            with transaction.atomic():
                for n in range(first, min(first + batch, size)):
                    enqueue(BenchNoopXCommand(run_id=run, key="hot", seq=n))
        return run

    def cleanup(self, keep_logs: bool = True) -> None:
        """Stop what the bench started and delete its rows (and its temporary files unless asked to keep them)."""
        for proc in reversed(self.procs):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, 15)
                except (ProcessLookupError, PermissionError):
                    proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
        Command.objects.filter(key__startswith=f"bench:{self.run}").delete()
        CommandKey.objects.filter(key__startswith=f"bench:{self.run}").delete()
        if not keep_logs:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def execute(self, hot_backlog: int = 10_000, samples: int = 300) -> dict[str, Any]:
        """Run every phase; return the figures."""
        self.redis_url = self._start_redis()
        _point_app_at(self.redis_url)
        settings.REDIS_URL = self.redis_url
        client = redis.Redis.from_url(self.redis_url)
        finished = False
        try:
            self.log(f"bench run {self.run}: starting a worker (concurrency {self.workers}) on {self.redis_url}")
            self._start_worker()
            raws, keyeds, order, overlap = [], [], 0, 0
            for round_no in range(self.rounds):
                raws.append(self._raw_round(client, round_no))
                rate, o, v = self._keyed_round(client, round_no)
                keyeds.append(rate)
                order, overlap = order + o, overlap + v
                self.log(
                    f"round {round_no + 1}/{self.rounds}: raw Celery {raws[-1]:.0f} tasks/s, "
                    f"keyed {keyeds[-1]:.0f} commands/s ({self.commands} over {self.keys} keys; "
                    f"order violations {o}, overlaps {v})"
                )
            raw, keyed = statistics.median(raws), statistics.median(keyeds)
            self.log(f"cold-key latency, idle: {samples} samples")
            idle = self._cold_latencies(client, samples, "i")
            self.log(f"  p50 {statistics.median(idle):.1f} ms, p99 {_percentile(idle, 99):.1f} ms")
            self.log(f"cold-key latency with a {hot_backlog}-command backlog on one key")
            hot_run = self._hot_backlog(hot_backlog)
            hot_done_before = client.llen(f"bench:{hot_run}:hot")
            busy = self._cold_latencies(client, samples, "b")
            hot_done_during = client.llen(f"bench:{hot_run}:hot") - hot_done_before
            # Every sample must have been taken behind the backlog, or the phase measured less.
            hot_left = hot_backlog - client.llen(f"bench:{hot_run}:hot")
            if hot_left <= 0:
                self.log("warning: the hot backlog ran out before the cold-key samples were done")
            self.log(f"  p50 {statistics.median(busy):.1f} ms, p99 {_percentile(busy, 99):.1f} ms "
                     f"(hot key ran {hot_done_during} commands meanwhile)")
            hot_order, hot_overlap = _violations(_read(client, hot_run, "hot"))
            Command.objects.filter(
                key=f"bench:{hot_run}:hot", status__in=ACTIVE_STATUSES
            ).update(status=CommandStatus.CANCELLED, wake_at=None)
            finished = True
        finally:
            # A failed run keeps the worker's log (its path is in the error) for a look.
            self.cleanup(keep_logs=not finished)
        return {
            "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
            "commands": self.commands,
            "keys": self.keys,
            "workers": self.workers,
            "rounds": self.rounds,
            "raw_celery_per_s": round(raw, 1),
            "keyed_per_s": round(keyed, 1),
            "ratio": round(keyed / raw, 3),
            "raw_rounds": [round(x, 1) for x in raws],
            "keyed_rounds": [round(x, 1) for x in keyeds],
            "order_violations": order + hot_order,
            "overlap_violations": overlap + hot_overlap,
            "cold_key_p50_ms_idle": round(statistics.median(idle), 1),
            "cold_key_p99_ms_idle": round(_percentile(idle, 99), 1),
            "cold_key_p50_ms_hot_backlog": round(statistics.median(busy), 1),
            "cold_key_p99_ms_hot_backlog": round(_percentile(busy, 99), 1),
            "cold_key_samples": samples,
            "hot_backlog": hot_backlog,
            "hot_key_commands_during_sampling": hot_done_during,
            "hot_backlog_left_after_sampling": hot_left,
        }


def _point_app_at(url: str) -> None:
    """Publish to the bench's Redis from this process."""
    app.conf.update(broker_url=url)
    pools.reset()
    app._after_fork()  # type: ignore[attr-defined]  # forgets cached connection pools


def run_keyed_queue_bench(
    commands: int,
    keys: int,
    workers: int,
    log: Callable[[str], None],
    samples: int = 300,
    hot_backlog: int = 10_000,
) -> dict[str, Any]:
    """Entry point for `manage.py bench keyed-queue`."""
    return Bench(commands, keys, workers, log).execute(hot_backlog=hot_backlog, samples=samples)


def dumps(figures: dict[str, Any]) -> str:
    """One JSON object on one line."""
    return json.dumps(figures, sort_keys=False)
