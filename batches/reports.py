"""Batch reports (the seed's status-report): what completed and what failed, as JSON, text and CSV.

The first report lists every job that completed and every job that failed (identifiers and
errors). An update report (after update-reporting) lists what completed since the previous
report and what is still unresolved (failed, or still running after a resume). Deleted jobs
are listed apart: their depositor learns they were removed.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from django.utils import timezone

from batches.choices import JobStatus as J
from batches.models import Batch, BatchJob, BatchReport


def _row(job: BatchJob) -> dict[str, Any]:
    return {
        "job": job.pk, "number": job.number, "status": job.status, "primary_id": job.primary_id,
        "local_ids": list(job.local_ids), "payload_url": job.payload_url, "error": job.error,
        "retry_count": job.retry_count, "last_successful_status": job.last_successful_status,
    }


def build(batch: Batch, kind: str) -> dict[str, Any]:
    """The report's body: counts and the jobs by outcome (update: relative to the previous report)."""
    jobs = list(BatchJob.objects.filter(batch=batch).order_by("number").only(
        "pk", "number", "status", "primary_id", "local_ids", "payload_url", "error", "retry_count",
        "last_successful_status",
    ))
    previous = batch.reports.order_by("-number").first()
    reported_done = set(previous.body.get("completed_jobs", [])) if previous is not None else set()
    completed = [job for job in jobs if job.status == J.COMPLETED]
    failed = [job for job in jobs if job.status == J.FAILED]
    deleted = [job for job in jobs if job.status == J.DELETED]
    unresolved = [job for job in jobs if job.status not in (J.COMPLETED, J.DELETED)]
    newly = [job for job in completed if job.pk not in reported_done]
    body: dict[str, Any] = {
        "batch": batch.pk, "kind": kind, "profile": batch.profile.name, "collection": batch.collection.name,
        "submitter": batch.submitter, "payload_url": batch.payload_url, "created": timezone.now().isoformat(),
        "counts": {"jobs": len(jobs), "completed": len(completed), "failed": len(failed), "deleted": len(deleted),
                   "unresolved": len(unresolved)},
        "completed_jobs": [job.pk for job in completed],
        "failed_jobs": [job.pk for job in failed],
        "completed": [_row(job) for job in (completed if kind == BatchReport.Kind.INITIAL else newly)],
        "failed": [_row(job) for job in failed],
        "deleted": [_row(job) for job in deleted],
    }
    if kind == BatchReport.Kind.UPDATE:
        body["completed_since_last_report"] = len(newly)
        body["unresolved"] = [_row(job) for job in unresolved]
    return body


def as_text(body: dict[str, Any]) -> str:
    """A readable report for e-mail."""
    counts = body["counts"]
    lines = [
        f"Batch {body['batch']} ({body['profile']}, collection {body['collection']}) submitted by {body['submitter']}",
        f"Payload: {body['payload_url']}",
        f"{'Update report' if body['kind'] == 'update' else 'Report'}: {counts['completed']} of {counts['jobs']} "
        f"object(s) completed, {counts['failed']} failed" + (f", {counts['deleted']} deleted" if counts["deleted"] else ""),
        "",
    ]
    title = "Completed since the last report" if body["kind"] == "update" else "Completed"
    for heading, rows in ((title, body["completed"]), ("Failed", body["failed"]), ("Deleted", body["deleted"])):
        if not rows:
            continue
        lines.append(f"{heading} ({len(rows)}):")
        for row in rows:
            ids = ", ".join(filter(None, [row["primary_id"], *row["local_ids"]])) or row["payload_url"]
            lines.append(f"  job {row['job']}: {ids}" + (f": {row['error']}" if row["error"] and row["status"] != J.COMPLETED else ""))
        lines.append("")
    return "\n".join(lines)


def as_csv(body: dict[str, Any]) -> str:
    """One line per job listed: outcome, job, identifiers, error."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["outcome", "job", "number", "primary_id", "local_ids", "payload_url", "error"])
    for outcome in ("completed", "failed", "deleted"):
        for row in body[outcome]:
            writer.writerow([outcome, row["job"], row["number"], row["primary_id"], ";".join(row["local_ids"]),
                             row["payload_url"], row["error"]])
    return out.getvalue()


def store(batch: Batch, kind: str) -> BatchReport:
    """Build, store and return the batch's next report (its targets' deliveries queued by the caller)."""
    body = build(batch, kind)
    number = (batch.reports.order_by("-number").values_list("number", flat=True).first() or 0) + 1
    return BatchReport.objects.create(batch=batch, number=number, kind=kind, body=body, text=as_text(body), csv=as_csv(body))


def targets(batch: Batch) -> list[str]:
    """Where the batch's reports go: `mailto:` addresses and the webhook."""
    profile = batch.profile
    found = [f"mailto:{address}" for address in profile.email_targets()]
    if profile.webhook_url:
        found.append(profile.webhook_url)
    return found
