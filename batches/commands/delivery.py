"""Sending one report to one target, retried with backoff until it is recorded SENT (then never again)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from django.db import transaction
from django.utils import timezone

from batches.models import ReportDelivery
from batches.notifications import send_report
from xcommands.base import XCommand
from xcommands.errors import PreconditionFailed, TransientError


class DeliveryFailed(TransientError):
    """The target did not take the report this time (retried with backoff)."""


@dataclass
class ReportDeliveryXCommand(XCommand):
    """Send, then record SENT; a delivery recorded SENT is never sent again (re-queued commands are skipped)."""

    delivery_id: int

    atomic: ClassVar[bool] = False  # the network call stays outside any transaction
    max_retries: ClassVar[int] = 8
    backoff_base_seconds: ClassVar[float] = 5.0
    backoff_cap_seconds: ClassVar[float] = 600.0

    def job_key(self) -> str:
        """One key per delivery: never sent from two workers at once."""
        return f"report-delivery:{self.delivery_id}"

    def load_state(self) -> None:
        """The delivery and its report."""
        self.delivery = ReportDelivery.objects.select_related("report").get(pk=self.delivery_id)

    def verify_precondition(self) -> None:
        """Sent already: nothing to do."""
        if self.delivery.status == ReportDelivery.Status.SENT:
            raise PreconditionFailed(f"report delivery {self.delivery_id} was sent at {self.delivery.sent_at}")

    def execute(self) -> dict[str, Any]:
        """Send; record SENT (or the error, and raise to be retried)."""
        delivery = self.delivery
        with transaction.atomic():
            ReportDelivery.objects.filter(pk=delivery.pk).exclude(status=ReportDelivery.Status.SENT).update(
                status=ReportDelivery.Status.SENDING, attempts=delivery.attempts + 1,
            )
        try:
            send_report(delivery.report, delivery.target)
        except Exception as exc:
            with transaction.atomic():
                ReportDelivery.objects.filter(pk=delivery.pk).exclude(status=ReportDelivery.Status.SENT).update(
                    status=ReportDelivery.Status.PENDING, last_error=f"{exc.__class__.__name__}: {exc}"[:4000],
                )
            raise DeliveryFailed(f"{delivery.target}: {exc}") from exc
        with transaction.atomic():
            ReportDelivery.objects.filter(pk=delivery.pk).update(
                status=ReportDelivery.Status.SENT, sent_at=timezone.now(), last_error="",
            )
        return {"delivery": delivery.pk, "target": delivery.target, "sent": True}

    def rollback(self, error: str) -> None:
        """Every retry failed: FAILED with the error (an admin may send it again)."""
        reason = (error.strip().splitlines() or ["failed"])[-1]
        ReportDelivery.objects.filter(pk=self.delivery_id).exclude(status=ReportDelivery.Status.SENT).update(
            status=ReportDelivery.Status.FAILED, last_error=reason[:4000],
        )
