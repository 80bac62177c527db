"""Runtime benchmarks: `manage.py bench materialize` and `manage.py bench trigger-latency`.

Both run on the configured database (quote figures from PostgreSQL), start a private Redis
unless REDIS_URL answers, and delete what they created.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import redis
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.test import override_settings
from django.utils import timezone
from kombu import pools

from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.services import submit_coordinator
from datasets.timeline import format_datetime
from project.celery import app
from project.launcher import redis_answers
from tooling.benchmarks import keyed_queue as keyed_bench
from tooling.benchmarks.keyed_queue import bench_env, fresh_redis
from tooling.benchmarks.machine_cpu import MachineCpu, Snapshots, cores, cpu_by_group, process_cpu
from xcommands import engine
from xcommands.choices import CommandStatus
from xcommands.models import Command, CommandKey

Log = Callable[[str], None]

CATCH_UP_APP = """<coordinator-app name="bench-materialize" frequency="${{coord:minutes(1)}}" start="{start}" end="{end}"
    timezone="UTC" xmlns="uri:oozie:coordinator:0.4">
  <controls><throttle>{throttle}</throttle></controls>
  <datasets>
    <dataset name="ticks" frequency="${{coord:minutes(1)}}" initial-instance="2019-01-01T00:00Z" timezone="UTC">
      <uri-template>s3://bucket/ticks/${{YEAR}}/${{MONTH}}/${{DAY}}/${{HOUR}}/${{MINUTE}}</uri-template>
    </dataset>
  </datasets>
  <input-events>
    <data-in name="window" dataset="ticks">
      <start-instance>${{coord:current(-23)}}</start-instance><end-instance>${{coord:current(0)}}</end-instance>
    </data-in>
  </input-events>
  <action><workflow><app-path>task:examples.noop</app-path><configuration>
    <property><name>input</name><value>${{coord:dataIn('window')}}</value></property>
  </configuration></workflow></action>
</coordinator-app>"""

TRIGGER_APP = """<coordinator-app name="bench-trigger-{n}" frequency="${{coord:minutes(1)}}" start="{start}" end="{end}"
    timezone="UTC" xmlns="uri:oozie:coordinator:0.4">
  <controls><concurrency>2</concurrency></controls>
  <datasets>
    <dataset name="in" frequency="${{coord:minutes(1)}}" initial-instance="2020-01-01T00:00Z" timezone="UTC">
      <uri-template>file://{data}/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}${{MINUTE}}</uri-template>
    </dataset>
  </datasets>
  <input-events><data-in name="in" dataset="in"><instance>${{coord:current(0)}}</instance></data-in></input-events>
  <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
</coordinator-app>"""


def percentile(values: list[float], pct: float) -> float:
    """The pct-th percentile (nearest rank) of values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))]


@contextmanager
def private_redis(tmp: Path, log: Log) -> Iterator[str]:
    """REDIS_URL if it answers, else a redis-server of our own for the duration; the process's Celery app uses it."""
    configured = os.environ.get("REDIS_URL")
    proc = None
    if configured and redis_answers(configured):
        url = configured
    else:
        proc, url = fresh_redis(tmp)
        log(f"started redis-server on {url}")
    old = (app.conf.broker_url, app.conf.result_backend)
    app.conf.update(broker_url=url, result_backend=url)
    pools.reset()
    app._after_fork()  # type: ignore[attr-defined]  # forgets cached connection pools
    app._backend_cache = None  # type: ignore[attr-defined]
    try:
        yield url
    finally:
        app.conf.update(broker_url=old[0], result_backend=old[1])
        pools.reset()
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)


def bench_user() -> Any:
    """The user bench jobs belong to (created once)."""
    user, _ = get_user_model().objects.get_or_create(username="bench", defaults={"is_active": False})
    return user


def delete_jobs(prefix: str) -> None:
    """Delete bench jobs (and their actions and commands)."""
    ids = list(CoordinatorJob.objects.filter(app_name__startswith=prefix).values_list("pk", flat=True))
    for first in range(0, len(ids), 200):
        chunk = ids[first:first + 200]
        CoordinatorAction.objects.filter(job_id__in=chunk).delete()
        Command.objects.filter(key__in=chunk).delete()
        CommandKey.objects.filter(key__in=chunk).delete()
        CoordinatorJob.objects.filter(pk__in=chunk).delete()


