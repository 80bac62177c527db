"""Celery tasks of the workflow runtime: running a node, and the recovery service (celery beat).

Importing this module (every worker does) also registers the workflow commands.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from kernel.outbound import OutboundRefused
from kernel.secrets import masker
from workflows import (
    commands,  # noqa: F401 - registers the Wf* commands in every worker
    notifications,
)
from workflows.choices import NodeStatus
from workflows.recovery import recover as recover_nodes
from workflows.runner import run_attempt

#: The most of a failed node's error a Celery task failure carries (Flower shows it; the node has it all).
FAILURE_TEXT_CHARS = 1000


class NodeFailed(Exception):
    """A node's task failed (ERROR) or could not run (FAILED). Raised after its outcome was recorded,
    so Celery records the task as FAILURE and Flower's Failed view lists it; the message is
    acknowledged, never run again for this."""


@shared_task(bind=True, name="workflows.run", ignore_result=True, acks_late=True, throws=(NodeFailed,))
def run(self: Any, node: str, attempt: int, **display: Any) -> str:
    """Run one attempt of a workflow node (`display`: the parent and task, shown by Flower)."""
    result, error = run_attempt(node, int(attempt), getattr(self.request, "hostname", "") or "")
    if result in (NodeStatus.ERROR, NodeStatus.FAILED):
        raise NodeFailed(f"{display.get('parent') or node} attempt {attempt} {result}: {error[:FAILURE_TEXT_CHARS]}")
    return result


@shared_task(name="workflows.service.recover", ignore_result=True)
def recover() -> dict[str, int]:
    """Launch again the nodes whose worker was lost; send again the messages nobody picked up."""
    return recover_nodes(timezone.now())


@shared_task(bind=True, name="workflows.notify", ignore_result=True, acks_late=True)
def notify(self: Any, url: str) -> int:
    """Make one workflow notification (a checked, pinned HTTP GET), retried as configured; a refused URL is dropped."""
    retries = int(settings.WORKFLOW_NOTIFICATION_RETRIES)
    delay = float(settings.WORKFLOW_NOTIFICATION_RETRY_SECONDS)
    secrets = masker()  # log lines mask `token=`-like parameters (the sender masked the job's values for Flower)
    try:
        return notifications.deliver(url)
    except OutboundRefused as exc:  # OUTBOUND_ALLOWED_HOSTS refuses it: trying again changes nothing
        logging.getLogger(__name__).warning("notification not sent, refused: %s", secrets.text(str(exc)))
        return 0
    except Exception as exc:
        if self.request.retries >= retries:
            logging.getLogger(__name__).warning("notification %s failed %s times, given up: %s",
                                                secrets.text(url), retries + 1, secrets.text(str(exc)))
            return 0
        # The retry is a new message: it keeps the masked display of the first (Flower shows argsrepr).
        raise self.retry(exc=exc, countdown=delay, argsrepr=getattr(self.request, "argsrepr", None)) from None
