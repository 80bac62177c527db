"""`manage.py bench workflow`: workflows of a wide fork of no-op Celery actions against raw Celery no-op tasks.

Each round runs raw Celery first (as many no-op tasks as the workflows have actions, drained
by the same worker), then `jobs` workflow jobs of `:start:` -> fork -> `width` celery actions
(`examples.noop_any`) -> join -> end, all started in one transaction. The workflow figure is
actions per second from that commit to the last job's end: everything the engine does
(entering nodes, messages, claims, leases, reports, the join, the end) is inside it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from django.conf import settings
from django.db import connection, transaction
from django.db.utils import OperationalError, ProgrammingError
from django.utils import timezone

from oozie.properties import USER_NAME
from project.celery import app
from tooling.benchmarks import keyed_queue as keyed_bench
from workflows.choices import WORKFLOW_TERMINAL, WorkflowStatus
from workflows.definitions.submission import prepare_workflow
from workflows.engine import create_job
from workflows.models import WorkflowJob, WorkflowNode


def workflow_xml(width: int) -> str:
    """A fork of `width` celery actions and its join."""
    paths = "".join(f'<path start="a{i}"/>' for i in range(width))
    actions = "".join(
        f'<action name="a{i}"><celery xmlns="uri:oozie:celery-action:0.1"><task>examples.noop_any</task>'
        f'</celery><ok to="join"/><error to="fail"/></action>'
        for i in range(width)
    )
    return (
        '<workflow-app name="bench-fork" xmlns="uri:oozie:workflow:1.0"><start to="fork"/>'
        f'<fork name="fork">{paths}</fork>{actions}<join name="join" to="end"/>'
        '<kill name="fail"><message>${wf:errorMessage(wf:lastErrorNode())}</message></kill>'
        '<end name="end"/></workflow-app>'
    )


def _migrated() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT definition FROM workflows_workflowjob LIMIT 1")
    except (OperationalError, ProgrammingError):
        return False
    return True


class WorkflowBench(keyed_bench.Bench):
    """Raw Celery rounds, then workflow rounds, on the same worker and Redis."""

    def __init__(self, jobs: int, width: int, workers: int, log: Callable[[str], None]) -> None:
        super().__init__(jobs * width, min(jobs * width, 100), workers, log)
        self.jobs, self.width = jobs, width
        self.task_modules = ["tooling.benchmarks.keyed_queue", "examples.tasks"]
        self.queues = "commands,actions,default"  # celery actions go to their task's queue (examples.*: actions)

    def _prepared(self) -> Any:
        app_dir = Path(self.tmp) / "app"
        app_dir.mkdir(parents=True, exist_ok=True)
        (app_dir / "workflow.xml").write_text(workflow_xml(self.width))
        return prepare_workflow(workflow_xml(self.width), {USER_NAME: "bench"}, app_path=str(app_dir))

    def _workflow_round(self, prepared: Any, round_no: int) -> tuple[float, float, int, list[str]]:
        """`jobs` workflows started in one transaction: actions/s, node transitions/s, failures, their ids."""
        started = time.perf_counter()
        with transaction.atomic():
            ids = [create_job(prepared, now=timezone.now()).id for _ in range(self.jobs)]
        deadline = time.monotonic() + 900
        last_done = -1
        while True:
            done = WorkflowJob.objects.filter(pk__in=ids, status__in=sorted(WORKFLOW_TERMINAL)).count()
            if done == len(ids):
                break
            if done != last_done:
                last_done = done
                self.log(f"  round {round_no + 1}: {done}/{len(ids)} workflows ended")
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {done} of {len(ids)} workflows ended within 900 s")
            time.sleep(0.05)
        elapsed = time.perf_counter() - started
        nodes = WorkflowNode.objects.filter(workflow_id__in=ids).count()
        failed = WorkflowJob.objects.filter(pk__in=ids).exclude(status=WorkflowStatus.SUCCEEDED).count()
        return self.jobs * self.width / elapsed, nodes / elapsed, failed, ids

    def execute_workflows(self) -> dict[str, Any]:
        """Every round; the figures."""
        self.redis_url = self._start_redis()
        keyed_bench._point_app_at(self.redis_url)
        app.conf.update(result_backend=self.redis_url)  # send_task reaches the backend too
        app._backend_cache = None  # type: ignore[attr-defined]
        settings.REDIS_URL = self.redis_url
        client = redis.Redis.from_url(self.redis_url)
        finished, all_ids = False, []
        try:
            self.log(f"bench run {self.run}: starting a worker (concurrency {self.workers}) on {self.redis_url}")
            self._start_worker()
            prepared = self._prepared()
            raws, rates, transitions, failures = [], [], [], 0
            for round_no in range(self.rounds):
                raws.append(self._raw_round(client, round_no))
                rate, moves, failed, ids = self._workflow_round(prepared, round_no)
                all_ids += ids
                rates.append(rate)
                transitions.append(moves)
                failures += failed
                self.log(f"round {round_no + 1}/{self.rounds}: raw Celery {raws[-1]:.0f} tasks/s, workflows "
                         f"{rate:.0f} actions/s, {moves:.0f} node transitions/s ({self.jobs} workflows x "
                         f"{self.width} actions){f', {failed} did not succeed' if failed else ''}")
            finished = True
        finally:
            self.cleanup(keep_logs=not finished)
            WorkflowJob.objects.filter(pk__in=all_ids).delete()
        raw, rate = statistics.median(raws), statistics.median(rates)
        return {
            "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
            "jobs": self.jobs,
            "width": self.width,
            "workers": self.workers,
            "rounds": self.rounds,
            "raw_celery_per_s": round(raw, 1),
            "workflow_actions_per_s": round(rate, 1),
            "node_transitions_per_s": round(statistics.median(transitions), 1),
            "ratio": round(rate / raw, 3),
            "workflows_not_succeeded": failures,
            "raw_rounds": [round(x, 1) for x in raws],
            "workflow_rounds": [round(x, 1) for x in rates],
        }


def run_workflow_bench(jobs: int, width: int, workers: int, log: Callable[[str], None]) -> dict[str, Any]:
    """Entry point for `manage.py bench workflow`."""
    if not _migrated():
        raise RuntimeError("the database has no workflow application columns: run `python manage.py migrate` first")
    return WorkflowBench(jobs, width, workers, log).execute_workflows()
