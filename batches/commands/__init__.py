"""Batch commands: batch transitions keyed by the batch, job stages and admin verbs keyed by the object, report deliveries."""

from __future__ import annotations

from batches.commands.batch import (
    BATCH_COMMANDS,
    BatchDeleteXCommand,
    BatchReleaseXCommand,
    BatchReportXCommand,
    BatchStartXCommand,
    BatchUpdateReportXCommand,
    check_batch_verb,
    reporting,
)
from batches.commands.delivery import ReportDeliveryXCommand
from batches.commands.job import (
    JOB_VERBS,
    BatchJobAdminXCommand,
    NeedsConfirmation,
    check_job_verb,
)
from batches.commands.stage import BatchJobStageXCommand

__all__ = [
    "BATCH_COMMANDS",
    "JOB_VERBS",
    "BatchDeleteXCommand",
    "BatchJobAdminXCommand",
    "BatchJobStageXCommand",
    "BatchReleaseXCommand",
    "BatchReportXCommand",
    "BatchStartXCommand",
    "BatchUpdateReportXCommand",
    "NeedsConfirmation",
    "ReportDeliveryXCommand",
    "check_batch_verb",
    "check_job_verb",
    "reporting",
]