def run_materialize_bench(actions: int, log: Log) -> dict[str, Any]:
    """Materialize `actions` actions of one catch-up job through the engine; compare with a plain bulk_create."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-materialize-"))
    start = (timezone.now() - timedelta(minutes=actions + 10)).replace(second=0, microsecond=0)
    end = start + timedelta(minutes=actions)
    xml = CATCH_UP_APP.format(start=format_datetime(start), end=format_datetime(end), throttle=actions)
    delete_jobs("bench-materialize")
    with private_redis(tmp, log), override_settings(COMMAND_DRAIN_MAX=1):
        try:
            job = submit_coordinator(xml, {}, owner=bench_user())
            log(f"job {job.id}: materializing {actions} past actions (minute frequency, 24-instance input range, "
                f"chunks of {settings.COORD_MATERIALIZATION_CHUNK})")
            started = time.perf_counter()
            commands = 0
            while True:
                heads = list(
                    Command.objects.filter(key=job.id, status=CommandStatus.PENDING).order_by("seq").values_list("pk", flat=True)[:1]
                )
                if not heads:
                    break
                engine.process(heads[0])
                commands += 1
                if commands % 40 == 0:
                    done = CoordinatorJob.objects.get(pk=job.pk).last_action_number
                    log(f"  {done} actions after {time.perf_counter() - started:.1f} s")
            elapsed = time.perf_counter() - started
            job.refresh_from_db()
            if job.last_action_number != actions or job.actions.count() != actions:
                raise RuntimeError(f"materialized {job.last_action_number} actions, expected {actions}")
            log(f"materialized {actions} actions in {elapsed:.2f} s with {commands} commands")
            baseline = _bulk_insert_baseline(job, actions, log)
        finally:
            delete_jobs("bench-materialize")
    rate = actions / elapsed
    return {
        "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
        "actions": actions,
        "seconds": round(elapsed, 2),
        "actions_per_s": round(rate, 1),
        "bulk_insert_actions_per_s": round(baseline, 1),
        "ratio_to_bulk_insert": round(rate / baseline, 3),
        "commands": commands,
    }


def _bulk_insert_baseline(job: CoordinatorJob, actions: int, log: Log) -> float:
    """Copies of the job's actions written with plain bulk_create, chunk by chunk, one transaction each."""
    copy = CoordinatorJob.objects.get(pk=job.pk)
    copy.id = f"{job.id}-copy"
    copy.app_name = "bench-materialize-copy"
    copy.save(force_insert=True)
    chunk = int(settings.COORD_MATERIALIZATION_CHUNK)
    elapsed = 0.0
    for first in range(1, actions + 1, chunk):
        rows = list(job.actions.filter(number__gte=first, number__lt=first + chunk).order_by("number"))
        for row in rows:
            row.pk = CoordinatorAction.action_id(copy.id, row.number)
            row.job_id = copy.id
        started = time.perf_counter()  # only the writes count: reading the source rows is not the baseline's work
        with transaction.atomic():
            CoordinatorAction.objects.bulk_create(rows)
        elapsed += time.perf_counter() - started
    log(f"bulk_create baseline: {actions} rows in {elapsed:.2f} s")
    return actions / elapsed


