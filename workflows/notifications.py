"""Workflow notifications (spec 5): HTTP GETs when a job changes status and when it enters or leaves an action.

`oozie.wf.workflow.notification.url` (tokens `$jobId`, `$status`, `$parentId`) and
`oozie.wf.action.notification.url` (`$jobId`, `$nodeName`, `$status`: `S:<STATUS>` when a node
starts, `T:<transition>` when it ends, a decision's chosen case) in the job's configuration.
Best effort, as Oozie's: each is a Celery task sent after the transaction that caused it
commits, retried WORKFLOW_NOTIFICATION_RETRIES times every WORKFLOW_NOTIFICATION_RETRY_SECONDS,
then dropped with a warning. Only http and https URLs are called.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any
from urllib.parse import quote, urlsplit

from django.db import transaction

log = logging.getLogger(__name__)

JOB_URL = "oozie.wf.workflow.notification.url"
NODE_URL = "oozie.wf.action.notification.url"
TASK = "workflows.notify"


def _send(url: str) -> None:
    from project.celery import app

    try:
        app.send_task(TASK, args=(url,), queue="default")
    except Exception as exc:  # the broker is down: a best-effort notification is dropped
        log.warning("notification %s not sent: %s", url, exc)


def _queue(template: str, tokens: dict[str, str]) -> None:
    if urlsplit(template).scheme not in ("http", "https"):
        log.warning("notification URL %r ignored: only http and https are called", template)
        return
    url = template
    for name in sorted(tokens, key=len, reverse=True):  # $jobId before a shorter token it contains
        url = url.replace(f"${name}", quote(tokens[name], safe=":@"))
    transaction.on_commit(partial(_send, url))


def job_changed(workflow: Any) -> None:
    """The job's status changed (caller's transaction): notify if the job asked for it."""
    template = str((workflow.configuration or {}).get(JOB_URL, "")).strip()
    if template:
        parent = workflow.parent_workflow_id or workflow.coord_action_id or ""
        _queue(template, {"jobId": workflow.id, "status": workflow.status, "parentId": parent})


def node_changed(workflow: Any, node_name: str, status: str = "", transition: str = "") -> None:
    """A node started (`status`) or ended (`transition`): notify if the job asked for it."""
    template = str((workflow.configuration or {}).get(NODE_URL, "")).strip()
    if template:
        value = f"T:{transition}" if transition else f"S:{status}"
        _queue(template, {"jobId": workflow.id, "nodeName": node_name, "status": value})
