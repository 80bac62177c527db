"""Small, real tasks for coordinator actions: they read and write local files.

A coordinator action calls them with its resolved `configuration` and its `nominal_time`.

They run with the service's rights, so every path they touch is checked as an `fs` action's
is: it must lie under WORKFLOW_FS_ROOTS once symbolic links are resolved (kernel.storage), and
files are written without following a symbolic link that appeared since. The batch processing
tasks write only under BATCH_WORK_ROOT (or those roots). Users may run them only where the
operator allows `examples.*` in ALLOWED_TASKS (docs/coordinators.md, the walk-through).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from celery import shared_task
from django.conf import settings

from kernel import storage

log = logging.getLogger(__name__)


class PathRefused(PermissionError):
    """A path outside the roots a shipped task may touch (nothing was read or written)."""


def _local(uri: str, roots: Sequence[str] | None = None, setting: str = "WORKFLOW_FS_ROOTS") -> Path:
    """The resolved local file `uri` names, refused (PathRefused) unless it lies under the roots."""
    allowed = list(settings.WORKFLOW_FS_ROOTS) if roots is None else list(roots)
    try:
        target = storage.check_under(str(uri), allowed, setting=setting)
    except storage.StorageURLError as exc:
        raise PathRefused(str(exc)) from None
    if not target.local:
        raise PathRefused(f"{uri!r} is not a local file URI")
    return Path(target.path)


def _write(path: Path, text: str, *, append: bool = False) -> None:
    """Write text to path without following a symbolic link put there after the check (O_NOFOLLOW)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_APPEND if append else os.O_TRUNC)
    descriptor = os.open(path, flags, 0o644)
    with os.fdopen(descriptor, "a" if append else "w") as handle:
        handle.write(text)


def _work_roots() -> list[str]:
    """Where the batch processing tasks may write: the ingest working volume and the workflow roots."""
    return [str(settings.BATCH_WORK_ROOT), *settings.WORKFLOW_FS_ROOTS]


@shared_task(name="examples.noop")
def noop(configuration: dict[str, Any], nominal_time: str) -> str:
    """Do nothing (for tests and demos)."""
    return nominal_time


@shared_task(name="examples.fail")
def fail(configuration: dict[str, Any], nominal_time: str) -> None:
    """Always fail: shows how a failed action is reported (its try keeps this log line, the print and the traceback)."""
    log.info("examples.fail: checking the inputs of %s", nominal_time or "a run without a nominal time")
    print(f"examples.fail: nothing usable for {nominal_time}")  # noqa: T201 - a try keeps what its task prints
    _give_up(nominal_time)


def _give_up(nominal_time: str) -> None:
    raise RuntimeError(f"example failure for {nominal_time}")


@shared_task(name="examples.produce")
def produce(configuration: dict[str, Any], nominal_time: str) -> str:
    """Write one output instance: `output` is a directory URI; a _SUCCESS flag marks it complete."""
    out = _local(str(configuration["output"]))
    out.mkdir(parents=True, exist_ok=True)
    _write(out / "data.json", json.dumps({"nominal_time": nominal_time, "inputs": configuration.get("input", "")}))
    _write(out / "_SUCCESS", "")
    return str(out)


@shared_task(name="examples.aggregate")
def aggregate(configuration: dict[str, Any], nominal_time: str) -> str:
    """Combine the input instances (comma-separated directory URIs) into one output instance."""
    inputs = [uri for uri in str(configuration.get("input", "")).split(",") if uri]
    records = []
    for uri in inputs:
        data = _local(uri) / "data.json"
        records.append(json.loads(data.read_text()) if data.exists() else {"missing": uri})
    out = _local(str(configuration["output"]))
    out.mkdir(parents=True, exist_ok=True)
    _write(out / "summary.json", json.dumps({"nominal_time": nominal_time, "parts": records}))
    _write(out / "_SUCCESS", "")
    return str(out)


@shared_task(name="examples.record")
def record(configuration: dict[str, Any], nominal_time: str) -> str:
    """Append when it ran to the file `log` (one JSON line), after sleeping `seconds`: shows order and overlap."""
    started = time.time()
    time.sleep(float(configuration.get("seconds", 0)))
    line = json.dumps({"nominal_time": nominal_time, "started": started, "ended": time.time()})
    _write(_local(str(configuration["log"])), line + "\n", append=True)
    return nominal_time


@shared_task(name="examples.require")
def require(configuration: dict[str, Any], nominal_time: str) -> str:
    """Fail unless the file `path` exists: a task that can be fixed and rerun."""
    path = _local(str(configuration["path"]))
    if not path.exists():
        raise FileNotFoundError(f"{path} is not there (nominal time {nominal_time})")
    return str(path)


@shared_task(name="examples.ingest_noop")
def ingest_noop(**job: Any) -> None:
    """A batch profile's processing task that does nothing (benchmarks, tests)."""
    return None


@shared_task(name="examples.ingest_store")
def ingest_store(**job: Any) -> dict[str, Any]:
    """A batch profile's processing task: write the object's ERC file beside its files, as Merritt's ingest does.

    Called with the job: `primary_id`, `local_ids`, `working_dir`, `files` (name, size, path),
    `erc` (what, who, when, where) and more (see `batches.stages.task_arguments`).
    """
    directory = _local(str(job["working_dir"]), _work_roots(), "BATCH_WORK_ROOT or WORKFLOW_FS_ROOTS") / "system"
    directory.mkdir(parents=True, exist_ok=True)
    erc = job.get("erc") or {}
    lines = ["erc:", *(f"{k}: {v}" for k, v in erc.items() if v)]
    _write(directory / "mrt-erc.txt", "\n".join(lines) + "\n")
    return {"files": len(job.get("files") or []), "primary_id": job["primary_id"]}


@shared_task(name="examples.ingest_fail")
def ingest_fail(**job: Any) -> None:
    """A processing task that always fails (tests of failure and resume)."""
    raise RuntimeError(f"storage refused {job.get('primary_id')}")


@shared_task(name="examples.noop_any")
def noop_any(*args: Any, **kwargs: Any) -> None:
    """Do nothing, whatever it is given (a workflow's celery action in benchmarks and tests)."""


@shared_task(name="examples.touch")
def touch(path: str, *args: Any, **kwargs: Any) -> dict[str, str]:
    """Create the local file `path` (and its directory); what it made, as the action's data (wf:actionData)."""
    target = _local(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    _write(target, "", append=True)  # touch: create, or leave the content as it is
    os.utime(target, follow_symlinks=False)
    return {"path": str(target)}


@shared_task(name="examples.fail_unless")
def fail_unless(path: str, *args: Any, **kwargs: Any) -> dict[str, str]:
    """Fail unless the local file `path` exists (a node that can be fixed, then rerun or retried)."""
    target = _local(path)
    if not target.exists():
        raise FileNotFoundError(f"{target} is not there")
    return {"path": str(target)}


@shared_task(name="examples.listing")
def listing(inputs: str, target: str) -> dict[str, str]:
    """Write the input instances (comma-separated directory URIs), one per line, to the file URI `target`."""
    parts = [uri for uri in inputs.split(",") if uri]
    out = _local(target)
    out.parent.mkdir(parents=True, exist_ok=True)
    _write(out, "".join(f"{uri}\n" for uri in parts))
    return {"parts": str(len(parts))}
