"""Operations and their jobs as stored (seed 003's MetaStorage keys become rows).

- `OperationTarget`: one row per target; starting an operation locks it, so the check
  "no incompatible operation runs on this target" and the insert are one atomic step.
- `Operation`: type, target, argument, status, who started it, when, the completion's result.
- `OperationJob`: one per partition: its outcome is written once (a conditional update),
  its progress as the job goes, its attempts and last error.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from kernel.history import RecordsStatus
from operations.choices import JobStatus, OperationStatus

#: Their kinds in the status history (kernel.history); a job's record names its operation as parent.
OPERATION_KIND, OPERATION_JOB_KIND = "operation", "operation-job"


class OperationTarget(models.Model):
    """A target operations run on (a table in the seed; here e.g. `coordinators:ann`): its row lock orders starts."""

    name = models.CharField(max_length=255, unique=True)

    def __str__(self) -> str:
        return self.name


class Operation(RecordsStatus):
    """One operation: what it does (type and argument), on what (target), how it ended (status, result).

    Invariant: RUNNING until its completion is recorded, once, by a conditional write. Every
    status change is recorded (kernel.history), its jobs' too.
    """

    status_kind = OPERATION_KIND

    type = models.CharField(max_length=100)
    target = models.CharField(max_length=255)
    arg = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=12, choices=OperationStatus.choices, default=OperationStatus.RUNNING)
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="operations"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True, help_text="what the completion returned, with the job counts")
    remaining = models.IntegerField(default=0, help_text="jobs without an outcome yet; the one that makes it 0 completes")

    class Meta:
        indexes = [
            models.Index(fields=["target"], condition=Q(status=OperationStatus.RUNNING), name="operation_running_idx"),
            models.Index(fields=["created_at", "id"], name="operation_created_idx"),
        ]

    def __str__(self) -> str:
        return f"operation {self.pk} {self.type} on {self.target} [{self.status}]"

    @property
    def completion_key(self) -> str:
        """The key completions of operations on this target run under."""
        return completion_key(self.target)


def completion_key(target: str) -> str:
    """`operation:<target>`: the reserved command key of a target's completions."""
    return f"operation:{target}"


class OperationJob(models.Model):
    """One partition's job of an operation: its outcome (once), progress, attempts, error."""

    operation = models.ForeignKey(Operation, on_delete=models.CASCADE, related_name="jobs")
    partition = models.CharField(max_length=255, help_text="the partition the job works on (unique in its operation)")
    key = models.CharField(max_length=255, help_text="the command key its attempts run under (the partition by default)")
    status = models.CharField(max_length=12, choices=JobStatus.choices, default=JobStatus.ABSENT)
    progress = models.JSONField(default=dict, blank=True)
    attempts = models.IntegerField(default=0)
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["operation", "partition"], name="operation_job_partition_uniq")]
        indexes = [models.Index(fields=["operation", "status"], name="operation_job_status_idx")]

    def __str__(self) -> str:
        return f"job {self.partition} of operation {self.operation_id} [{self.status}]"
