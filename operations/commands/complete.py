"""The completion of an operation whose jobs all ended: its type's completion logic, recorded once."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from kernel.history import record_status
from operations.choices import JOB_UNFINISHED, JobStatus, OperationStatus
from operations.counts import failed_jobs, job_counts, skipped_jobs
from operations.models import OPERATION_KIND, Operation, completion_key
from operations.registry import operation_type
from xcommands.base import XCommand
from xcommands.errors import PreconditionFailed

log = logging.getLogger(__name__)


@dataclass
class OperationCompleteXCommand(XCommand):
    """Complete an operation whose jobs all ended: run its completion logic, then record it once.

    Runs on the target's key. The completion logic may run more than once (a crash before the
    commit, or two completions queued): the record is a conditional write on RUNNING, so the
    operation is marked once and every reader sees one result.
    """

    operation_id: int
    target: str

    def job_key(self) -> str:
        """The target's reserved key."""
        return completion_key(self.target)

    def load_state(self) -> None:
        """The operation, locked."""
        self.operation = Operation.objects.select_for_update().get(pk=self.operation_id)

    def verify_precondition(self) -> None:
        """Only a running operation whose jobs all have an outcome completes."""
        if self.operation.status != OperationStatus.RUNNING:
            raise PreconditionFailed(f"operation {self.operation_id} is already {self.operation.status}")
        if self.operation.jobs.filter(status__in=sorted(JOB_UNFINISHED)).exists():
            raise PreconditionFailed(f"operation {self.operation_id} still has unfinished jobs")

    def execute(self) -> dict[str, Any]:
        """Succeeded when every job did; the type's completion result plus the counts and the failures."""
        operation = self.operation
        kind = operation_type(operation.type)
        counts = job_counts(operation)
        success = counts.get(JobStatus.FAILED, 0) == 0
        if not success and not kind.may_fail:
            log.error("operation %s (%s) cannot fail, yet %s job(s) failed", operation.pk, operation.type,
                      counts[JobStatus.FAILED])
        result = kind.complete_operation(operation.arg, operation.target, success)
        summary = {"counts": counts, "failed": failed_jobs(operation), "skipped": skipped_jobs(operation), "result": result}
        status = OperationStatus.SUCCEEDED if success else OperationStatus.FAILED
        marked = Operation.objects.filter(pk=operation.pk, status=OperationStatus.RUNNING).update(
            status=status, result=summary, finished_at=timezone.now(),
        )
        if marked:
            failed = counts.get(JobStatus.FAILED, 0)
            record_status(OPERATION_KIND, operation.pk, OperationStatus.RUNNING, status,
                          reason=f"{failed} job(s) failed" if failed else "every job succeeded")
        return {"marked": marked, "success": success}
