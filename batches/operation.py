"""A batch is an operation on its collection (operations.registry): its jobs are the operation's jobs.

The jobs are detached: their stages (batches.commands.job) drive them and write each job's
outcome once it completes or fails (`operations.services.end_job`). When the last one has,
the operation completes exactly once, and its completion moves the batch to reporting
(a compare-and-set: a completion that runs twice moves it once). Batches of one collection
run side by side.
"""

from __future__ import annotations

from typing import Any

from batches.commands import reporting
from batches.models import BatchJob
from batches.stages import clean_working_dir
from operations.registry import OperationType


class BatchOperation(OperationType):
    """The jobs of one batch; completion: processing -> reporting."""

    name = "batch"
    detached = True
    may_fail = True
    compatible_with = frozenset({"batch"})

    def complete_operation(self, arg: Any, target: str, success: bool) -> Any:
        """Every job completed or failed: the batch reports (once)."""
        return {"batch": arg.get("batch_id"), "reporting": reporting(int(arg["batch_id"]))}

    def cancel_job_and_cleanup(self, arg: Any, partition: str) -> None:
        """A cancelled job (its batch deleted): its working directory goes."""
        job = BatchJob.objects.filter(pk=int(partition)).first()
        if job is not None:
            clean_working_dir(job)