def run_trigger_latency_bench(jobs: int, minutes: int, workers: int, log: Log, *,
                              lead_seconds: float | None = None) -> dict[str, Any]:
    """Run `jobs` minute-frequency coordinators whose inputs exist for `minutes` nominal times; latency percentiles.

    The first nominal time is the minute two minutes from now, or the first whole minute at least
    `lead_seconds` away (time to submit the jobs and start the workers before it).
    """
    tmp = Path(tempfile.mkdtemp(prefix="bench-trigger-"))
    data = tmp / "data"
    run = uuid.uuid4().hex[:6]
    prefix = f"bench-trigger-{run}"
    if lead_seconds is None:
        first = (timezone.now() + timedelta(minutes=2)).replace(second=0, microsecond=0)
    else:
        first = (timezone.now() + timedelta(seconds=lead_seconds + 59.999)).replace(second=0, microsecond=0)
    end = first + timedelta(minutes=minutes)
    for n in range(minutes):
        flag = data / (first + timedelta(minutes=n)).strftime("%Y%m%d%H%M")
        flag.mkdir(parents=True)
        (flag / "_SUCCESS").write_text("")
    procs: list[subprocess.Popen[bytes]] = []
    cpu = MachineCpu()
    # Each process's CPU every half second from just before each nominal time to 15 s after it
    # (a steady minute's work ends within 3 s): what the minute cost, per part of the service.
    snapshots = Snapshots([(first + timedelta(minutes=n)).timestamp() + step / 2
                           for n in range(minutes) for step in range(-1, 31)])
    try:
        with private_redis(tmp, log) as url, cpu, snapshots:
            log(f"submitting {jobs} coordinators, first nominal time {format_datetime(first)}, {minutes} each")
            owner = bench_user()
            for n in range(jobs):
                xml = TRIGGER_APP.format(n=f"{run}-{n}", start=format_datetime(first), end=format_datetime(end), data=data)
                submit_coordinator(xml, {}, owner=owner)
            # The raw Celery no-op of the RUNNING floor runs on the same workers.
            env = bench_env(REDIS_URL=url, LOG_LEVEL="WARNING",
                            EXTRA_TASK_MODULES=",".join([*settings.CELERY_IMPORTS, keyed_bench.__name__]))
            for index in range(workers):
                procs.append(_spawn(["worker", "--loglevel", "WARNING", "--concurrency", "2", "--queues",
                                     "commands,services,actions,default", "--without-gossip", "--without-mingle",
                                     "--hostname", f"bench{index}-{run}@%h"], env, tmp / f"worker{index}.log"))
            procs.append(_spawn(["beat", "--loglevel", "WARNING", "--schedule", str(tmp / "beat-schedule")],
                                env, tmp / "beat.log"))
            log(f"{workers} worker process(es) of concurrency 2 and beat started; waiting for {jobs * minutes} actions")
            wanted = jobs * minutes
            deadline = end + timedelta(minutes=3)
            actions = CoordinatorAction.objects.filter(job__app_name__startswith=prefix)
            while timezone.now() < deadline:
                started = actions.filter(started_at__isnull=False).count()
                log(f"  {timezone.now():%H:%M:%S} running or done: {started}/{wanted}")
                if started >= wanted:
                    break
                time.sleep(5)
            ended = list(actions.values_list("nominal_time", "submitted_at", "started_at", "ended_at"))
            # Every action read as ended ended before now: a minute whose work outlasts the planned
            # snapshots ends its window here, before the floors below run on the same processes.
            snapshots.sample()
            rows = [row[:3] for row in ended]
            stages = _command_stages(prefix)
            for name, figures in stages.items():
                log(f"  {name}: {figures}")
            for entry in per_minute(rows):
                log(f"  minute {entry['nominal_time']}: {entry['submitted']}/{entry['actions']} SUBMITTED, p50 "
                    f"{entry['p50_s_to_submitted']} s, p99 {entry['p99_s_to_submitted']} s; RUNNING p99 {entry['p99_s_to_running']} s")
            floor = _trigger_floor(actions, jobs)
            log(f"  floor: {floor:.3f} s for one conditional update and one publish per action, {jobs} actions")
            floor_running = running_floor(url, jobs, log, cpu=cpu)
            log(f"  RUNNING floor: raw Celery no-op tasks published at once, {jobs}: started p50 "
                f"{floor_running['p50']} s, p99 {floor_running['p99']} s after the first publish, "
                f"{floor_running['cpu_ms_per_task']} ms of the machine's CPU per task")
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        delete_jobs(prefix)
    submitted = [_seconds(nominal, at) for nominal, at, _ in rows if at is not None]
    running = [_seconds(nominal, at) for nominal, _, at in rows if at is not None]
    p50 = statistics.median(submitted) if submitted else None
    p99 = percentile(submitted, 99) if submitted else None
    minutes_figures = per_minute(rows)
    processes = workers * 2
    for entry, spent in zip(minutes_figures, minute_cpu(ended, cpu), strict=True):
        entry.update(spent)
    for entry, nominal in zip(minutes_figures, sorted({row[0] for row in rows}), strict=True):
        window = None
        if entry["window_s"] is not None:
            window = snapshots.around(nominal.timestamp(), nominal.timestamp() + entry["window_s"])
        entry["process_window_s"] = round(window[1] - window[0], 2) if window is not None else None
        entry["process_cpu_ms_per_action"] = ({group: round(1000 * seconds / entry["actions"], 2)
                                               for group, seconds in window[2].items()} if window is not None else None)
    steady = [entry for entry in minutes_figures[1:-1] if entry["p99_s_to_running"] is not None]
    steady_cpu = [entry["cpu_ms_per_action"] for entry in steady if entry["cpu_ms_per_action"] is not None]
    cpu_ms = statistics.median(steady_cpu) if steady_cpu else None
    budget = running_budget(jobs, processes, cores())
    by_process = steady_by_process(steady)
    for entry in minutes_figures:
        log(f"  minute {entry['nominal_time']}: per action over {entry['process_window_s']} s around its work, "
            f"ms of CPU by process: {entry['process_cpu_ms_per_action']}")
        log(f"  minute {entry['nominal_time']}: the machine's CPU {entry['cpu_s']} s over {entry['window_s']} s "
            f"({entry['cpu_busy_pct']}% of {budget['cores']} cores; {entry['cpu_busy_pct_to_submitted']}% until its last "
            f"SUBMITTED), {entry['cpu_ms_per_action']} ms per action")
    log(f"  RUNNING floor, ms of CPU per task by process: {floor_running['process_cpu_ms_per_task']}")
    log(f"  RUNNING p99 under 1 s needs at most {budget['ms_per_action']:.2f} ms of the machine's CPU per action "
        f"({jobs} due, {processes} pool processes); steady minutes: {cpu_ms} ms, raw Celery's no-op: "
        f"{floor_running['cpu_ms_per_task']} ms")
    return {
        "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
        "jobs": jobs,
        "minutes": minutes,
        "workers": workers,
        "actions": len(rows),
        "submitted": len(submitted),
        "running": len(running),
        # The first action's latency is the wake-up's own lateness: the rest is the work of the moment.
        "min_s_to_submitted": round(min(submitted), 3) if submitted else None,
        "p50_s_to_submitted": round(statistics.median(submitted), 3) if submitted else None,
        "p99_s_to_submitted": round(percentile(submitted, 99), 3) if submitted else None,
        "p50_s_to_running": round(statistics.median(running), 3) if running else None,
        "p99_s_to_running": round(percentile(running, 99), 3) if running else None,
        # The floor: what triggering the actions due in one second costs at least (one conditional
        # update and one Celery publish per action), measured in this run; the ratios say how far above it.
        "floor_s": round(floor, 3),
        "p50_to_floor": round(p50 / floor, 1) if p50 is not None and floor else None,
        "p99_to_floor": round(p99 / floor, 1) if p99 is not None and floor else None,
        # RUNNING's floor: raw Celery no-op tasks, as many as fall due at once, published at once to
        # the actions' queue of the same workers, and when a worker process started each. No
        # database, no claim, no record: what Celery alone needs to start them all.
        "running_floor_p50_s": floor_running["p50"],
        "running_floor_p99_s": floor_running["p99"],
        "p99_running_to_floor": (round(percentile(running, 99) / floor_running["p99"], 2)
                                 if running and floor_running["p99"] else None),
        # The minutes between the first (which also carries the fresh jobs' start commands) and the
        # last (which also carries their end): what a running service meets each minute.
        "steady_p99_s_to_running": max((entry["p99_s_to_running"] for entry in steady), default=None),
        # Whether the machine has the CPU for the heading (ADR 0048). Each minute's
        # `cpu_ms_per_action` is the whole machine's busy CPU (workers, beat, Redis, the database,
        # this process) from its nominal time to its last action's end, per action. The 99th
        # percentile's action cannot start before all but `processes` of the actions before it
        # ran their whole path, so at c ms of CPU per action its start is at least about
        # (k - processes) x c / cores seconds after the nominal time; under 1 s needs c under
        # `heading_cpu_ms_per_action`. Raw Celery's own no-op task costs `running_floor_cpu_ms_per_task`.
        "cores": cores(),
        "processes": processes,
        "steady_cpu_ms_per_action": round(cpu_ms, 2) if cpu_ms is not None else None,
        "steady_p99_s_to_running_cpu_estimate": (round(budget["before_p99"] * cpu_ms / 1000 / budget["cores"], 3)
                                                 if cpu_ms is not None else None),
        "heading_cpu_ms_per_action": round(budget["ms_per_action"], 2),
        "running_floor_cpu_ms_per_task": floor_running["cpu_ms_per_task"],
        "running_floor_p99_s_cpu_estimate": (round(budget["before_p99"] * floor_running["cpu_ms_per_task"] / 1000
                                                   / budget["cores"], 3)
                                             if floor_running["cpu_ms_per_task"] is not None else None),
        # Where a steady minute's CPU goes, per action: each process's user and system time from
        # the snapshot just before its nominal time to the first after its last action's end, by part.
        "steady_process_cpu_ms_per_action": by_process,
        "running_floor_process_cpu_ms_per_task": floor_running["process_cpu_ms_per_task"],
        # The first minute also carries the start commands of the jobs just submitted; the later
        # ones are what a running service meets.
        "per_minute": minutes_figures,
    }


