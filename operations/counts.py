"""What an operation's jobs came to: how many in each status, the failed ones and the skipped ones."""

from __future__ import annotations

from django.db.models import Count

from operations.choices import JobStatus
from operations.models import Operation


def job_counts(operation: Operation) -> dict[str, int]:
    """How many of the operation's jobs are in each status."""
    rows = operation.jobs.values("status").annotate(n=Count("pk")).values_list("status", "n")
    return {str(status): int(n) for status, n in rows}


def failed_jobs(operation: Operation, limit: int = 1000) -> list[dict[str, str]]:
    """The failed jobs and why (at most `limit`)."""
    rows = operation.jobs.filter(status=JobStatus.FAILED).order_by("partition").values_list("partition", "error")
    return [{"partition": partition, "error": error} for partition, error in rows[:limit]]


def skipped_jobs(operation: Operation, limit: int = 1000) -> list[dict[str, str]]:
    """The jobs that succeeded without acting (a verb the job's status made a no-op) and why (at most `limit`)."""
    rows = (operation.jobs.filter(status=JobStatus.SUCCEEDED, progress__has_key="skipped")
            .order_by("partition").values_list("partition", "progress"))
    return [{"partition": partition, "reason": str(progress.get("skipped", ""))} for partition, progress in rows[:limit]]
