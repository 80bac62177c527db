"""`manage.py bench batch`: N small objects through every stage with real workers, against raw Celery in the same run.

It writes N one-file objects (each with an object manifest carrying the file's md5) to a
temporary directory and splits them over a few manifest-of-manifests batches of different
priorities (`PRIORITY_MIX`), submitted back to back, as the seed's depositors would: the
processing task is the no-op `examples.ingest_noop`, so what is measured is the pipeline
(seven stages per object, run as commands in slots, the operation's countdown, reports). One worker of
concurrency `workers` and a beat run on the configured database and a private Redis unless
REDIS_URL answers; raw Celery no-op tasks are drained by the same worker before and after.

Priority inversions are counted at every dispatch (a stage command queued for a job, the
moment its slot was given, or the start of a stage its job ran in the slot it kept): how many jobs of a better (lower) priority were waiting runnable
in some stage's queue then. A job is runnable from entering a queue (its history's
`waited_since`; for pending, not before its batch's expansion committed) to its dispatch.
Everything the run created (rows, commands, slots it added, files) is deleted.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import socket
import statistics
import subprocess
import sys
import time
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import redis
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Count, Q
from django.utils import timezone

from batches.choices import BatchStatus
from batches.config import slots
from batches.definitions import (
    Digest,
    FileSpec,
    ObjectSpec,
    write_batch_manifest,
    write_object_manifest,
)
from batches.dispatch import ensure_slots
from batches.models import (
    Batch,
    BatchJob,
    Collection,
    IngestSettings,
    Profile,
    Slot,
)
from batches.services import submit_batch
from tooling.benchmarks import keyed_queue as keyed_bench
from tooling.benchmarks.batch_memory import delete_rows
from tooling.benchmarks.runtime import bench_user, percentile
from xcommands.models import Command

Log = Callable[[str], None]

#: (batch priority, share of the objects), in submission order; None: the profile's default (5).
PRIORITY_MIX: tuple[tuple[int | None, float], ...] = ((None, 0.5), (8, 0.2), (2, 0.2), (0, 0.1))
PROFILE_PRIORITY = 5
STALL_SECONDS = 120.0  # no job moved for this long: the run is stuck (logs are kept)
PROGRESS_SECONDS = 5.0
STAGE_COMMAND = "BatchJobStageXCommand"


def split(objects: int) -> list[tuple[int, int]]:
    """(priority, objects) per batch of PRIORITY_MIX, at least one object each, summing to `objects`."""
    counts = [max(1, round(objects * share)) for _, share in PRIORITY_MIX]
    counts[0] = objects - sum(counts[1:])
    mix = [(PROFILE_PRIORITY if p is None else p, n) for (p, _), n in zip(PRIORITY_MIX, counts, strict=True)]
    return [(p, n) for p, n in mix if n > 0] if counts[0] > 0 else [(PROFILE_PRIORITY, objects)]


def object_content(run: str, number: int, size: int = 0) -> bytes:
    """An object's file: one line naming it, repeated to `size` bytes when given (0: the line alone)."""
    line = f"bench {run} object {number}\n".encode()
    if size <= 0:
        return line
    return (line * (size // len(line) + 1))[:size]


def write_deposit(root: Path, run: str, parts: list[tuple[int, int]], object_bytes: int = 0) -> list[str]:
    """One file and one object manifest (md5, size) per object; a manifest of manifests per part; their URLs.

    The objects' files are `root/NNN/oNNNNNN.txt` (`data_files` lists them).
    """
    urls = []
    number = 0
    for index, (_, count) in enumerate(parts):
        specs = []
        for _ in range(count):
            number += 1
            directory = root / f"{number // 1000:03d}"
            directory.mkdir(parents=True, exist_ok=True)
            content = object_content(run, number, object_bytes)
            data = directory / f"o{number:06d}.txt"
            data.write_bytes(content)
            local = f"o{number:06d}"
            manifest = directory / f"{local}.checkm"
            manifest.write_text(write_object_manifest([FileSpec(
                url=f"file://{data}", name=data.name, size=len(content),
                digest=Digest("md5", hashlib.md5(content).hexdigest()),  # noqa: S324 - manifests carry md5
            )], local_ids=local))
            specs.append(ObjectSpec(local_ids=(local,), manifest_url=f"file://{manifest}"))
        batch = root / f"batch{index}.checkm"
        batch.write_text(write_batch_manifest(specs))
        urls.append(f"file://{batch}")
    return urls


def data_files(root: Path) -> list[Path]:
    """The objects' files of a deposit written by `write_deposit`."""
    return sorted(root.glob("*/o*.txt"))


def parallel_copy(files: list[Path], target: Path, parallelism: int) -> tuple[float, int]:
    """Copy the files into `target` with `parallelism` threads of shutil.copyfile: (seconds, bytes) (the baseline)."""
    target.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, parallelism)) as pool:
        list(pool.map(lambda path: shutil.copyfile(path, target / path.name), files))
    seconds = time.monotonic() - started
    copied = sum(path.stat().st_size for path in files)
    shutil.rmtree(target, ignore_errors=True)
    return seconds, copied


