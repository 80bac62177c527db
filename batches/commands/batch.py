"""Batch commands, each keyed by the batch (`batch:<id>`), the batch row locked: every batch transition of the seed.

- `BatchStartXCommand`: pending -> held (collection on hold) or -> processing (one job per
  object, and the batch's operation on its collection, all in one transaction).
- `BatchReleaseXCommand`: held -> pending (admin; the collection must no longer be held), then start.
- `BatchReportXCommand`: reporting -> completed | failed, and update-reporting -> completed | failed:
  the report is stored once (compare-and-set on the status) and its deliveries queued.
- `BatchUpdateReportXCommand`: failed -> update-reporting (admin), then the update report.
- `BatchDeleteXCommand`: failed | held -> deleted (admin): jobs deleted, working directories removed.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from batches import reports
from batches.choices import BATCH_OUTCOMES, BATCH_TRANSITIONS, IN_FLIGHT
from batches.choices import BatchStatus as B
from batches.choices import JobStatus as J
from batches.commands.delivery import ReportDeliveryXCommand
from batches.commands.job import NeedsConfirmation
from batches.commands.stage import fill_after_commit, release
from batches.expand import job_specs, object_key
from batches.lifecycle import appended, history_entry
from batches.models import (
    BATCH_JOB_KIND,
    BATCH_KIND,
    Batch,
    BatchJob,
    BatchReport,
    ReportDelivery,
    batch_key,
)
from batches.notifications import queue_summary
from batches.signals import batch_finished
from batches.stages import clean_working_dir
from kernel.history import record_status, record_statuses
from kernel.statemachine import IllegalTransition, check_transition
from operations.choices import OperationStatus
from operations.models import Operation
from operations.services import cancel_operation, start_operation
from xcommands.base import XCommand
from xcommands.errors import PreconditionFailed
from xcommands.queue import enqueue, enqueue_many

log = logging.getLogger(__name__)

OPERATION_TYPE = "batch"


class BatchCommand(XCommand):
    """A command on one batch: ordered per batch, its row locked."""

    abstract = True
    batch_id: int

    def job_key(self) -> str:
        """`batch:<id>`."""
        return batch_key(self.batch_id)

    def load_state(self) -> None:
        """The batch, locked."""
        self.batch = Batch.objects.select_for_update(of=("self",)).select_related("profile", "collection").get(
            pk=self.batch_id
        )

    def expect(self, *statuses: str) -> None:
        """PreconditionFailed unless the batch is in one of these."""
        if self.batch.status not in statuses:
            raise PreconditionFailed(f"batch {self.batch_id} is {self.batch.status}, not {' or '.join(statuses)}")

    def set_status(self, status: str, **fields: Any) -> None:
        """Move the batch along the seed's table."""
        check_transition(BATCH_TRANSITIONS, self.batch.status, status, f"batch {self.batch_id}")
        previous, self.batch.status = self.batch.status, status
        for name, value in fields.items():
            setattr(self.batch, name, value)
        self.batch.save(update_fields=["status", "last_modified", *fields])
        if status in BATCH_OUTCOMES:
            # In this transaction: whoever opened the batch (a coordinator action) hears of it durably.
            batch_finished.send(sender=Batch, batch=self.batch, previous=previous)


