"""The ingest settings operators change at run time (one row, created from the BATCH_* settings on first read)."""

from __future__ import annotations

from django.conf import settings

from batches.models import IngestSettings


def ingest_settings() -> IngestSettings:
    """The row (created with the BATCH_* defaults the first time)."""
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