def _mb(count: int) -> float:
    return count / 1_000_000


class BatchBench(keyed_bench.Bench):
    """Raw Celery rounds around one run of the batches, on the same worker and Redis."""

    def __init__(self, objects: int, workers: int, log: Log, object_bytes: int = 0) -> None:
        super().__init__(objects, min(100, objects), workers, log)
        self.object_bytes = object_bytes
        self.task_modules = ["tooling.benchmarks.keyed_queue", "examples.tasks"]
        self.name = f"bench-batch-{self.run}"
        self.prefix = f"ark:/99999/bench{self.run}-"

    def _start_worker(self) -> None:
        """The worker (every queue: stages, services, actions) and a beat (the dispatch service), ready."""
        self.hostname = f"bench-{self.run}@{socket.gethostname()}"
        env = keyed_bench.bench_env(REDIS_URL=self.redis_url, EXTRA_TASK_MODULES=",".join(self.task_modules),
                                    LOG_LEVEL="WARNING", BATCH_WORK_ROOT=str(self.tmp / "work"))
        for name, args in (
            ("worker", ["worker", "--loglevel", "WARNING", "--concurrency", str(self.workers), "--queues",
                        "commands,services,actions,default", "--without-gossip", "--without-mingle",
                        "--hostname", self.hostname]),
            ("beat", ["beat", "--loglevel", "WARNING", "--schedule", str(self.tmp / "beat-schedule")]),
        ):
            with (self.tmp / f"{name}.log").open("wb") as out:
                self.procs.append(subprocess.Popen(  # noqa: S603
                    [sys.executable, "-m", "celery", "-A", "project", *args], env=env, stdout=out,
                    stderr=subprocess.STDOUT, start_new_session=True, cwd=str(Path(settings.BASE_DIR)),
                ))
        client = redis.Redis.from_url(self.redis_url)
        probe = f"{self.run}-probe"
        deadline = time.monotonic() + 60
        keyed_bench.raw_noop.apply_async(args=(probe, "probe", 0), queue="default")
        while not client.llen(f"bench:{probe}:probe"):
            if time.monotonic() > deadline or any(proc.poll() is not None for proc in self.procs):
                raise RuntimeError(f"the bench worker did not start; see {self.tmp}")
            time.sleep(0.1)

    def execute_batches(self) -> dict[str, Any]:
        """Raw round, the batches, raw round; the figures. Everything created is deleted, logs kept on failure."""
        had_user = get_user_model().objects.filter(username="bench").exists()
        had_settings = IngestSettings.objects.exists()
        had_slots = set(Slot.objects.values_list("number", flat=True))
        self.redis_url = self._start_redis()
        keyed_bench._point_app_at(self.redis_url)
        settings.REDIS_URL = self.redis_url
        client = redis.Redis.from_url(self.redis_url)
        parts = split(self.commands)
        finished = False
        try:
            self.log(f"bench run {self.run}: writing {self.commands} objects in {len(parts)} batches "
                     f"(priority, objects: {parts}) to {self.tmp}")
            urls = write_deposit(self.tmp / "deposit", self.run, parts, self.object_bytes)
            files = data_files(self.tmp / "deposit")
            copy_s, total_bytes = parallel_copy(files, self.tmp / "copy", self.workers)
            self.log(f"plain parallel copy ({self.workers} threads of shutil.copyfile): {len(files) / copy_s:.0f} "
                     f"objects/s, {_mb(total_bytes) / copy_s:.1f} MB/s ({_mb(total_bytes):.1f} MB)")
            self.log(f"starting a worker (concurrency {self.workers}) and beat on {self.redis_url}; "
                     f"BATCH_SLOTS {slots()}")
            self._start_worker()
            raws = [self._raw_round(client, 0)]
            self.log(f"raw Celery: {raws[0]:.0f} no-op tasks/s ({self.commands} tasks)")
            run = self._run_batches(bench_user(), urls, parts)
            raws.append(self._raw_round(client, 1))
            self.log(f"raw Celery again: {raws[1]:.0f} no-op tasks/s")
            finished = True
        finally:
            with contextlib.suppress(redis.RedisError):  # the traces, when the Redis is not our own
                for key in client.scan_iter(f"bench:{self.run}*"):
                    client.delete(key)
            self.cleanup(keep_logs=not finished)
            self._delete_rows(had_user, had_settings, had_slots)
            if finished:
                shutil.rmtree(self.tmp, ignore_errors=True)
            else:
                self.log(f"worker and beat logs kept in {self.tmp}")
        raw = statistics.mean(raws)
        mb_per_s = _mb(total_bytes) / run["seconds"] if run["seconds"] > 0 else 0.0
        copy_objects_per_s = len(files) / copy_s if copy_s > 0 else 0.0
        self.log(f"pipeline {run['objects_per_s']:.1f} objects/s, {mb_per_s:.3f} MB/s; plain parallel copy "
                 f"{copy_objects_per_s:.0f} objects/s, {_mb(total_bytes) / copy_s:.1f} MB/s; raw Celery {raw:.0f} tasks/s "
                 f"(ratio {run['objects_per_s'] / raw:.4f})")
        return {
            "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
            "objects": self.commands,
            "workers": self.workers,
            "slots": slots(),
            "object_bytes": round(total_bytes / max(1, len(files))),
            **run,
            "mb_per_s": round(mb_per_s, 4),
            "copy_objects_per_s": round(copy_objects_per_s, 1),
            "copy_mb_per_s": round(_mb(total_bytes) / copy_s, 2) if copy_s > 0 else 0.0,
            "copy_ratio": round(run["objects_per_s"] / copy_objects_per_s, 5) if copy_objects_per_s else 0.0,
            "raw_celery_per_s": round(raw, 1),
            "raw_rounds": [round(x, 1) for x in raws],
            "ratio": round(run["objects_per_s"] / raw, 4),
        }

    def _run_batches(self, owner: Any, urls: list[str], parts: list[tuple[int, int]]) -> dict[str, Any]:
        """Submit the batches, wait for every job and report; objects/s, inversions, stage and command timings."""
        collection = Collection.objects.create(name=self.name, description="manage.py bench batch")
        Profile.objects.create(name=self.name, collection=collection, task="examples.ingest_noop",
                               priority=PROFILE_PRIORITY, identifier_prefix=self.prefix)
        # The slot rows are the deployment's (the dispatch service creates them on its first tick);
        # created here so the run does not wait for a tick when an earlier run removed them.
        ensure_slots()
        started = timezone.now()
        batches = []
        for url, (priority, _) in zip(urls, parts, strict=True):
            batch, _ = submit_batch(owner=owner, profile=self.name, payload_url=url, type="manifest-of-manifests",
                                    priority=None if priority == PROFILE_PRIORITY else priority, trusted=True)
            batches.append(batch.pk)
        submit_s = (timezone.now() - started).total_seconds()
        self.log(f"{len(batches)} batches submitted in {submit_s:.2f} s; waiting for {self.commands} objects")
        self._wait(batches)
        self._wait_reported(batches)
        figures = analyse(self.name, batches, started)
        figures["submit_s"] = round(submit_s, 3)
        reported = max(when for when in Batch.objects.filter(pk__in=batches).values_list("finished_at", flat=True) if when)
        figures["reported_after_last_object_s"] = round((reported - figures.pop("_last_end")).total_seconds(), 3)
        inv = figures["inversions"]
        self.log(f"{figures['objects_per_s']:.1f} objects/s; priority inversions at dispatch p50 {inv['p50']}, "
                 f"p99 {inv['p99']}, max {inv['max']} ({inv['dispatches']} dispatches)")
        for row in figures["batches"]:
            self.log(f"  batch priority {row['priority']}: {row['objects']} objects, expanded "
                     f"{row['expanded_s']} s, done {row['done_s']} s after the first submission")
        for name, row in figures["stages"].items():
            self.log(f"  stage {name}: {row}")
        for name, row in figures["commands"].items():
            self.log(f"  command {name}: {row}")
        return figures

    def _wait(self, batches: list[int]) -> None:
        """Until every job ended (completed or failed); progress on the log; RuntimeError when nothing moves."""
        last_moved = time.monotonic()
        last_done = -1
        next_report = time.monotonic() + PROGRESS_SECONDS
        first = time.monotonic()
        while True:
            counts = Counter(dict(
                BatchJob.objects.filter(batch_id__in=batches).values("status").annotate(n=Count("pk")).values_list("status", "n")
            ))
            ended = counts["completed"] + counts["failed"] + counts["deleted"]
            if sum(counts.values()) == self.commands and ended == self.commands:
                if counts["failed"]:
                    raise RuntimeError(f"{counts['failed']} bench job(s) failed; see the batches' reports")
                return
            done = counts["completed"] * 8 + sum(counts.values())  # anything moving counts as progress
            if done != last_done:
                last_done, last_moved = done, time.monotonic()
            elif time.monotonic() - last_moved > STALL_SECONDS:
                raise RuntimeError(f"no bench job moved for {STALL_SECONDS:.0f} s: {dict(counts)}; see {self.tmp}")
            if time.monotonic() > next_report:
                rate = counts["completed"] / (time.monotonic() - first)
                waiting = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if k != "completed")
                self.log(f"  {timezone.now():%H:%M:%S} {counts['completed']}/{self.commands} completed "
                         f"({rate:.0f}/s); {waiting or 'none waiting'}")
                next_report += PROGRESS_SECONDS
            time.sleep(0.2)

    def _wait_reported(self, batches: list[int]) -> None:
        deadline = time.monotonic() + STALL_SECONDS
        while Batch.objects.filter(pk__in=batches).exclude(status=BatchStatus.COMPLETED).exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"the bench batches did not all report COMPLETED in {STALL_SECONDS:.0f} s")
            time.sleep(0.1)

    def _delete_rows(self, had_user: bool, had_settings: bool, had_slots: set[int]) -> None:
        """Everything of the run: inventory, identifiers, batches and jobs, operations, commands, added slots."""
        delete_rows(self.name, self.prefix)
        Slot.objects.exclude(number__in=had_slots).filter(job__isnull=True).delete()
        if not had_settings:
            IngestSettings.objects.all().delete()
        if not had_user:
            get_user_model().objects.filter(username="bench").delete()