def per_minute(rows: list[tuple[datetime, datetime | None, datetime | None]]) -> list[dict[str, Any]]:
    """Per nominal time (oldest first): its actions, how many were SUBMITTED and RUNNING, p50/p99 seconds to each."""
    by_minute: dict[datetime, list[tuple[datetime, datetime | None, datetime | None]]] = {}
    for row in rows:
        by_minute.setdefault(row[0], []).append(row)
    figures = []
    for nominal, found in sorted(by_minute.items()):
        entry: dict[str, Any] = {"nominal_time": format_datetime(nominal), "actions": len(found)}
        for name, index in (("submitted", 1), ("running", 2)):
            seconds = [_seconds(nominal, at) for row in found if (at := row[index]) is not None]
            entry[name] = len(seconds)
            entry[f"p50_s_to_{name}"] = round(statistics.median(seconds), 3) if seconds else None
            entry[f"p99_s_to_{name}"] = round(percentile(seconds, 99), 3) if seconds else None
        figures.append(entry)
    return figures


def _trigger_floor(actions: Any, count: int) -> float:
    """Seconds for `count` conditional updates (one per action row, each its own transaction) and publishes.

    The publishes go to a queue no worker consumes, purged afterwards: nothing runs.
    """
    rows = list(actions.order_by("pk").values_list("pk", "status")[:count])
    queue = f"bench-floor-{uuid.uuid4().hex[:6]}"
    started = time.perf_counter()
    for pk, status in rows:
        with transaction.atomic():
            CoordinatorAction.objects.filter(pk=pk, status=status).update(last_modified=timezone.now())
            transaction.on_commit(lambda: app.send_task("bench.floor", queue=queue, ignore_result=True))
    elapsed = time.perf_counter() - started
    with app.connection_for_write() as connection:
        channel: Any = connection.default_channel
        channel.queue_purge(queue)
        channel.queue_delete(queue)
    return elapsed * count / max(1, len(rows))


