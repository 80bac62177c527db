"""`manage.py bench actions`: coordinator actions end to end (materialized, input-checked, started, reported) against raw Celery.

`jobs` catch-up coordinators of `actions` minute-frequency actions each, start and end in
the past, every action's input (a `file://` instance with its `_SUCCESS` done-flag, one
directory per job and minute) written to a temporary directory before anything is
submitted, each action running the no-op task `examples.noop`. Concurrency and throttle
are the job's action count, so a job may run all its actions at once (a catch-up at full
speed, not a chain of one action at a time). One worker of concurrency `workers` (queues
commands, services, actions, default) and a beat (the status and input-check services)
run on the configured database and a private Redis unless REDIS_URL answers.

The figure is actions/s from the first submission to the last action SUCCEEDED, through the
real engine (submission, start, materialize, input check, launch, the task on a worker, the
status report), against raw Celery no-op tasks/s drained by the same worker from the same
Redis before and after (the second round once the worker's queues are empty: messages left
when the last action ended, such as doorbells of commands a drain already ran, are the
engine's cost, not raw Celery's; how many there were is reported). Milestones (the last action materialized, READY, SUBMITTED,
RUNNING, SUCCEEDED), per-action stage times and per-command-class counts say where the time
goes. Each process's resident memory (the worker, its pool processes, the beat) is taken after
the first 1,000 actions ended and again at the end: `--jobs 100 --actions 1000` runs 100,000
actions, and a path that keeps anything per action shows as growth. Everything the run created (jobs, actions, their runs, commands, history, availability
records, files, the bench user if it made it) is deleted.
"""

from __future__ import annotations

import contextlib
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import redis
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Count
from django.utils import timezone

from coordinators.choices import ACTION_TERMINAL, JOB_TERMINAL, ActionStatus
from coordinators.models import CoordinatorAction, CoordinatorJob, StatusChange
from coordinators.services import submit_coordinator
from datasets.models import AvailableInstance
from datasets.timeline import format_datetime
from project.celery import app
from tooling.benchmarks import keyed_queue as keyed_bench
from tooling.benchmarks.runtime import bench_user, delete_jobs, percentile
from workflows.models import WorkflowJob
from xcommands.models import Command

Log = Callable[[str], None]

APP = """<coordinator-app name="{name}" frequency="${{coord:minutes(1)}}" start="{start}" end="{end}"
    timezone="UTC" xmlns="uri:oozie:coordinator:0.4">
  <controls><concurrency>{actions}</concurrency><throttle>{actions}</throttle></controls>
  <datasets>
    <dataset name="in" frequency="${{coord:minutes(1)}}" initial-instance="{start}" timezone="UTC">
      <uri-template>file://{data}/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}${{MINUTE}}</uri-template>
    </dataset>
  </datasets>
  <input-events><data-in name="in" dataset="in"><instance>${{coord:current(0)}}</instance></data-in></input-events>
  <action><workflow><app-path>task:examples.noop</app-path><configuration>
    <property><name>input</name><value>${{coord:dataIn('in')}}</value></property>
  </configuration></workflow></action>
</coordinator-app>"""
STALL_SECONDS = 120.0  # no action moved for this long: the run is stuck (logs are kept)
PROGRESS_SECONDS = 5.0
POLL_SECONDS = 0.25


def write_inputs(root: Path, jobs: int, first: datetime, actions: int) -> list[Path]:
    """One directory per job holding every minute's instance (with `_SUCCESS`) from `first`; the job directories."""
    directories = []
    for job in range(jobs):
        directory = root / f"j{job}"
        for minute in range(actions):
            instance = directory / (first + timedelta(minutes=minute)).strftime("%Y%m%d%H%M")
            instance.mkdir(parents=True)
            (instance / "_SUCCESS").write_bytes(b"")
        directories.append(directory)
    return directories


