"""`manage.py bench bundle`: a bundle of N coordinators, from its kick-off to all RUNNING, and from kill to all KILLED.

It writes N coordinator applications (task `examples.noop`, minute frequency, a two-minute
window starting two minutes ahead) to a temporary directory, submits one bundle of them,
starts real workers and beat on the configured database (quote figures from PostgreSQL) and
a private Redis unless REDIS_URL answers, and deletes everything it created. Kick-off times
are whole minutes, so the bundle is submitted with one far ahead and its row is then given
one `lead` seconds ahead, once the workers are ready.
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from bundles import services
from bundles.choices import BundleStatus
from bundles.commands import BundleKillXCommand
from bundles.models import BundleJob
from coordinators.choices import JobStatus
from coordinators.models import CoordinatorJob
from datasets.timeline import format_datetime
from tooling.benchmarks.keyed_queue import bench_env
from tooling.benchmarks.runtime import bench_user, delete_jobs, percentile, private_redis
from xcommands.models import Command, CommandKey
from xcommands.queue import enqueue

Log = Callable[[str], None]

COORDINATOR_APP = """<coordinator-app name="{name}" frequency="${{coord:minutes(1)}}" start="${{start}}" end="${{end}}"
    timezone="UTC" xmlns="uri:oozie:coordinator:0.4">
  <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
</coordinator-app>
"""
KICK_OFF_LEAD_SECONDS = 3.0
POLL_SECONDS = 0.05
PHASE_TIMEOUT_SECONDS = 180


class BenchmarkUnavailable(RuntimeError):
    """The benchmark cannot run here (no database, or one without its tables)."""


def check_database() -> None:
    """BenchmarkUnavailable unless the database answers and every migration is applied."""
    try:
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as exc:
        raise BenchmarkUnavailable(f"cannot reach the database: {' '.join(str(exc).split())}") from None
    if plan:
        names = [f"{migration.app_label}.{migration.name}" for migration, _ in plan]
        raise BenchmarkUnavailable(
            f"the database is not migrated ({len(names)} migration(s) not applied, e.g. {', '.join(names[:3])}): "
            "run `python manage.py migrate` first"
        )


def write_applications(root: Path, prefix: str, count: int) -> str:
    """`count` coordinator applications under root (c0, c1, ...) and the bundle XML naming them (relative paths)."""
    parts = []
    for n in range(count):
        directory = root / f"c{n}"
        directory.mkdir(parents=True)
        (directory / "coordinator.xml").write_text(COORDINATOR_APP.format(name=f"{prefix}-{n}"))
        parts.append(f'<coordinator name="c{n}"><app-path>c{n}</app-path></coordinator>')
    return (
        f'<bundle-app name="{prefix}" xmlns="uri:oozie:bundle:0.2">'
        "<controls><kick-off-time>${kickOff}</kick-off-time></controls>"
        f"{''.join(parts)}</bundle-app>"
    )


def run_bundle_bench(coordinators: int, workers: int, log: Log, *, lead: float = KICK_OFF_LEAD_SECONDS) -> dict[str, Any]:
    """Kick off a bundle of `coordinators` coordinators, then kill it; seconds to all RUNNING and to all KILLED."""
    check_database()
    tmp = Path(tempfile.mkdtemp(prefix="bench-bundle-"))
    run = uuid.uuid4().hex[:6]
    prefix = f"bench-bundle-{run}"
    first = (timezone.now() + timedelta(minutes=2)).replace(second=0, microsecond=0)
    properties = {
        "start": format_datetime(first), "end": format_datetime(first + timedelta(minutes=2)),
        "kickOff": format_datetime(first + timedelta(minutes=30)),  # moved to `lead` seconds ahead below
    }
    xml = write_applications(tmp / "apps", prefix, coordinators)
    procs: list[subprocess.Popen[bytes]] = []
    bundle: BundleJob | None = None
    succeeded = False
    try:
        with private_redis(tmp, log) as url:
            owner = bench_user()
            started = time.perf_counter()
            bundle = services.submit_bundle(xml, properties, owner=owner, app_path=str(tmp / "apps"), trusted=True)
            submit_s = time.perf_counter() - started
            log(f"bundle {bundle.id}: {coordinators} coordinators validated and stored in {submit_s:.2f} s")
            procs = start_processes(tmp, url, workers, run, log)
            kick_off = timezone.now() + timedelta(seconds=lead)
            BundleJob.objects.filter(pk=bundle.pk).update(kick_off_time=kick_off)
            log(f"kick-off in {lead:.0f} s; waiting for {coordinators} coordinators RUNNING")
            jobs = CoordinatorJob.objects.filter(bundle_id=bundle.id)
            all_running = wait_for(
                lambda: jobs.filter(status=JobStatus.RUNNING).count() == coordinators
                and _status(bundle) == BundleStatus.RUNNING,
                "every coordinator RUNNING", log, lambda: f"{jobs.filter(status=JobStatus.RUNNING).count()} RUNNING",
            )
            started_at = BundleJob.objects.get(pk=bundle.pk).started_at
            start_phase_end = timezone.now()
            log(f"all RUNNING {(all_running - kick_off).total_seconds():.2f} s after the kick-off time; killing")
            killed_at = timezone.now()
            with transaction.atomic():  # what control_bundle queues (the bench user may not act through it)
                enqueue(BundleKillXCommand(bundle_id=bundle.id))
            all_killed = wait_for(
                lambda: jobs.filter(status=JobStatus.KILLED).count() == coordinators
                and _status(bundle) == BundleStatus.KILLED,
                "every coordinator KILLED", log, lambda: f"{jobs.filter(status=JobStatus.KILLED).count()} KILLED",
            )
            settled = wait_for(lambda: not BundleJob.objects.get(pk=bundle.pk).pending, "the bundle's verbs acknowledged", log)
            log(f"all KILLED {(all_killed - killed_at).total_seconds():.2f} s after the kill")
            keys = [bundle.id, *jobs.values_list("pk", flat=True)]
            stages = {
                "start": command_stages(keys, kick_off, start_phase_end),
                "kill": command_stages(keys, killed_at, timezone.now()),
            }
            for phase, figures in stages.items():
                for name, row in figures.items():
                    log(f"  {phase}: {name}: {row}")
        succeeded = True
    finally:
        stop_processes(procs)
        if bundle is not None:
            delete_bundle(bundle.id, prefix)
        if succeeded:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            log(f"worker and beat logs kept in {tmp}")
    return {
        "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
        "coordinators": coordinators,
        "workers": workers,
        "bundle_kickoff_seconds": int(settings.BUNDLE_KICKOFF_SECONDS),
        "status_service_seconds": int(settings.STATUS_SERVICE_SECONDS),
        "submit_s": round(submit_s, 3),
        "kickoff_to_started_s": _seconds(kick_off, started_at),
        "started_to_all_running_s": _seconds(started_at, all_running),
        "kickoff_to_all_running_s": _seconds(kick_off, all_running),
        "kill_to_all_killed_s": _seconds(killed_at, all_killed),
        "kill_to_acknowledged_s": _seconds(killed_at, settled),
        "commands": stages,
    }


def _status(bundle: BundleJob) -> str:
    return str(BundleJob.objects.filter(pk=bundle.pk).values_list("status", flat=True).get())


def _seconds(since: datetime | None, until: datetime | None) -> float | None:
    return None if since is None or until is None else round((until - since).total_seconds(), 3)


def wait_for(check: Callable[[], bool], what: str, log: Log, progress: Callable[[], str] | None = None) -> datetime:
    """Poll until check() holds; when it first did (RuntimeError after PHASE_TIMEOUT_SECONDS)."""
    deadline = time.monotonic() + PHASE_TIMEOUT_SECONDS
    next_report = time.monotonic() + 5
    while time.monotonic() < deadline:
        if check():
            return timezone.now()
        if progress is not None and time.monotonic() > next_report:
            log(f"  {timezone.now():%H:%M:%S} {progress()}")
            next_report += 5
        time.sleep(POLL_SECONDS)
    raise RuntimeError(f"timed out after {PHASE_TIMEOUT_SECONDS} s waiting for {what}")


def start_processes(tmp: Path, url: str, workers: int, run: str, log: Log) -> list[subprocess.Popen[bytes]]:
    """`workers` worker processes of concurrency 2 and a beat, with this process's settings; waits until the workers are ready."""
    env = bench_env(REDIS_URL=url)
    procs = []
    logs = []
    for index in range(workers):
        logfile = tmp / f"worker{index}.log"
        logs.append(logfile)
        procs.append(_spawn(["worker", "--loglevel", "INFO", "--concurrency", "2", "--queues",
                             "commands,services,actions,default", "--without-gossip", "--without-mingle",
                             "--hostname", f"bench{index}-{run}@%h"], env, logfile))
    procs.append(_spawn(["beat", "--loglevel", "WARNING", "--schedule", str(tmp / "beat-schedule")], env, tmp / "beat.log"))
    deadline = time.monotonic() + 60
    while not all(" ready." in _read(logfile) for logfile in logs):
        if time.monotonic() > deadline or any(proc.poll() is not None for proc in procs):
            raise RuntimeError(f"the workers did not start; see {tmp}")
        time.sleep(0.1)
    log(f"{workers} worker process(es) of concurrency 2 and beat started")
    return procs


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