@dataclass
class BatchStartXCommand(BatchCommand):
    """Pending: held if its collection is; else its jobs, its operation, processing (one transaction)."""

    batch_id: int

    def verify_precondition(self) -> None:
        """Only a pending batch starts."""
        self.expect(B.PENDING)

    def execute(self) -> dict[str, Any]:
        """Expand into jobs (one per object) and start the batch's operation on its collection."""
        batch = self.batch
        if batch.collection.held:
            self.set_status(B.HELD, error=f"collection {batch.collection.name} is held")
            return {"batch": batch.pk, "status": B.HELD}
        specs = job_specs(batch)
        priority = batch.priority if batch.priority is not None else batch.profile.priority
        root = str(settings.BATCH_WORK_ROOT)
        jobs = [
            BatchJob(
                batch=batch, number=n, priority=priority, payload_url=spec.payload_url[:2000],
                payload_type=spec.payload_type, payload_digest=spec.payload_digest, files=spec.files, local_ids=spec.local_ids,
                supplied_primary_id=spec.primary_id, title=spec.title[:500], creator=spec.creator[:500],
                date=spec.date[:100], object_key=object_key(batch.collection.name, spec), working_dir="",
            )
            for n, spec in enumerate(specs, start=1)
        ]
        now = timezone.now()
        for job in jobs:
            job.queued_at = now
        created = BatchJob.objects.bulk_create(jobs, batch_size=2000)
        if not all(job.pk for job in created):  # SQLite before 3.35 returns no ids
            created = list(BatchJob.objects.filter(batch=batch).order_by("number"))
        _finish_new_jobs(created, root)
        operation = start_operation(
            OPERATION_TYPE, f"collection:{batch.collection.name}", {"batch_id": batch.pk},
            [str(job.pk) for job in created], started_by=batch.owner,
        )
        self.set_status(B.PROCESSING, operation=operation, error="")
        if batch.profile.summary_on_queue:
            queue_summary(batch, len(created))
        fill_after_commit()
        return {"batch": batch.pk, "jobs": len(created), "operation": operation.pk}


def _finish_new_jobs(jobs: list[BatchJob], root: str) -> None:
    """Working directories, keys of objects without identifiers, and waits behind older jobs of the same object."""
    keyed: dict[str, int] = {}
    updates: list[BatchJob] = []
    keys = {job.object_key for job in jobs if job.object_key}
    older: dict[str, int] = {}
    if keys:
        for key, pk in (
            BatchJob.objects.filter(object_key__in=keys, status__in=sorted(IN_FLIGHT))
            .exclude(pk__in=[job.pk for job in jobs]).order_by("pk").values_list("object_key", "pk")
        ):
            older[key] = pk  # the newest older job in flight of each object
    for job in jobs:
        job.working_dir = os.path.join(root, str(job.batch_id), str(job.pk))
        if not job.object_key:
            job.object_key = f"batch-job:{job.pk}"
        before = keyed.get(job.object_key) or older.get(job.object_key)
        job.blocked_by_id = before
        keyed[job.object_key] = job.pk
        updates.append(job)
    BatchJob.objects.bulk_update(updates, ["working_dir", "object_key", "blocked_by"], batch_size=2000)


@dataclass
class BatchReleaseXCommand(BatchCommand):
    """Held -> pending (admin), once its collection is no longer held; then it starts."""

    batch_id: int
    actor: str = ""

    def verify_precondition(self) -> None:
        """Only a held batch of a collection no longer held."""
        self.expect(B.HELD)
        if self.batch.collection.held:
            raise PreconditionFailed(f"collection {self.batch.collection.name} is still held")

    def execute(self) -> dict[str, Any]:
        """Pending again, and its start queued behind this command."""
        self.set_status(B.PENDING, error="")
        enqueue(BatchStartXCommand(batch_id=self.batch_id))
        return {"batch": self.batch_id, "status": B.PENDING}


@dataclass
class BatchReportXCommand(BatchCommand):
    """Reporting or update-reporting: store the report once, queue its deliveries, completed or failed."""

    batch_id: int

    def verify_precondition(self) -> None:
        """Only while reporting (a second queued report finds the batch moved on: skipped)."""
        self.expect(B.REPORTING, B.UPDATE_REPORTING)

    def execute(self) -> dict[str, Any]:
        """Completed when every job completed (or was deleted); failed otherwise."""
        batch = self.batch
        kind = BatchReport.Kind.INITIAL if batch.status == B.REPORTING else BatchReport.Kind.UPDATE
        report = reports.store(batch, kind)
        deliveries = [ReportDelivery(report=report, target=target) for target in reports.targets(batch)]
        ReportDelivery.objects.bulk_create(deliveries)

        rows = list(ReportDelivery.objects.filter(report=report).values_list("pk", flat=True))
        enqueue_many([ReportDeliveryXCommand(delivery_id=pk) for pk in rows])
        unresolved = report.body["counts"]["unresolved"]
        status = B.FAILED if unresolved else B.COMPLETED
        self.set_status(status, finished_at=timezone.now())
        return {"batch": batch.pk, "report": report.number, "status": status}


