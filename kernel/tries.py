"""Every try's story, kept: how it ended, what it logged and printed, its error's traceback (one row per try).

`store` writes one `TaskTry` row, in the caller's transaction (the one that records the try's
outcome), from the try's `kernel.capture.Capture`. As a job's configuration, it is kept as it
was (secrets in clear) and masked for display: each page, API answer and log shows it through
the reader's masker (kernel.secrets: the owner and job admins see values). A try's story is
durable as soon as its outcome is, readable from any host, and never rewritten, so a rerun,
a retry or a relaunch adds a try and the earlier ones stay. Rows older than
TRY_LOG_RETENTION_DAYS are purged (`purge`, hourly).

Cost on the action path: one test of a thread-local per log record, and one INSERT per try
in a transaction that commits anyway (docs/benchmarks.md quotes `bench actions`).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from kernel.capture import Capture
from kernel.models import TaskTry


def store(kind: str, object_id: str, capture: Capture | None, *, status: str, ended_at: datetime,
          started_at: datetime | None = None, job_id: str = "", action_id: str = "", name: str = "",
          run: int = 0, attempt: int = 1, worker: str = "", error_code: str = "", error_message: str = "",
          ) -> TaskTry:
    """Write the try (caller's transaction): how it ended, its traceback and log (as they were; masked when shown)."""
    row = build(kind, object_id, capture, status=status, ended_at=ended_at, started_at=started_at, job_id=job_id,
                action_id=action_id, name=name, run=run, attempt=attempt, worker=worker, error_code=error_code,
                error_message=error_message)
    row.save(force_insert=True)
    return row


def build(kind: str, object_id: str, capture: Capture | None, *, status: str, ended_at: datetime,
          started_at: datetime | None = None, job_id: str = "", action_id: str = "", name: str = "",
          run: int = 0, attempt: int = 1, worker: str = "", error_code: str = "", error_message: str = "",
          ) -> TaskTry:
    """The try as `store` writes it, not saved: several are written with one `TaskTry.objects.bulk_create`."""
    log_text = capture.text() if capture is not None else ""
    trace = capture.traceback if capture is not None else ""
    return TaskTry(
        kind=kind, object_id=object_id[:200], job_id=job_id[:200], action_id=action_id[:60],
        root_id=(action_id.partition("@")[0] if action_id else job_id)[:200], name=name[:200],
        run=run, attempt=attempt, worker=worker[:200], status=status[:20], started_at=started_at,
        ended_at=ended_at, error_code=error_code[:64], error_message=error_message,
        traceback=trace, log=log_text,
        log_dropped=capture.dropped if capture is not None else 0,
    )


def purge(now: datetime, *, batch: int = 5000) -> int:
    """Delete tries older than TRY_LOG_RETENTION_DAYS, in bounded batches; how many went."""
    cutoff = now - timedelta(days=int(settings.TRY_LOG_RETENTION_DAYS))
    deleted = 0
    while True:
        ids = list(TaskTry.objects.filter(ended_at__lt=cutoff).order_by("ended_at").values_list("pk", flat=True)[:batch])
        if not ids:
            return deleted
        deleted += TaskTry.objects.filter(pk__in=ids).delete()[0]
