"""The `task:` launcher's reports, sent by the worker that runs the action's task.

RUNNING when the task starts (task_prerun, a compare-and-set), SUCCEEDED or FAILED when it
ends (task_success, task_failure, each an action-status command on the coordinator's key). Signals run in
the worker process right where the task ran: no callback task and no extra message. A
report lost with a dying worker is settled by the recovery service from the task's state.
"""

from __future__ import annotations

import logging
import traceback as tb
from typing import Any

from celery.signals import task_failure, task_prerun, task_success
from django.db import transaction
from django.utils import timezone

from coordinators.choices import ActionStatus
from coordinators.models import CoordinatorAction
from xcommands.queue import enqueue

log = logging.getLogger(__name__)


def _report(action_id: str, status: str, error: str = "") -> None:
    from coordinators.commands.actions import CoordActionStatusXCommand

    job_id, _, number = action_id.rpartition("@")
    with transaction.atomic():
        enqueue(CoordActionStatusXCommand(job_id=job_id, number=int(number), status=status, error=error))


def _action_of(task: Any, task_id: str | None) -> str | None:
    """The coordinator action a running task was launched for (None for every other task)."""
    request = getattr(task, "request", None)
    delivery = getattr(request, "delivery_info", None) or {}
    if delivery.get("routing_key") != "actions" or not task_id:
        return None
    headers = getattr(request, "headers", None) or {}
    named = headers.get("coord_action_id") if isinstance(headers, dict) else None
    if named is None:
        named = getattr(request, "coord_action_id", None)
    if isinstance(named, str) and "@" in named:
        return named
    return CoordinatorAction.objects.filter(external_id=task_id).values_list("id", flat=True).first()


@task_prerun.connect
def _report_running(sender: Any = None, task_id: str | None = None, task: Any = None, **kwargs: Any) -> None:
    """When a launched action task starts in a worker, mark it RUNNING by compare-and-set.

    Not a command: SUBMITTED -> RUNNING is a fact only the worker knows, and the conditional
    update cannot conflict with the job's commands (a kill moves the action out of
    SUBMITTED first, and the update then matches nothing; the end report moves
    SUBMITTED or RUNNING on). One command fewer per action (ADR 0006).
    """
    action_id = _action_of(task, task_id)
    if action_id is not None:
        now = timezone.now()
        CoordinatorAction.objects.filter(pk=action_id, status=ActionStatus.SUBMITTED).update(
            status=ActionStatus.RUNNING, started_at=now, last_modified=now
        )


@task_success.connect
def _report_success(sender: Any = None, result: Any = None, **kwargs: Any) -> None:
    """A launched action task returned: report SUCCEEDED."""
    request = getattr(sender, "request", None)
    action_id = _action_of(sender, getattr(request, "id", None))
    if action_id is not None:
        _report(action_id, ActionStatus.SUCCEEDED)


@task_failure.connect
def _report_failure(
    sender: Any = None, task_id: str | None = None, exception: BaseException | None = None, **kwargs: Any
) -> None:
    """A launched action task raised: report FAILED with the exception's one-line text."""
    action_id = _action_of(sender, task_id)
    if action_id is None:
        return
    text = "".join(tb.format_exception_only(type(exception), exception)).strip() if exception else "task failed"
    _report(action_id, ActionStatus.FAILED, text)