def minute_cpu(rows: list[tuple[datetime, datetime | None, datetime | None, datetime | None]],
               cpu: MachineCpu) -> list[dict[str, Any]]:
    """Per nominal time (oldest first, as `per_minute`): the machine's busy CPU from it to its last action's end.

    `cpu_s`, `window_s` and `cpu_busy_pct` (busy CPU over what the cores offered in the window),
    and `cpu_ms_per_action`; None where an action has not ended or the window was not sampled.
    `cpu_busy_pct_to_submitted`: the same share from the nominal time to the minute's last
    SUBMITTED (whether the due start had idle cores to use).
    """
    by_minute: dict[datetime, list[tuple[datetime | None, datetime | None]]] = {}
    for nominal, submitted, _, ended in rows:
        by_minute.setdefault(nominal, []).append((submitted, ended))
    figures = []
    offered = cores()
    for nominal, found in sorted(by_minute.items()):
        ends = [end for _, end in found]
        last = None if None in ends else max(end for end in ends if end is not None)
        busy = None if last is None else cpu.busy_between(nominal.timestamp(), last.timestamp())
        window = (last - nominal).total_seconds() if last is not None else None
        sent = [at for at, _ in found]
        last_sent = None if None in sent else max(at for at in sent if at is not None)
        to_sent = None if last_sent is None else cpu.busy_between(nominal.timestamp(), last_sent.timestamp())
        sent_window = (last_sent - nominal).total_seconds() if last_sent is not None else 0.0
        figures.append({
            "cpu_s": round(busy, 3) if busy is not None else None,
            "window_s": round(window, 3) if busy is not None and window is not None else None,
            "cpu_busy_pct": (round(100 * busy / (offered * window), 1)
                             if busy is not None and window is not None and window > 0 else None),
            "cpu_ms_per_action": round(1000 * busy / len(ends), 2) if busy is not None else None,
            "cpu_busy_pct_to_submitted": (round(100 * to_sent / (offered * sent_window), 1)
                                          if to_sent is not None and sent_window > 0 else None),
        })
    return figures


