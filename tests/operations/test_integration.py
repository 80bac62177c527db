"""Operations with real workers, Redis and beat: a killed worker's job resumes; a 500-job operation under SIGKILLs."""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tests.operations.types  # noqa: F401 - registers the test operation types
from operations.choices import JobStatus, OperationStatus
from operations.commands import OperationCompleteXCommand
from operations.models import Operation, OperationJob
from operations.services import start_operation
from tests.support.processes import WorkerProcess, wait_until
from xcommands.models import Command


def result_of(operation: Operation) -> dict[str, Any]:
    """The stored completion result (present once the operation finished)."""
    assert operation.result is not None
    return dict(operation.result)


pytestmark = pytest.mark.integration

ENV = {
    "EXTRA_TASK_MODULES": "examples.tasks,tests.operations.types",
    "COMMAND_LEASE_SECONDS": "3",
    "COMMAND_SWEEP_SECONDS": "1",
    "COMMAND_RING_STALE_SECONDS": "2",
    "STATUS_SERVICE_SECONDS": "1",
}
Start = Callable[..., WorkerProcess]


def test_a_job_whose_worker_is_killed_resumes_from_its_progress(
    live_workers: Start, live_beat: Start, celery_to_test_redis: str
) -> None:
    """SIGKILL of the whole worker mid-job: another worker resumes the job where its progress says; it ends once."""
    doomed = live_workers(name="doomed", **ENV)
    live_beat(**ENV)
    operation = start_operation("test.steps", "table-k", {"steps": 12, "seconds": 0.3}, ["p1"])
    job = OperationJob.objects.get(operation=operation)
    wait_until(lambda: OperationJob.objects.get(pk=job.pk).progress.get("done", 0) >= 3, 60, "three steps done")
    doomed.signal_group(signal.SIGKILL)
    done_at_kill = OperationJob.objects.get(pk=job.pk).progress["done"]
    live_workers(name="rescuer", **ENV)
    wait_until(lambda: Operation.objects.get(pk=operation.pk).status != OperationStatus.RUNNING, 90, "completion")
    job.refresh_from_db()
    assert Operation.objects.get(pk=operation.pk).status == OperationStatus.SUCCEEDED
    assert job.status == JobStatus.SUCCEEDED and job.attempts == 2
    assert job.progress["visits"] == list(range(12)), "no step walked twice, none skipped"
    assert job.progress["starts"][0] == 0 and job.progress["starts"][1] >= done_at_kill >= 3


def test_a_500_job_operation_survives_killed_workers_and_completes_once(
    live_workers: Start, live_beat: Start, celery_to_test_redis: str, tmp_path: Path
) -> None:
    """Workers SIGKILLed (pool processes and whole workers) during 500 jobs: each job has exactly one outcome,
    every job succeeded, and the operation is marked completed exactly once."""
    outcomes, completions = tmp_path / "outcomes", tmp_path / "completions"
    workers = [live_workers(name=f"w{i}", concurrency=2, **ENV) for i in range(2)]
    live_beat(**ENV)
    arg = {"steps": 1, "seconds": 0.02, "outcome_log": str(outcomes), "completion_log": str(completions)}
    operation = start_operation("test.steps", "table-c", arg, [f"part-{n:03d}" for n in range(500)])
    rng = random.Random(5)  # noqa: S311 - picks victims
    for round_number in range(4):
        time.sleep(2)
        victim = workers[round_number % 2]
        if round_number % 2 == 0 and victim.pool_pids():
            os.kill(rng.choice(victim.pool_pids()), signal.SIGKILL)  # one pool process dies; Celery replaces it
        else:
            victim.signal_group(signal.SIGKILL)  # the whole worker dies; a new one takes its place
            victim.process.wait(timeout=10)
            workers[round_number % 2] = live_workers(name=f"w{round_number % 2}-{round_number}", concurrency=2, **ENV)
    wait_until(lambda: Operation.objects.get(pk=operation.pk).status != OperationStatus.RUNNING, 240,
               "the operation to complete", interval=0.5)
    operation.refresh_from_db()
    assert operation.status == OperationStatus.SUCCEEDED
    assert result_of(operation)["counts"] == {JobStatus.SUCCEEDED: 500}
    # The task appends its line after `mark_complete` committed: a process killed between the two loses
    # the line (the outcome itself is in the database, counted above), one at most per kill.
    written = Counter(outcomes.read_text().split())
    assert set(written.values()) == {1}, "no job's outcome was written twice"
    assert 500 - len(written) <= 4, f"{500 - len(written)} outcomes missing after 4 kills"
    marked = Command.objects.filter(name=OperationCompleteXCommand.command_name, status="SUCCEEDED").count()
    assert marked == 1, "the operation was marked complete once"
    assert len(completions.read_text().splitlines()) >= 1