def summary(values: list[float], digits: int = 3) -> dict[str, float]:
    """p50, p99 and max of values (empty when there are none)."""
    if not values:
        return {}
    return {"p50": round(statistics.median(values), digits), "p99": round(percentile(values, 99), digits),
            "max": round(max(values), digits)}


def _since(t0: datetime, moments: Iterable[datetime | None]) -> float | None:
    """Seconds from t0 to the latest of the moments (None if one is missing or there are none)."""
    moments = list(moments)
    if not moments or any(moment is None for moment in moments):
        return None
    return round((max(m for m in moments if m is not None) - t0).total_seconds(), 3)


class ActionsBench(keyed_bench.Bench):
    """Raw Celery rounds around one run of the coordinators, on the same worker and Redis."""

    def __init__(self, jobs: int, actions: int, workers: int, log: Log) -> None:
        super().__init__(jobs * actions, min(100, jobs * actions), workers, log)
        self.jobs, self.actions = jobs, actions
        self.task_modules = ["tooling.benchmarks.keyed_queue", "examples.tasks"]
        # Coordinator commands, the periodic services, the actions' task (examples.*: actions), raw Celery.
        self.queues = "commands,services,actions,default"
        self.prefix = f"bench-actions-{self.run}"
        self.memory: dict[str, Any] = {}

    def _start_worker(self) -> None:
        """The worker (ready when a raw task round-trips), then a beat for the status and input-check services."""
        super()._start_worker()
        env = keyed_bench.bench_env(REDIS_URL=self.redis_url, EXTRA_TASK_MODULES=",".join(self.task_modules), LOG_LEVEL="WARNING")
        with (self.tmp / "beat.log").open("wb") as out:
            self.procs.append(subprocess.Popen(  # noqa: S603
                [sys.executable, "-m", "celery", "-A", "project", "beat", "--loglevel", "WARNING",
                 "--schedule", str(self.tmp / "beat-schedule")],
                env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                cwd=str(Path(settings.BASE_DIR)),
            ))

    def execute_actions(self) -> dict[str, Any]:
        """Raw round, the coordinators, raw round; the figures. Everything created is deleted, logs kept on failure."""
        had_user = get_user_model().objects.filter(username="bench").exists()
        self.redis_url = self._start_redis()
        keyed_bench._point_app_at(self.redis_url)
        app.conf.update(result_backend=self.redis_url)
        app._backend_cache = None  # type: ignore[attr-defined]
        settings.REDIS_URL = self.redis_url
        client = redis.Redis.from_url(self.redis_url)
        first = (timezone.now() - timedelta(minutes=self.actions + 5)).replace(second=0, microsecond=0)
        finished = False
        try:
            self.log(f"bench run {self.run}: writing {self.commands} input instances (done-flag _SUCCESS) "
                     f"for {self.jobs} jobs x {self.actions} actions to {self.tmp / 'data'}")
            data = write_inputs(self.tmp / "data", self.jobs, first, self.actions)
            self.log(f"starting a worker (concurrency {self.workers}, queues {self.queues}) and beat on {self.redis_url}")
            self._start_worker()
            raws = [self._raw_round(client, 0)]
            self.log(f"raw Celery: {raws[0]:.0f} no-op tasks/s ({self.commands} tasks)")
            figures = self._run_coordinators(client, data, first)
            raws.append(self._raw_round(client, 1))
            self.log(f"raw Celery again: {raws[1]:.0f} no-op tasks/s")
            finished = True
        finally:
            with contextlib.suppress(redis.RedisError):  # the traces, when the Redis is not our own
                for key in client.scan_iter(f"bench:{self.run}*"):
                    client.delete(key)
            self.cleanup(keep_logs=not finished)
            self._delete_rows(had_user)
            if finished:
                shutil.rmtree(self.tmp, ignore_errors=True)
            else:
                self.log(f"worker and beat logs kept in {self.tmp}")
        raw, rate = statistics.mean(raws), figures["actions_per_s"]
        return {
            "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
            "jobs": self.jobs,
            "actions_per_job": self.actions,
            "actions": self.commands,
            "workers": self.workers,
            "concurrency_per_job": self.actions,
            "service_tick_seconds": int(settings.SERVICE_TICK_SECONDS),
            "actions_per_s": figures.pop("actions_per_s"),
            "raw_celery_per_s": round(raw, 1),
            "ratio": round(rate / raw, 4),
            "raw_rounds": [round(x, 1) for x in raws],
            **figures,
        }

    def _run_coordinators(self, client: redis.Redis, data: list[Path], first: datetime) -> dict[str, Any]:
        """Submit the jobs, wait for every action to end and the queues to empty; actions/s, milestones, stages, commands."""
        owner = bench_user()
        end = format_datetime(first + timedelta(minutes=self.actions))
        started = timezone.now()
        clock = time.perf_counter()
        for n, directory in enumerate(data):
            xml = APP.format(name=f"{self.prefix}-{n}", start=format_datetime(first), end=end, data=directory,
                             actions=self.actions)
            submit_coordinator(xml, {}, owner=owner)
        submit_s = time.perf_counter() - clock
        self.log(f"{self.jobs} coordinators submitted in {submit_s:.2f} s; waiting for {self.commands} actions")
        ids = list(CoordinatorJob.objects.filter(app_name__startswith=self.prefix).values_list("pk", flat=True))
        self._wait(ids)
        figures = analyse(ids, started, self.commands, submit_s)
        figures["memory"] = memory_growth(self.memory)
        # Messages still queued once every action ended (doorbells of commands a drain already ran,
        # wake-ups): the worker works them off before the second raw round, which would pay for them.
        figures["messages_queued_at_end"] = self._queued(client)
        self._wait_jobs(ids)
        figures["to_all_jobs_ended_s"] = _since(
            started, CoordinatorJob.objects.filter(pk__in=ids).values_list("last_modified", flat=True))
        figures["to_queues_empty_s"] = self._wait_queues_empty(client, started)
        self.log(f"{figures['actions_per_s']:.1f} actions/s end to end ({figures['seconds']} s for "
                 f"{figures['actions_succeeded']} actions SUCCEEDED, {figures['actions_not_succeeded']} not)")
        for name in ("to_all_materialized_s", "to_all_ready_s", "to_all_submitted_s", "to_all_running_s",
                     "to_all_succeeded_s", "to_all_jobs_ended_s", "messages_queued_at_end", "to_queues_empty_s"):
            self.log(f"  {name}: {figures[name]}")
        for name, row in figures["stages"].items():
            self.log(f"  stage {name}: {row}")
        memory = figures["memory"]
        self.log(f"  memory (kB) after {memory['early_actions']} actions: {memory['early_kb']}; after "
                 f"{memory['end_actions']}: {memory['end_kb']}; largest growth {memory['max_growth']:.1%}")
        self.log(f"  commands per action: {figures['commands_per_action']}, their run time {figures['commands_run_total_s']} s "
                 f"(of {figures['seconds'] * self.workers:.0f} worker process seconds)")
        for name, row in figures["commands"].items():
            self.log(f"  command {name}: {row}")
        return figures

    def _rss(self) -> dict[str, int]:
        """Resident memory (kB) of each process of the run: the worker, its pool processes, the beat."""
        found: dict[str, int] = {}
        for proc in self.procs:
            args = proc.args if isinstance(proc.args, list) else []
            role = "worker" if "worker" in args else "beat" if "beat" in args else ""
            if not role or proc.poll() is not None:
                continue
            found[role] = process_rss_kb(proc.pid)
            for number, child in enumerate(child_pids(proc.pid), start=1):
                found[f"{role} pool {number}"] = process_rss_kb(child)
        return found

    def _wait(self, ids: list[str]) -> None:
        """Until every action ended; progress on the log; RuntimeError when nothing moves for STALL_SECONDS.

        Each process's memory is taken once MEMORY_EARLY actions ended and again at the end
        (`self.memory`): a path that keeps something per action grows between the two.
        """
        actions = CoordinatorAction.objects.filter(job_id__in=ids)
        early_at = min(MEMORY_EARLY, max(1, self.commands // 10))
        last_seen: tuple[int, ...] = ()
        last_moved = first = time.monotonic()
        next_report = first + PROGRESS_SECONDS
        while True:
            counts = Counter(dict(actions.values("status").annotate(n=Count("pk")).values_list("status", "n")))
            ended = sum(counts[status] for status in ACTION_TERMINAL)
            if ended >= early_at and "early" not in self.memory:
                self.memory.update(early=self._rss(), early_actions=ended)
            if ended == self.commands:
                self.memory.update(end=self._rss(), end_actions=ended)
                return
            seen = tuple(counts[status] for status in ActionStatus)
            if seen != last_seen:
                last_seen, last_moved = seen, time.monotonic()
            elif time.monotonic() - last_moved > STALL_SECONDS:
                raise RuntimeError(f"no bench action moved for {STALL_SECONDS:.0f} s: {dict(counts)}; see {self.tmp}")
            if time.monotonic() > next_report:
                rate = counts[ActionStatus.SUCCEEDED] / (time.monotonic() - first)
                self.log(f"  {timezone.now():%H:%M:%S} {counts[ActionStatus.SUCCEEDED]}/{self.commands} SUCCEEDED "
                         f"({rate:.0f}/s); " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if k != "SUCCEEDED"))
                next_report += PROGRESS_SECONDS
            time.sleep(POLL_SECONDS)

    def _queued(self, client: redis.Redis) -> dict[str, int]:
        """Messages waiting in each of the worker's queues (Redis lists named after them)."""
        return {queue: int(client.llen(queue)) for queue in self.queues.split(",")}

    def _wait_queues_empty(self, client: redis.Redis, started: datetime) -> float | None:
        """Seconds from `started` until the worker's queues are empty (None if they do not empty within a minute)."""
        deadline = time.monotonic() + 60
        while any(self._queued(client).values()):
            if time.monotonic() > deadline:
                self.log("  the queues did not empty within 60 s (a shared Redis?); measuring raw Celery anyway")
                return None
            time.sleep(0.05)
        return round((timezone.now() - started).total_seconds(), 3)

    def _wait_jobs(self, ids: list[str]) -> None:
        """Until every job ended (its status follows its last action's report)."""
        deadline = time.monotonic() + STALL_SECONDS
        while CoordinatorJob.objects.filter(pk__in=ids).exclude(status__in=sorted(JOB_TERMINAL)).exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"the bench coordinators did not all end within {STALL_SECONDS:.0f} s")
            time.sleep(POLL_SECONDS)

    def _delete_rows(self, had_user: bool) -> None:
        """The run's jobs, actions (their runs go with them), commands, history, availability records, user."""
        ids = list(CoordinatorJob.objects.filter(app_name__startswith=self.prefix).values_list("pk", flat=True))
        for first in range(0, len(ids), 200):
            StatusChange.objects.filter(job_id__in=ids[first:first + 200]).delete()
        delete_jobs(self.prefix)
        AvailableInstance.objects.filter(uri__startswith=f"file://{self.tmp / 'data'}/").delete()
        if not had_user:
            get_user_model().objects.filter(username="bench").delete()