def steady_by_process(steady: list[dict[str, Any]]) -> dict[str, float] | None:
    """The steady minutes' CPU per action by process group: the median of each group over them."""
    found = [entry["process_cpu_ms_per_action"] for entry in steady if entry.get("process_cpu_ms_per_action")]
    if not found:
        return None
    groups = sorted({group for figures in found for group in figures})
    return {group: round(statistics.median(figures.get(group, 0.0) for figures in found), 2) for group in groups}


def running_budget(due: int, processes: int, offered: int) -> dict[str, float]:
    """The CPU a due action may cost for the 99th percentile of `due` actions to start within 1 s.

    The 99th percentile (nearest rank, as `percentile`) is the k-th start; when it starts, at
    most `processes - 1` of the actions before it are still running, so at least k - processes
    ran their whole path on `offered` cores.
    """
    k = min(due, max(1, round(0.99 * (due - 1)) + 1))
    before = max(1, k - processes)
    return {"before_p99": before, "cores": offered, "ms_per_action": 1000 * offered / before}


def running_floor(url: str, count: int, log: Log, *, cpu: MachineCpu | None = None) -> dict[str, Any]:
    """Seconds from the first publish to each start of `count` raw Celery no-op tasks published at once: p50, p99.

    They go to the actions' queue of the run's workers once the run's work is done (its queues
    empty); each task notes, in Redis, when a worker process started it. With `cpu` (sampling),
    also the machine's busy CPU from the first publish to the last start, per task, and each
    process's CPU from just before the first publish to just after the last start, by part.
    """
    client = redis.Redis.from_url(url)
    deadline = time.monotonic() + 60
    while any(client.llen(queue) for queue in ("actions", "commands", "services")) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)  # the last records and their settles
    run = uuid.uuid4().hex[:8]
    processes = process_cpu() if cpu is not None else {}
    started = time.time()
    for seq in range(count):
        app.send_task("xcommands.bench.raw_noop", args=(run, "floor", seq), queue="actions", ignore_result=True)
    key = f"bench:{run}:floor"
    deadline = time.monotonic() + 60
    while client.llen(key) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    by_group = {}
    if cpu is not None:
        by_group = cpu_by_group(processes, process_cpu())
        cpu.sample()  # the window ends at the last start, before now
    rows = keyed_bench._read(client, run, "floor")
    client.delete(key)
    if len(rows) < count:
        log(f"  RUNNING floor: only {len(rows)} of {count} raw tasks ran within 60 s")
    waits = [start - started for _, start, _ in rows]
    busy = cpu.busy_between(started, started + max(waits)) if cpu is not None and waits else None
    return {"ran": len(rows), "p50": round(statistics.median(waits), 3) if waits else None,
            "p99": round(percentile(waits, 99), 3) if waits else None,
            "cpu_ms_per_task": round(1000 * busy / len(rows), 2) if busy is not None else None,
            "process_cpu_ms_per_task": ({group: round(1000 * seconds / len(rows), 2) for group, seconds in by_group.items()}
                                        if by_group and rows else None)}


def _command_stages(prefix: str) -> dict[str, dict[str, float]]:
    """Per command class: how many ran, p50/p99 seconds waiting (enqueued to started) and running."""
    ids = list(CoordinatorJob.objects.filter(app_name__startswith=prefix).values_list("pk", flat=True))
    timings: dict[str, tuple[list[float], list[float]]] = {}
    for first in range(0, len(ids), 500):
        rows = Command.objects.filter(key__in=ids[first:first + 500], started_at__isnull=False, finished_at__isnull=False)
        for name, enqueued, started, finished in rows.values_list("name", "enqueued_at", "started_at", "finished_at"):
            if started is None or finished is None:
                continue
            waits, runs = timings.setdefault(name.rsplit(".", 1)[-1], ([], []))
            waits.append((started - enqueued).total_seconds())
            runs.append((finished - started).total_seconds())
    return {
        name: {"count": len(waits), "wait_p50": round(statistics.median(waits), 3), "wait_p99": round(percentile(waits, 99), 3),
               "run_p50": round(statistics.median(runs), 4), "run_p99": round(percentile(runs, 99), 4)}
        for name, (waits, runs) in sorted(timings.items())
    }


def _seconds(nominal: datetime, at: datetime) -> float:
    return (at - nominal).total_seconds()


def _spawn(args: list[str], env: dict[str, str], logfile: Path) -> subprocess.Popen[bytes]:
    handle = logfile.open("wb")
    return subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "celery", "-A", "project", *args],
        env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True, cwd=str(Path(settings.BASE_DIR)),
    )
