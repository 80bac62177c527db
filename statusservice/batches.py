"""Batch services (celery beat): fill free slots by priority, and housekeeping.

- `dispatch` (every BATCH_DISPATCH_SECONDS): slots left free by a race, and provisioning jobs
  whose wait is over, get the best runnable jobs.
- `housekeeping` (every STATUS_SERVICE_SECONDS): frees slots whose job no longer runs a stage
  (none should), removes working directories completed jobs left behind, and deletes
  completed (and deleted) batches older than BATCH_RETENTION_DAYS, rows and directories.
"""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction

from batches.choices import QUEUES, BatchStatus
from batches.choices import JobStatus as J
from batches.commands.stage import fill_slots
from batches.dispatch import ensure_slots
from batches.models import Batch, BatchJob, Slot
from batches.stages import clean_working_dir


def dispatch(now: datetime) -> int:
    """Fill free slots; how many jobs were taken."""
    ensure_slots()
    return fill_slots()


def housekeeping(now: datetime) -> dict[str, int]:
    """Leaked slots, leftover directories, expired batches."""
    freed = 0
    with transaction.atomic():
        for slot in Slot.objects.select_for_update(skip_locked=True).filter(job__isnull=False).select_related("job"):
            job = slot.job
            if job is None or not job.dispatched or job.status not in QUEUES:
                slot.job, slot.since = None, None
                slot.save(update_fields=["job", "since"])
                freed += 1
        orphans = BatchJob.objects.filter(dispatched=True, slot_row__isnull=True)
        freed += orphans.update(dispatched=False)
    cleaned = 0
    for job in BatchJob.objects.filter(status=J.COMPLETED, cleaned_at__isnull=True).only("pk", "working_dir")[:500]:
        clean_working_dir(job)
        BatchJob.objects.filter(pk=job.pk).update(cleaned_at=now)
        cleaned += 1
    cutoff = now - timedelta(days=int(settings.BATCH_RETENTION_DAYS))
    expired = list(Batch.objects.filter(
        status__in=[BatchStatus.COMPLETED, BatchStatus.DELETED], finished_at__lt=cutoff,
    ).values_list("pk", flat=True)[:100])
    for batch_id in expired:
        shutil.rmtree(Path(settings.BATCH_WORK_ROOT) / str(batch_id), ignore_errors=True)
        Batch.objects.filter(pk=batch_id).delete()
    return {"freed_slots": freed, "cleaned_dirs": cleaned, "expired_batches": len(expired)}
