"""`manage.py bench batch-memory`: a worker's peak memory for one large object against one small object.

Each object (one file, named by an object manifest with its size) goes through every stage
in a fresh process that runs the job's commands as a worker's pool process does (the
command engine in process, the no-op processing task `examples.ingest_noop`); the process
then reports its peak resident set (VmHWM). The large file is sparse (written by
truncation: no disk space until it is downloaded) and deleted after its run; the download
into BATCH_WORK_ROOT goes with the job's working directory when it completes. Streaming
(downloads, digests, unpacking in chunks) keeps the peak flat: the large object's peak
stays within a few MB of the small one's instead of growing with its size.

Everything the runs created (rows, commands, files) is deleted.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Q
from django.utils import timezone

from batches.choices import BatchStatus
from batches.commands.stage import fill_slots
from batches.definitions import FileSpec, write_object_manifest
from batches.dispatch import ensure_slots
from batches.models import (
    Batch,
    BatchJob,
    Collection,
    IngestSettings,
    InventoryFile,
    InventoryLocalId,
    InventoryObject,
    MintedIdentifier,
    Profile,
    Slot,
)
from batches.services import submit_batch
from operations.models import Operation, OperationTarget
from tooling.benchmarks.keyed_queue import bench_env
from tooling.benchmarks.runtime import bench_user
from xcommands import engine
from xcommands.choices import CommandStatus
from xcommands.models import Command, CommandKey

Log = Callable[[str], None]

SMALL_BYTES = 1024
RUN_SECONDS = 1800.0  # a 2 GB object is downloaded and digested in well under a minute on a slow disk
CHILD = (
    "import sys, django; django.setup(); "
    "from tooling.benchmarks.batch_memory import run_one_object; run_one_object(sys.argv[1], sys.argv[2])"
)


def peak_rss_kb() -> int:
    """This process's peak resident set in kB (VmHWM; ru_maxrss where /proc is missing)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _drive(name: str, batch_id: int) -> None:
    """Run the run's commands here, as a worker would, until its batch has reported."""
    keys = Q(key__startswith=f"object:{name}:") | Q(key=f"batch:{batch_id}") | Q(key=f"operation:collection:{name}")
    deadline = time.monotonic() + RUN_SECONDS
    ensure_slots()
    while Batch.objects.filter(pk=batch_id).exclude(status__in=[BatchStatus.COMPLETED, BatchStatus.FAILED]).exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"bench batch-memory: batch {batch_id} did not end in {RUN_SECONDS:.0f} s")
        due = list(Command.objects.filter(keys, status=CommandStatus.PENDING, not_before__lte=timezone.now())
                   .order_by("seq").values_list("pk", flat=True))
        for command_id in due:
            engine.process(command_id)
        if not due and not fill_slots():
            time.sleep(0.05)


def delete_rows(name: str, prefix: str) -> None:
    """Everything of one run: inventory, identifiers, batch and jobs, operation, commands, profile, collection."""
    target = f"collection:{name}"
    batch_ids = list(Batch.objects.filter(collection__name=name).values_list("pk", flat=True))
    InventoryFile.objects.filter(object__collection__name=name).delete()
    InventoryLocalId.objects.filter(collection__name=name).delete()
    InventoryObject.objects.filter(collection__name=name).delete()
    MintedIdentifier.objects.filter(identifier__startswith=prefix).delete()
    Slot.objects.filter(job__batch_id__in=batch_ids).update(job=None, since=None)
    BatchJob.objects.filter(batch_id__in=batch_ids).update(blocked_by=None)
    Batch.objects.filter(pk__in=batch_ids).delete()
    Operation.objects.filter(target=target).delete()
    OperationTarget.objects.filter(name=target).delete()
    keys = Q(key__startswith=f"object:{name}:") | Q(key__in=[f"batch:{pk}" for pk in batch_ids]) | Q(
        key=f"operation:{target}")
    Command.objects.filter(keys).delete()
    CommandKey.objects.filter(keys).delete()
    Profile.objects.filter(name=name).delete()
    Collection.objects.filter(name=name).delete()


