"""SLA services (celery beat): decide due SLA events, then deliver them by e-mail and webhook.

Two tasks, so a slow mail server or webhook never delays the decisions.
"""

from __future__ import annotations

from celery import shared_task

from coordinators.sla.notify import deliver
from coordinators.sla.service import check


@shared_task(name="statusservice.sla_checks", ignore_result=True)
def sla_checks() -> int:
    """Record START/END/DURATION met and miss events of open SLA records that are due or changed."""
    return check()


@shared_task(name="statusservice.sla_notifications", ignore_result=True)
def sla_notifications() -> int:
    """Send pending SLA events to alert-contact e-mails and SLA_WEBHOOK_URL; failures retry later."""
    return deliver()