def _seconds(since: datetime, until: datetime | None) -> float | None:
    return None if until is None else round((until - since).total_seconds(), 2)


def _when(value: str) -> datetime:
    return datetime.fromisoformat(value)


def _summary(values: list[float], digits: int = 3) -> dict[str, float]:
    return {"p50": round(statistics.median(values), digits), "p99": round(percentile(values, 99), digits),
            "max": round(max(values), digits)} if values else {}


def analyse(name: str, batch_ids: list[int], started: datetime) -> dict[str, Any]:
    """Objects/s, per batch timings, priority inversions at dispatch, per stage and per command class timings."""
    expanded = {
        int(params["batch_id"]): done for params, done in Command.objects.filter(
            key__in=[f"batch:{pk}" for pk in batch_ids], name__endswith="BatchStartXCommand",
        ).values_list("params", "finished_at")
    }
    priorities = dict(Batch.objects.filter(pk__in=batch_ids).values_list("pk", "priority"))
    dispatched: dict[tuple[int, str], tuple[int, datetime]] = {}  # (job, stage) -> (token, dispatch time)
    timings: dict[str, tuple[list[float], list[float]]] = {}
    for command, params, enqueued, begun, ended in Command.objects.filter(
        Q(key__startswith=f"object:{name}:") | Q(key__in=[f"batch:{pk}" for pk in batch_ids])
        | Q(key=f"operation:collection:{name}")
    ).values_list("name", "params", "enqueued_at", "started_at", "finished_at").iterator(chunk_size=5000):
        short = command.rsplit(".", 1)[-1]
        if begun is not None and ended is not None:
            waits, runs = timings.setdefault(short, ([], []))
            waits.append((begun - enqueued).total_seconds())
            runs.append((ended - begun).total_seconds())
        if short == STAGE_COMMAND:
            key = (int(params["job_id"]), str(params["stage"]))
            if key not in dispatched or params["token"] > dispatched[key][0]:
                dispatched[key] = (int(params["token"]), enqueued)
    stages: dict[str, tuple[list[float], list[float]]] = {}
    runnable: dict[int, list[tuple[datetime, datetime]]] = {}
    events: list[tuple[datetime, int]] = []
    named: list[tuple[int, str, bool]] = []  # per event: its job, its stage, whether it was a dispatch (else a kept slot)
    per_batch_end: dict[int, datetime] = {}
    first_start: datetime | None = None
    last_end = started
    for job_id, batch_id, priority, history in BatchJob.objects.filter(batch_id__in=batch_ids).values_list(
        "pk", "batch_id", "priority", "history"
    ).iterator(chunk_size=2000):
        for entry in history:
            if "started" not in entry or "waited_since" not in entry:
                continue
            stage, begun, ended = entry["stage"], _when(entry["started"]), _when(entry["at"])
            queued = max(_when(entry["waited_since"]), expanded.get(batch_id) or started)
            waits, runs = stages.setdefault(stage, ([], []))
            waits.append((begun - queued).total_seconds())
            runs.append((ended - begun).total_seconds())
            first_start = begun if first_start is None else min(first_start, begun)
            if entry.get("to") == "completed":
                last_end = max(last_end, ended)
                per_batch_end[batch_id] = max(per_batch_end.get(batch_id, ended), ended)
            dispatch = dispatched.get((job_id, stage))
            # A stage run in the slot its job kept (BATCH_CHAIN_STAGES) has no command of its own:
            # its dispatch is the moment it started, when no better job waited.
            given = dispatch[1] if dispatch is not None and dispatch[1] <= begun else begun
            runnable.setdefault(priority, []).append((queued, max(queued, given)))
            events.append((given, priority))
            named.append((job_id, stage, dispatch is not None and dispatch[1] <= begun))
    inversions = count_inversions(runnable, events)
    worst = max(range(len(inversions)), key=inversions.__getitem__, default=None)
    objects = BatchJob.objects.filter(batch_id__in=batch_ids, status="completed").count()
    elapsed = (last_end - started).total_seconds()
    return {
        "objects_per_s": round(objects / elapsed, 2) if elapsed > 0 else 0.0,
        "seconds": round(elapsed, 2),
        "first_stage_after_submit_s": round(((first_start or started) - started).total_seconds(), 3),
        "_last_end": last_end,
        "inversions": {"dispatches": len(inversions), **_summary([float(x) for x in inversions], 1),
                       "mean": round(statistics.mean(inversions), 2) if inversions else 0.0,
                       "dispatches_with_any": sum(1 for x in inversions if x),
                       "worst": None if worst is None or not inversions[worst] else {
                           "better_runnable": inversions[worst], "priority": events[worst][1], "job": named[worst][0],
                           "stage": named[worst][1], "dispatched": named[worst][2],
                           "at_s": round((events[worst][0] - started).total_seconds(), 3)}},
        "batches": [
            {"batch": pk, "priority": PROFILE_PRIORITY if priorities[pk] is None else priorities[pk],
             "objects": BatchJob.objects.filter(batch_id=pk).count(),
             "expanded_s": _seconds(started, expanded.get(pk)),
             "done_s": _seconds(started, per_batch_end.get(pk))}
            for pk in batch_ids
        ],
        "stages": {stage: {"count": len(waits), "queued_to_start": _summary(waits), "run": _summary(runs, 4),
                           "run_total_s": round(sum(runs), 2)} for stage, (waits, runs) in stages.items()},
        "commands": {short: {"count": len(waits), "wait": _summary(waits), "run": _summary(runs, 4),
                             "run_total_s": round(sum(runs), 2)} for short, (waits, runs) in sorted(timings.items())},
    }


def count_inversions(runnable: dict[int, list[tuple[datetime, datetime]]], events: list[tuple[datetime, int]]) -> list[int]:
    """Per dispatch (time, priority): how many jobs of a better (lower) priority were runnable at that time.

    A job is runnable over [queued, dispatched): counted at t when queued <= t < dispatched.
    """
    tables = {
        priority: (sorted(start for start, _ in spans), sorted(end for _, end in spans))
        for priority, spans in runnable.items()
    }
    counts = []
    for when, priority in events:
        total = 0
        for better, (starts, ends) in tables.items():
            if better < priority:
                total += bisect_right(starts, when) - bisect_right(ends, when)
        counts.append(total)
    return counts


def run_batch_bench(objects: int, workers: int, log: Log, object_bytes: int = 0) -> dict[str, Any]:
    """Entry point for `manage.py bench batch`."""
    return BatchBench(objects, workers, log, object_bytes).execute_batches()
