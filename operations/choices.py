"""Operation and operation-job statuses (seed 003: running/success/failed, and <absent>/success/failed per job)."""

from __future__ import annotations

from django.db import models


class OperationStatus(models.TextChoices):
    """Where an operation is: running until its completion is recorded."""

    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


class JobStatus(models.TextChoices):
    """Where one partition's job is: ABSENT (no attempt yet), RUNNING, or its outcome (written once)."""

    ABSENT = "ABSENT"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


OPERATION_FINISHED = frozenset({OperationStatus.SUCCEEDED, OperationStatus.FAILED, OperationStatus.CANCELLED})
JOB_UNFINISHED = frozenset({JobStatus.ABSENT, JobStatus.RUNNING})
JOB_OUTCOMES = frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED})
