"""The `task:` launcher's reports: RUNNING when the task starts, SUCCEEDED or FAILED when it ends."""

from __future__ import annotations

import logging
import traceback as tb
from typing import Any

from celery import shared_task
from celery.signals import task_prerun
from django.db import transaction

from coordinators.choices import ActionStatus
from coordinators.models import CoordinatorAction
from xcommands.queue import enqueue

log = logging.getLogger(__name__)


def _report(action_id: str, status: str, error: str = "") -> None:
    from coordinators.commands.actions import CoordActionStatusXCommand

    job_id, _, number = action_id.rpartition("@")
    with transaction.atomic():
        enqueue(CoordActionStatusXCommand(job_id=job_id, number=int(number), status=status, error=error))


@task_prerun.connect
def _report_running(sender: Any = None, task_id: str | None = None, task: Any = None, **kwargs: Any) -> None:
    """When a launched action task starts in a worker, report RUNNING through a command."""
    request = getattr(task, "request", None)
    delivery = getattr(request, "delivery_info", None) or {}
    if delivery.get("routing_key") != "actions" or not task_id:
        return
    action_id = CoordinatorAction.objects.filter(external_id=task_id).values_list("id", flat=True).first()
    if action_id is not None:
        _report(action_id, ActionStatus.RUNNING)


@shared_task(name="coordinators.report_action", ignore_result=True)
def report_action(result: Any, action_id: str, status: str) -> None:
    """Success callback (`link`) of a launched action task."""
    _report(action_id, status)


@shared_task(name="coordinators.report_action_error", ignore_result=True)
def report_action_error(request: Any, exc: BaseException, traceback: Any, action_id: str) -> None:
    """Failure callback (`link_error`), called with the failing task's request and exception."""
    text = "".join(tb.format_exception_only(type(exc), exc)).strip() if isinstance(exc, BaseException) else str(exc)
    _report(action_id, ActionStatus.FAILED, text)
