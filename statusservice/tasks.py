"""Periodic services (celery beat): materialization trigger, input re-checks, pause, timeouts, status, recovery.

Each scans only what is due through partial indexes, marks what it queues as pending in the
same transaction (so a second run at the same time skips it), and is idempotent.
"""

from __future__ import annotations

from celery import shared_task
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from coordinators.choices import ActionStatus
from coordinators.models import CoordinatorAction, CoordinatorJob
from statusservice import coordinators
from xcommands.queue import enqueue

BATCH = 500


def _locked(queryset: QuerySet) -> QuerySet:  # type: ignore[type-arg]
    if connection.features.has_select_for_update_skip_locked:
        return queryset.select_for_update(skip_locked=True)
    return queryset


@shared_task(name="statusservice.materialization_trigger", ignore_result=True)
def materialization_trigger() -> int:
    """Queue a materialize command for every running job whose next action is within the lookahead."""
    from coordinators.commands import CoordMaterializeXCommand
    from coordinators.commands.lifecycle import lookahead

    horizon = timezone.now() + lookahead()
    with transaction.atomic():
        ids = list(
            _locked(CoordinatorJob.objects.due_for_materialization(horizon).filter(pending=False))
            .order_by("next_materialize_at").values_list("pk", flat=True)[:BATCH]
        )
        CoordinatorJob.objects.filter(pk__in=ids).update(pending=True)
        for job_id in ids:
            enqueue(CoordMaterializeXCommand(job_id=job_id))
    return len(ids)


@shared_task(name="statusservice.input_checks", ignore_result=True)
def input_checks() -> int:
    """Queue an input check for every waiting action whose check is due (nominal time reached, backoff over)."""
    from coordinators.commands import CoordActionInputCheckXCommand

    now = timezone.now()
    with transaction.atomic():
        rows = list(
            _locked(
                CoordinatorAction.objects.filter(status=ActionStatus.WAITING, next_check_at__lte=now, pending=False)
            ).order_by("next_check_at").values_list("pk", "job_id", "number")[:BATCH]
        )
        CoordinatorAction.objects.filter(pk__in=[pk for pk, _, _ in rows]).update(pending=True)
        for _, job_id, number in rows:
            enqueue(CoordActionInputCheckXCommand(job_id=job_id, number=number))
    return len(rows)


@shared_task(name="statusservice.pause_times", ignore_result=True)
def pause_times() -> int:
    """Pause jobs whose pause time came; unpause those whose pause time was reset or moved."""
    return coordinators.pause_times(timezone.now())


@shared_task(name="statusservice.timeouts", ignore_result=True)
def timeouts() -> int:
    """Time out waiting actions past their timeout (after one last look at their inputs)."""
    return coordinators.timeouts(timezone.now())


@shared_task(name="statusservice.job_statuses", ignore_result=True)
def job_statuses() -> int:
    """Finish running jobs whose actions are all done (derive SUCCEEDED, DONEWITHERROR ...)."""
    return coordinators.job_statuses(timezone.now())


@shared_task(name="statusservice.recovery", ignore_result=True)
def recovery() -> int:
    """Recover lost work: launch reports from task states, relaunches, READY actions nobody started."""
    now = timezone.now()
    return coordinators.recover_launches(now) + coordinators.stuck_ready(now)
