"""The ingest settings operators change at run time (one row, created from the BATCH_* settings on first read)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.conf import settings

from batches.models import IngestSettings

#: Inside `settings_read_once()`: the row read first, kept for the block.
_kept: ContextVar[list[IngestSettings] | None] = ContextVar("batches_ingest_settings", default=None)


@contextmanager
def settings_read_once(read: IngestSettings | None = None) -> Iterator[None]:
    """Within the block `ingest_settings()` reads the row once (a stage command's run: one read, not one per stage).

    `read`: the row as the caller read it just now (with its own statement), used as the first read.
    """
    token = _kept.set([] if read is None else [read])
    try:
        yield
    finally:
        _kept.reset(token)


def ingest_settings() -> IngestSettings:
    """The row (created with the BATCH_* defaults the first time)."""
    kept = _kept.get()
    if kept:
        return kept[0]
    row = _read()
    if kept is not None:
        kept.append(row)
    return row


def _read() -> IngestSettings:
    """The row as stored now, created from the BATCH_* defaults if missing."""
    row = IngestSettings.objects.order_by("pk").first()
    if row is not None:
        return row
    row, _ = IngestSettings.objects.get_or_create(
        pk=1,
        defaults={
            "reserve_bytes": settings.BATCH_RESERVE_BYTES,
            "provision_sleep_seconds": settings.BATCH_PROVISION_SLEEP_SECONDS,
            "large_job_bytes": settings.BATCH_LARGE_JOB_BYTES,
            "large_job_priority": settings.BATCH_LARGE_JOB_PRIORITY,
        },
    )
    return row


def slots() -> int:
    """BATCH_SLOTS: how many stages may run at once."""
    return max(1, int(settings.BATCH_SLOTS))
