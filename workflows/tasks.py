"""Celery tasks of the workflow runtime: running a node, and the recovery service (celery beat).

Importing this module (every worker does) also registers the workflow commands.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.utils import timezone

from workflows import commands  # noqa: F401 - registers the Wf* commands in every worker


@shared_task(bind=True, name="workflows.run", ignore_result=True, acks_late=True)
def run(self: Any, node: str, attempt: int, **display: Any) -> str:
    """Run one attempt of a workflow node (`display`: the parent and task, shown by Flower)."""
    from workflows.runner import run_node

    return run_node(node, int(attempt), getattr(self.request, "hostname", "") or "")


@shared_task(name="workflows.service.recover", ignore_result=True)
def recover() -> dict[str, int]:
    """Launch again the nodes whose worker was lost; send again the messages nobody picked up."""
    from workflows.recovery import recover as recover_nodes

    return recover_nodes(timezone.now())


@shared_task(bind=True, name="workflows.notify", ignore_result=True, acks_late=True)
def notify(self: Any, url: str) -> int:
    """Make one workflow notification (an HTTP GET), retried as configured (workflows.notifications)."""
    import logging
    import urllib.request

    from django.conf import settings

    retries = int(getattr(settings, "WORKFLOW_NOTIFICATION_RETRIES", 3))
    delay = float(getattr(settings, "WORKFLOW_NOTIFICATION_RETRY_SECONDS", 10))
    try:
        with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - http(s) only, checked when queued
            return int(response.status)
    except Exception as exc:
        if self.request.retries >= retries:
            logging.getLogger(__name__).warning("notification %s failed %s times, given up: %s", url, retries + 1, exc)
            return 0
        raise self.retry(exc=exc, countdown=delay) from None