MEMORY_EARLY = 1000


def process_rss_kb(pid: int) -> int:
    """A process's resident set size in kB (/proc), 0 if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def child_pids(pid: int) -> list[int]:
    """A process's children (the worker's pool processes), from /proc."""
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def memory_growth(memory: dict[str, Any]) -> dict[str, Any]:
    """Each process's memory early and at the end, and the largest growth between the two (0.2 = 20%)."""
    early, end = memory.get("early", {}), memory.get("end", {})
    growth = [end[name] / early[name] - 1 for name in early if early[name] and end.get(name)]
    return {"early_actions": memory.get("early_actions", 0), "early_kb": early,
            "end_actions": memory.get("end_actions", 0), "end_kb": end, "max_growth": round(max(growth, default=0.0), 4)}


def analyse(ids: list[str], started: datetime, total: int, submit_s: float) -> dict[str, Any]:
    """Actions/s from `started` to the last action's end; milestones, per-action stages, command counts."""
    rows = list(CoordinatorAction.objects.filter(job_id__in=ids).values_list(
        "created_time", "ready_at", "submitted_at", "started_at", "ended_at", "status", "external_id"))
    runs = dict(
        (run_id, (begun, ended)) for run_id, begun, ended in WorkflowJob.objects.filter(
            coord_action__job_id__in=ids).values_list("pk", "started_at", "ended_at")
    )
    succeeded = sum(1 for row in rows if row[5] == ActionStatus.SUCCEEDED)
    last_end = max((row[4] for row in rows if row[4] is not None), default=started)
    elapsed = (last_end - started).total_seconds()
    stages: dict[str, list[float]] = {name: [] for name in (
        "materialized_to_ready", "ready_to_submitted", "submitted_to_running", "running_to_run_ended",
        "run_ended_to_succeeded")}
    for created, ready, submitted, running, ended, _, run_id in rows:
        run_end = runs.get(run_id, (None, None))[1]
        for name, since, until in (
            ("materialized_to_ready", created, ready), ("ready_to_submitted", ready, submitted),
            ("submitted_to_running", submitted, running), ("running_to_run_ended", running, run_end),
            ("run_ended_to_succeeded", run_end, ended),
        ):
            if since is not None and until is not None:
                stages[name].append((until - since).total_seconds())
    commands = command_counts(ids)
    executed = sum(row["count"] for row in commands.values())
    return {
        "actions_per_s": round(succeeded / elapsed, 2) if elapsed > 0 else 0.0,
        "seconds": round(elapsed, 3),
        "actions_succeeded": succeeded,
        "actions_not_succeeded": total - succeeded,
        "submit_s": round(submit_s, 3),
        "to_all_materialized_s": _since(started, (row[0] for row in rows)),
        "to_all_ready_s": _since(started, (row[1] for row in rows)),
        "to_all_submitted_s": _since(started, (row[2] for row in rows)),
        "to_all_running_s": _since(started, (row[3] for row in rows)),
        "to_all_succeeded_s": round(elapsed, 3),
        "stages": {name: {"count": len(values), **summary(values)} for name, values in stages.items()},
        "commands_per_action": round(executed / total, 3) if total else 0.0,
        # Against seconds x workers: how much of the worker's time the commands' own work took.
        "commands_run_total_s": round(sum(row["run_total_s"] for row in commands.values()), 2),
        "commands": commands,
    }


