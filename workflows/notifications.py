"""Workflow notifications (spec 5): HTTP GETs when a job changes status and when it enters or leaves an action.

`oozie.wf.workflow.notification.url` (tokens `$jobId`, `$status`, `$parentId`) and
`oozie.wf.action.notification.url` (`$jobId`, `$nodeName`, `$status`: `S:<STATUS>` when a node
starts, `T:<transition>` when it ends, a decision's chosen case) in the job's configuration.
Best effort, as Oozie's: each is a Celery task sent after the transaction that caused it
commits, retried WORKFLOW_NOTIFICATION_RETRIES times every WORKFLOW_NOTIFICATION_RETRY_SECONDS,
then dropped with a warning.

Only hosts OUTBOUND_ALLOWED_HOSTS lists are called (kernel.outbound: default none). A
submission naming a notification URL whose host is not allowed is refused, naming the
property (`check_notification_properties`); a URL still holding `${...}` is checked when it is
sent. Each send checks again, resolves the host, refuses loopback and link-local answers and
connects to the checked address; a refused URL is logged and dropped, never retried.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import partial
from typing import Any
from urllib.parse import quote, urlsplit

from celery import current_app as app  # project.celery's app, set up by this process
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction

from kernel import outbound
from kernel.secrets import Masker, masker
from oozie.definitions.errors import DefinitionError
from oozie.properties import ACTION_NOTIFICATION_URL, WF_NOTIFICATION_URL

log = logging.getLogger(__name__)

TASK = "workflows.notify"
#: Oozie's own replacements in a notification URL (filled in when it is sent).
TOKENS = ("jobId", "status", "parentId", "nodeName")
TIMEOUT_SECONDS = 10.0


class NotificationURLRefused(DefinitionError):
    """A notification URL in a job's configuration that the server may not call (OUTBOUND_ALLOWED_HOSTS)."""


def _with_tokens(template: str, tokens: dict[str, str]) -> str:
    url = template
    for name in sorted(tokens, key=len, reverse=True):  # $jobId before a shorter token it contains
        url = url.replace(f"${name}", quote(tokens[name], safe=":@"))
    return url


def check_notification_properties(properties: Mapping[str, Any], *, source: str = "configuration") -> None:
    """Refuse (NotificationURLRefused, naming the property) a notification URL whose host is not allowed.

    Oozie's `$jobId`-style tokens stand for a plain value here; a URL still holding `${...}`
    is resolved later and checked when it is sent.
    """
    for name in (WF_NOTIFICATION_URL, ACTION_NOTIFICATION_URL):
        template = str(properties.get(name) or "").strip()
        if not template or "${" in template:
            continue
        try:
            outbound.check_url(_with_tokens(template, dict.fromkeys(TOKENS, "x")))
        except outbound.OutboundRefused as exc:
            raise NotificationURLRefused(
                f"notification URL refused: {exc}", source=source, element=f"property {name}",
            ) from None


def deliver(url: str) -> int:
    """Send one notification (a checked, pinned GET); its status. OutboundRefused if not allowed, OSError on failure.

    A 3xx is an answer (redirects are not followed); 4xx and 5xx raise, to be retried.
    """
    status = outbound.request(url, timeout=TIMEOUT_SECONDS, max_bytes=0).status
    if status >= 400:
        raise outbound.OutboundHTTPError(f"HTTP {status}", status=status)
    if status >= 300:
        log.info("notification to %s answered %s: redirects are not followed", urlsplit(url).hostname, status)
    return status


def _send(url: str, shown: str | None = None) -> None:
    """Send the notify task; Flower and the logs show `shown`, the URL with its secrets masked (kernel.secrets)."""

    shown = shown if shown is not None else masker().text(url)
    try:
        # The worker needs the URL itself; Flower shows argsrepr (Celery's "hiding sensitive information").
        app.send_task(TASK, args=(url,), argsrepr=repr((shown,)), queue="default", ignore_result=True)
    except Exception as exc:  # the broker is down: a best-effort notification is dropped
        log.warning("notification %s not sent: %s", shown, exc)


def _queue(template: str, tokens: dict[str, str], secrets: Masker) -> None:
    url = _with_tokens(template, tokens)
    try:
        outbound.check_url(url)  # the allow-list may have changed since submission; `${...}` resolved since
    except outbound.OutboundRefused as exc:
        log.warning("notification not sent: %s", secrets.text(str(exc)))
        return
    except ImproperlyConfigured as exc:  # a bad entry must not undo the job's transition (caller's transaction)
        log.error("notification not sent: %s", exc)
        return
    shown = secrets.text(url)  # the job's secret values (a `?token=${api.token}`) are not for Flower or logs
    # Nothing of the job's in it: `_send(url)` shows the URL (masked by name alone), one argument as before.
    transaction.on_commit(partial(_send, url) if shown == url else partial(_send, url, shown))


def job_changed(workflow: Any) -> None:
    """The job's status changed (caller's transaction): notify if the job asked for it."""
    template = str((workflow.configuration or {}).get(WF_NOTIFICATION_URL, "")).strip()
    if template:
        parent = workflow.parent_workflow_id or workflow.coord_action_id or ""
        _queue(template, {"jobId": workflow.id, "status": workflow.status, "parentId": parent},
               masker(workflow.configuration))


def node_changed(workflow: Any, node_name: str, status: str = "", transition: str = "") -> None:
    """A node started (`status`) or ended (`transition`): notify if the job asked for it."""
    template = str((workflow.configuration or {}).get(ACTION_NOTIFICATION_URL, "")).strip()
    if template:
        value = f"T:{transition}" if transition else f"S:{status}"
        _queue(template, {"jobId": workflow.id, "nodeName": node_name, "status": value}, masker(workflow.configuration))
