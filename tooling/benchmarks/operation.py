"""`manage.py bench operation`: an operation of no-op jobs against raw Celery no-op tasks, in the same run.

Workers import this module (EXTRA_TASK_MODULES) for the no-op operation type: each job traces
(key, seq, start, end) into Redis exactly as the raw Celery baseline task does, so the ratio
measures what the operation machinery costs (job rows, claims, the outcome's conditional
write, the completion), not the payload.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import redis
from django.conf import settings
from django.db import connection
from django.db.utils import OperationalError, ProgrammingError

from operations.models import Operation
from operations.registry import OperationType
from operations.services import start_operation
from tooling.benchmarks import keyed_queue as keyed_bench
from xcommands.models import Command, CommandKey


class BenchNoop(OperationType):
    """A job that traces its run and ends: the cheapest job there is."""

    name = "bench.noop"
    atomic_jobs = True
    compatible_with = frozenset({"bench.noop"})

    def start_or_resume_job(self, arg: Any, partition: str, context: Any) -> None:
        key, seq = partition.rsplit("/", 1)
        keyed_bench._trace(arg["run"], key, int(seq), time.time())


def _migrated() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM operations_operation LIMIT 1")
    except (OperationalError, ProgrammingError):
        return False
    return True


class OperationBench(keyed_bench.Bench):
    """Raw Celery rounds, then operation rounds, on the same worker and Redis."""

    def __init__(self, jobs: int, keys: int, workers: int, log: Callable[[str], None]) -> None:
        super().__init__(jobs, keys, workers, log)
        self.task_modules = ["tooling.benchmarks.keyed_queue", "tooling.benchmarks.operation"]

    def _operation_round(self, client: redis.Redis, round_no: int) -> tuple[float, float]:
        """One operation of `commands` jobs over `keys` keys: jobs/s, and seconds from the last job's end to completion."""
        run = f"{self.run}o{round_no}"
        keys = [f"k{i}" for i in range(self.keys)]
        partitions = [(f"{keys[n % self.keys]}/{n}", f"bench:{run}:{keys[n % self.keys]}") for n in range(self.commands)]
        operation = start_operation("bench.noop", f"bench:{run}", {"run": run}, partitions)
        self._wait_traces(client, run, keys, self.commands, 900)
        rate = self._drain_rate(client, run, keys)[0]
        last_end = max(row[2] for key in keys for row in keyed_bench._read(client, run, key))
        deadline = time.monotonic() + 120
        while True:
            operation.refresh_from_db()
            if operation.finished_at is not None:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"operation {operation.pk} did not complete within 120 s of its last job")
            time.sleep(0.01)
        return rate, operation.finished_at.timestamp() - last_end

    def execute_operations(self) -> dict[str, Any]:
        """Every round; the figures."""
        self.redis_url = self._start_redis()
        keyed_bench._point_app_at(self.redis_url)
        settings.REDIS_URL = self.redis_url
        client = redis.Redis.from_url(self.redis_url)
        finished = False
        try:
            self.log(f"bench run {self.run}: starting a worker (concurrency {self.workers}) on {self.redis_url}")
            self._start_worker()
            raws, rates, latencies = [], [], []
            for round_no in range(self.rounds):
                raws.append(self._raw_round(client, round_no))
                rate, latency = self._operation_round(client, round_no)
                rates.append(rate)
                latencies.append(latency)
                self.log(f"round {round_no + 1}/{self.rounds}: raw Celery {raws[-1]:.0f} tasks/s, operation "
                         f"{rates[-1]:.0f} jobs/s ({self.commands} jobs over {self.keys} keys), completed "
                         f"{latencies[-1]:.3f} s after its last job")
            finished = True
        finally:
            self.cleanup(keep_logs=not finished)
            Operation.objects.filter(target__startswith=f"bench:{self.run}").delete()
            Command.objects.filter(key__startswith=f"operation:bench:{self.run}").delete()
            CommandKey.objects.filter(key__startswith=f"operation:bench:{self.run}").delete()
        raw, rate = statistics.median(raws), statistics.median(rates)
        return {
            "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
            "jobs": self.commands,
            "keys": self.keys,
            "workers": self.workers,
            "rounds": self.rounds,
            "raw_celery_per_s": round(raw, 1),
            "operation_jobs_per_s": round(rate, 1),
            "ratio": round(rate / raw, 3),
            "completion_after_last_job_s": round(statistics.median(latencies), 3),
            "completion_after_last_job_s_max": round(max(latencies), 3),
            "raw_rounds": [round(x, 1) for x in raws],
            "operation_rounds": [round(x, 1) for x in rates],
        }


def run_operation_bench(jobs: int, keys: int, workers: int, log: Callable[[str], None]) -> dict[str, Any]:
    """Entry point for `manage.py bench operation`."""
    if not _migrated():
        raise RuntimeError("the database has no operations tables: run `python manage.py migrate` first")
    return OperationBench(jobs, keys, workers, log).execute_operations()