def command_counts(ids: list[str]) -> dict[str, dict[str, Any]]:
    """Per command class run on the jobs' keys: how many (and how many were skipped), wait and run times."""
    timings: dict[str, tuple[list[float], list[float], Counter[str]]] = {}
    for first in range(0, len(ids), 500):
        for name, status, enqueued, begun, ended in Command.objects.filter(
            key__in=ids[first:first + 500], started_at__isnull=False, finished_at__isnull=False,
        ).values_list("name", "status", "enqueued_at", "started_at", "finished_at").iterator(chunk_size=5000):
            if begun is None or ended is None:  # filtered out above; for the type checker
                continue
            waits, runs, statuses = timings.setdefault(name.rsplit(".", 1)[-1], ([], [], Counter()))
            waits.append((begun - enqueued).total_seconds())
            runs.append((ended - begun).total_seconds())
            statuses[status] += 1
    return {
        name: {"count": len(waits), "statuses": dict(statuses), "wait": summary(waits), "run": summary(runs, 4),
               "run_total_s": round(sum(runs), 2)}
        for name, (waits, runs, statuses) in sorted(timings.items())
    }


def run_actions_bench(jobs: int, actions: int, workers: int, log: Log) -> dict[str, Any]:
    """Entry point for `manage.py bench actions`."""
    return ActionsBench(jobs, actions, workers, log).execute_actions()