def run_one_object(manifest: str, name: str) -> None:
    """In a fresh process: the object through every stage; prints its figures (JSON) with the peak RSS."""
    from project.celery import app  # noqa: PLC0415 - this process's app, pointed at an in-memory broker below

    app.conf.update(broker_url="memory://")  # the doorbells of the commands run here stay in this process
    app.loader.import_default_modules()  # the task modules a worker imports (EXTRA_TASK_MODULES): the no-op task
    before = peak_rss_kb()
    prefix = f"ark:/99999/{name}-"
    collection = Collection.objects.create(name=name, description="manage.py bench batch-memory")
    Profile.objects.create(name=name, collection=collection, task="examples.ingest_noop", identifier_prefix=prefix)
    try:
        started = time.monotonic()
        batch, _ = submit_batch(owner=bench_user(), profile=name, payload_url=manifest, type="object-manifest",
                                trusted=True)
        _drive(name, batch.pk)
        seconds = time.monotonic() - started
        job = BatchJob.objects.get(batch=batch)
        size = sum(int(entry.get("size") or 0) for entry in job.files)
        print(json.dumps({"status": job.status, "error": job.error, "bytes": size, "seconds": round(seconds, 2),  # noqa: T201
                          "rss_before_kb": before, "peak_rss_kb": peak_rss_kb()}))
    finally:
        delete_rows(name, prefix)


def _one(tmp: Path, label: str, size: int, log: Log) -> dict[str, Any]:
    """Write a file of `size` bytes (sparse), its object manifest, and run it in a fresh process; its figures."""
    data = tmp / f"{label}.bin"
    with data.open("wb") as handle:
        handle.truncate(size)
    manifest = tmp / f"{label}.checkm"
    manifest.write_text(write_object_manifest([FileSpec(url=f"file://{data}", name=data.name, size=size)],
                                              local_ids=label))
    name = f"bench-memory-{uuid.uuid4().hex[:8]}-{label}"
    env = bench_env(BATCH_WORK_ROOT=str(tmp / "work"), LOG_LEVEL="WARNING", EXTRA_TASK_MODULES="examples.tasks",
                    DJANGO_SETTINGS_MODULE=os.environ.get("DJANGO_SETTINGS_MODULE", "project.settings"))
    try:
        done = subprocess.run(  # noqa: S603
            [sys.executable, "-c", CHILD, f"file://{manifest}", name], env=env, cwd=str(Path(settings.BASE_DIR)),
            capture_output=True, text=True, timeout=RUN_SECONDS + 60, check=False,
        )
    finally:
        data.unlink(missing_ok=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"bench batch-memory: the {label} object's run failed: {done.stderr.strip()[-2000:]}")
    figures: dict[str, Any] = json.loads(lines[-1])
    if figures["status"] != "completed":
        raise RuntimeError(f"bench batch-memory: the {label} object ended {figures['status']}: {figures['error']}")
    figures["peak_rss_mb"] = round(figures["peak_rss_kb"] / 1024, 1)
    figures["mb_per_s"] = round(figures["bytes"] / 1_000_000 / figures["seconds"], 1) if figures["seconds"] else 0.0
    log(f"{label} object ({figures['bytes']:,} bytes): {figures['seconds']} s, peak RSS {figures['peak_rss_mb']} MB "
        f"(after start-up {figures['rss_before_kb'] / 1024:.1f} MB)")
    return figures


def run_batch_memory_bench(large_bytes: int, log: Log) -> dict[str, Any]:
    """Entry point for `manage.py bench batch-memory`: the small object, then the large one; their peaks."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-memory-"))
    had_user = get_user_model().objects.filter(username="bench").exists()
    had_settings = IngestSettings.objects.exists()
    had_slots = set(Slot.objects.values_list("number", flat=True))
    try:
        free = shutil.disk_usage(tmp).free
        if free < large_bytes * 1.2 + int(settings.BATCH_RESERVE_BYTES):
            raise RuntimeError(f"bench batch-memory: {free:,} bytes free under {tmp}, the large object needs "
                               f"{large_bytes:,} (and the reserve, BATCH_RESERVE_BYTES)")
        small = _one(tmp, "small", SMALL_BYTES, log)
        large = _one(tmp, "large", large_bytes, log)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        Slot.objects.exclude(number__in=had_slots).filter(job__isnull=True).delete()
        if not had_settings:
            IngestSettings.objects.all().delete()
        if not had_user:
            bench_user().delete()
    growth = round(large["peak_rss_mb"] - small["peak_rss_mb"], 1)
    log(f"peak RSS {small['peak_rss_mb']} MB for {small['bytes']:,} bytes, {large['peak_rss_mb']} MB for "
        f"{large['bytes']:,} bytes: {growth:+} MB for {large['bytes'] / small['bytes']:,.0f} times the size")
    return {
        "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
        "small": small,
        "large": large,
        "peak_rss_mb_small": small["peak_rss_mb"],
        "peak_rss_mb_large": large["peak_rss_mb"],
        "peak_rss_growth_mb": growth,
    }
