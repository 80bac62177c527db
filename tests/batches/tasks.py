"""Processing tasks for the batch tests (workers import them through EXTRA_TASK_MODULES)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from celery import shared_task
from django.conf import settings


def switch(name: str) -> Path:
    """A marker file under BATCH_WORK_ROOT that tests create and remove to steer the tasks (shared with workers)."""
    return Path(settings.BATCH_WORK_ROOT) / f"switch-{name}"


@shared_task(name="tests.batches.flaky")
def flaky(**job: Any) -> dict[str, Any]:
    """Fails while `switch-fail-processing` exists; records each call (for 'never ran twice' checks)."""
    calls = Path(settings.BATCH_WORK_ROOT) / "processing-calls.log"
    with calls.open("a") as log:
        log.write(f"{job['job_id']} {job['primary_id']}\n")
    if switch("fail-processing").exists():
        raise RuntimeError(f"storage unavailable for {job['primary_id']}")
    return {"files": len(job["files"])}


@shared_task(name="tests.batches.slow")
def slow(**job: Any) -> None:
    """Sleeps (a processing task a test can kill a worker in)."""
    time.sleep(float((Path(settings.BATCH_WORK_ROOT) / "slow-seconds").read_text() or "1")
               if (Path(settings.BATCH_WORK_ROOT) / "slow-seconds").exists() else 1.0)


# ---- a slow local filesystem (slowfile://): downloads a test can kill a worker in ---------------

import fsspec  # noqa: E402
from fsspec.implementations.local import LocalFileSystem  # noqa: E402


class _SlowReader:
    """Reads in small pieces, sleeping before each (BATCH_WORK_ROOT/slow-read-seconds, default 0.05 s)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        delay = Path(settings.BATCH_WORK_ROOT) / "slow-read-seconds"
        self.delay = float(delay.read_text()) if delay.exists() else 0.05

    def read(self, size: int = -1) -> bytes:
        time.sleep(self.delay)
        return bytes(self.handle.read(min(size, 4096) if size and size > 0 else 4096))

    def close(self) -> None:
        self.handle.close()

    def __enter__(self) -> _SlowReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SlowFileSystem(LocalFileSystem):
    """Local files under `slowfile://`, read slowly; every open for reading is logged (to count downloads)."""

    protocol = ("slowfile",)

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        if isinstance(path, str) and path.startswith("slowfile://"):
            path = path[len("slowfile://"):]
        return super()._strip_protocol(path)

    def _open(self, path: Any, mode: str = "rb", block_size: Any = None, **kwargs: Any) -> Any:
        handle = super()._open(path, mode, block_size=block_size, **kwargs)
        if "r" not in mode:
            return handle
        Path(settings.BATCH_WORK_ROOT).mkdir(parents=True, exist_ok=True)
        with (Path(settings.BATCH_WORK_ROOT) / "slow-opens.log").open("a") as log:
            log.write(f"{path}\n")
        return _SlowReader(handle)


fsspec.register_implementation("slowfile", SlowFileSystem, clobber=True)