@dataclass
class BatchUpdateReportXCommand(BatchCommand):
    """Failed -> update-reporting (admin: troubleshooting its failed jobs is over), then the update report."""

    batch_id: int
    actor: str = ""

    def verify_precondition(self) -> None:
        """Only a failed batch."""
        self.expect(B.FAILED)

    def execute(self) -> dict[str, Any]:
        """Update-reporting, and the report queued behind this command."""
        self.set_status(B.UPDATE_REPORTING)
        enqueue(BatchReportXCommand(batch_id=self.batch_id))
        return {"batch": self.batch_id, "status": B.UPDATE_REPORTING}


@dataclass
class BatchDeleteXCommand(BatchCommand):
    """Failed or held -> deleted (admin): every job deleted, working directories removed, its operation cancelled."""

    batch_id: int
    actor: str = ""
    confirmed: bool = False

    def verify_precondition(self) -> None:
        """Only failed or held batches, confirmed (their depositor is not told)."""
        self.expect(B.FAILED, B.HELD)
        if not self.confirmed:
            raise PreconditionFailed(f"deleting batch {self.batch_id} was not confirmed")

    def execute(self) -> dict[str, Any]:
        """Jobs (running ones too: their slots are freed) deleted; the batch kept as a deleted record."""
        batch = self.batch
        jobs = list(BatchJob.objects.select_for_update().filter(batch=batch).exclude(status=J.DELETED))
        who = f" by {self.actor}" if self.actor else ""
        now = timezone.now()
        record_statuses((BATCH_JOB_KIND, job.pk, batch.pk, job.status, J.DELETED, now, f"batch deleted{who}") for job in jobs)
        for job in jobs:
            if job.dispatched:
                release(job.pk, hand_over=False)
            job.history = appended(job.history, history_entry(job.status, J.DELETED, f"batch deleted{who}"))
            job.status, job.cleaned_at, job.dispatched = J.DELETED, now, False
        BatchJob.objects.bulk_update(jobs, ["status", "history", "cleaned_at", "dispatched"], batch_size=2000)
        BatchJob.objects.filter(blocked_by__batch=batch).update(blocked_by=None)
        if batch.operation_id is not None and Operation.objects.filter(
            pk=batch.operation_id, status=OperationStatus.RUNNING
        ).exists():
            cancel_operation(batch.operation_id)
        self.set_status(B.DELETED, finished_at=now)
        def clean() -> None:
            for job in jobs:
                clean_working_dir(job)

        transaction.on_commit(clean)

        fill_after_commit()
        return {"batch": batch.pk, "deleted_jobs": len(jobs)}


def reporting(batch_id: int) -> bool:
    """Processing -> reporting once every job ended (the operation's completion), and the report queued; once.

    Called by the operation's completion, which may run twice: the compare-and-set on
    `processing` makes the second call a no-op.
    """
    moved = Batch.objects.filter(pk=batch_id, status=B.PROCESSING).update(status=B.REPORTING, last_modified=timezone.now())
    if moved:
        record_status(BATCH_KIND, batch_id, B.PROCESSING, B.REPORTING, reason="every job ended")
        enqueue(BatchReportXCommand(batch_id=batch_id))
    return bool(moved)


def check_batch_verb(batch: Batch, verb: str, *, confirmed: bool = False) -> None:
    """IllegalTransition unless the batch's status allows the admin verb (checked again under its key)."""
    allowed: dict[str, tuple[str, ...]] = {
        "release": (B.HELD,), "update-report": (B.FAILED,), "delete": (B.FAILED, B.HELD),
    }
    if verb not in allowed:
        raise ValueError(f"unknown batch verb {verb!r}: use {', '.join(allowed)}")
    if batch.status not in allowed[verb]:
        raise IllegalTransition(f"batch {batch.pk} is {batch.status}; {verb} needs {' or '.join(allowed[verb])}")
    if verb == "release" and batch.collection.held:
        raise IllegalTransition(f"collection {batch.collection.name} is still held: release the collection first")
    if verb == "delete" and not confirmed:
        raise NeedsConfirmation(
            f"batch {batch.pk} is {batch.status}: deleting it deletes its jobs and its depositor is never told; "
            "confirm to delete"
        )


BATCH_COMMANDS: dict[str, type[BatchCommand]] = {
    "release": BatchReleaseXCommand, "update-report": BatchUpdateReportXCommand, "delete": BatchDeleteXCommand,
}
