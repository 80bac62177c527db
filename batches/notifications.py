"""Sending batch reports and queue summaries: e-mail (Django's mail backend) and webhooks (a JSON POST).

Each message carries a stable identity (`Message-ID <batch-17-report-2@...>`, webhook header
`Idempotency-Key: batch-17-report-2`): the engine never sends one delivery from two workers
at once and stops once it is recorded SENT, and a receiver can drop the one duplicate a crash
between sending and recording can cause.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import transaction

from batches.models import Batch, BatchReport


def _sender() -> str:
    return str(settings.BATCH_EMAIL_FROM or settings.DEFAULT_FROM_EMAIL)


def send_email(address: str, subject: str, body: str, identity: str, attachments: list[tuple[str, str, str]]) -> None:
    """One e-mail (raises on failure)."""
    message = EmailMessage(subject, body, _sender(), [address], headers={"Message-ID": f"<{identity}@scheduler>"})
    for name, content, mimetype in attachments:
        message.attach(name, content, mimetype)
    message.send(fail_silently=False)


def post_json(url: str, payload: dict[str, Any], identity: str) -> None:
    """One webhook POST (raises on a failure or a non-2xx answer)."""
    request = urllib.request.Request(  # noqa: S310 - an admin-configured http(s) URL
        url, data=json.dumps(payload).encode(), method="POST",
        headers={"Content-Type": "application/json", "Idempotency-Key": identity},
    )
    with urllib.request.urlopen(request, timeout=float(settings.BATCH_HTTP_TIMEOUT_SECONDS)) as response:  # noqa: S310
        if response.status >= 300:
            raise OSError(f"{url} answered {response.status}")


def send_report(report: BatchReport, target: str) -> None:
    """Send the report to one target (`mailto:address` or an http(s) URL)."""
    identity = f"batch-{report.batch_id}-report-{report.number}"
    counts = report.body["counts"]
    if target.startswith("mailto:"):
        subject = (
            f"Batch {report.batch_id} {'update ' if report.kind == BatchReport.Kind.UPDATE else ''}report: "
            f"{counts['completed']} completed, {counts['failed']} failed"
        )
        send_email(target[len("mailto:"):], subject, report.text, identity,
                   [(f"batch-{report.batch_id}-report-{report.number}.csv", report.csv, "text/csv"),
                    (f"batch-{report.batch_id}-report-{report.number}.json", json.dumps(report.body, indent=1), "application/json")])
        return
    post_json(target, {"report": report.number, **report.body}, identity)


def queue_summary(batch: Batch, jobs: int) -> None:
    """E-mail the profile's recipients that the batch was queued (the profile's `summary_on_queue`), after commit."""
    addresses = batch.profile.email_targets()
    if not addresses:
        return
    subject = f"Batch {batch.pk} queued: {jobs} object(s) for collection {batch.collection.name}"
    body = (
        f"Batch {batch.pk} from {batch.submitter} ({batch.type}, {batch.payload_url}) was queued with {jobs} "
        f"object(s) for processing by profile {batch.profile.name}.\n"
    )

    def send() -> None:
        for address in addresses:
            try:
                send_email(address, subject, body, f"batch-{batch.pk}-queued", [])
            except Exception:  # a summary is a courtesy: the report is what counts
                logging.getLogger(__name__).warning("queue summary of batch %s to %s not sent", batch.pk, address,
                                                    exc_info=True)

    transaction.on_commit(send)