def _spawn(args: list[str], env: dict[str, str], logfile: Path) -> subprocess.Popen[bytes]:
    handle = logfile.open("wb")
    return subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "celery", "-A", "project", *args],
        env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True, cwd=str(Path(settings.BASE_DIR)),
    )


def stop_processes(procs: Iterable[subprocess.Popen[bytes]]) -> None:
    """SIGTERM each process group, SIGKILL what lingers."""
    procs = list(procs)
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def delete_bundle(bundle_id: str, prefix: str) -> None:
    """The bundle, its actions and commands, its coordinators (theirs too)."""
    BundleJob.objects.filter(pk=bundle_id).delete()
    Command.objects.filter(key=bundle_id).delete()
    CommandKey.objects.filter(key=bundle_id).delete()
    delete_jobs(prefix)


def command_stages(keys: list[str], since: datetime, until: datetime) -> dict[str, dict[str, float]]:
    """Per command class enqueued in [since, until] on these keys: how many, p50/p99 seconds waiting and running."""
    timings: dict[str, tuple[list[float], list[float]]] = {}
    for first in range(0, len(keys), 500):
        rows = Command.objects.filter(
            key__in=keys[first:first + 500], enqueued_at__gte=since, enqueued_at__lte=until,
            started_at__isnull=False, finished_at__isnull=False,
        ).values_list("name", "enqueued_at", "started_at", "finished_at")
        for name, enqueued, begun, finished in rows:
            if begun is None or finished is None:  # filtered out above; for the type checker
                continue
            waits, runs = timings.setdefault(name.rsplit(".", 1)[-1], ([], []))
            waits.append((begun - enqueued).total_seconds())
            runs.append((finished - begun).total_seconds())
    return {
        name: {"count": len(waits), "wait_p50": round(statistics.median(waits), 3),
               "wait_p99": round(percentile(waits, 99), 3), "run_p50": round(statistics.median(runs), 4),
               "run_p99": round(percentile(runs, 99), 4), "run_total": round(sum(runs), 2)}
        for name, (waits, runs) in sorted(timings.items())
    }
