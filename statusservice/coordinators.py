"""Periodic services for coordinators: pause times, timeouts, job status, recovery of lost work.

Oozie's RecoveryService idea: the database says what should be happening; whatever is not
happening is queued again. Each service scans only rows that are due through partial
indexes, queues a command only when no such command is already pending for the job
(`queue_once`), and is safe to run twice at once (duplicates are skipped by the commands'
preconditions, which run under the job's key).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Q

from coordinators.choices import (
    ACTION_ACTIVE,
    ACTION_PENDING,
    JOB_CHECKING_INPUTS,
    JOB_MATERIALIZING,
    JOB_PAUSED,
    ActionStatus,
)
from coordinators.commands import (
    CoordActionInputCheckXCommand,
    CoordActionReadyXCommand,
    CoordActionStatusXCommand,
    CoordJobStatusXCommand,
    CoordMaterializeXCommand,
    CoordPauseXCommand,
)
from coordinators.commands.actions import stale_after
from coordinators.commands.change import PAUSE_TARGET, UNPAUSE_TARGET
from coordinators.commands.lifecycle import lookahead
from coordinators.due_start import fan_out, start_due
from coordinators.due_start import look_ahead as ask_ahead
from coordinators.launchers import ACTION_OF_WORKFLOW, launch_actions
from coordinators.models import CoordinatorAction, CoordinatorJob
from kernel.locking import skip_locked
from kernel.lookups import in_constants
from statusservice.common import BATCH, queue_once, tick_seconds
from workflows.choices import WORKFLOW_TERMINAL, WorkflowStatus
from workflows.models import WorkflowJob
from xcommands.queue import enqueue_many

log = logging.getLogger(__name__)

def materialization_trigger(now: datetime) -> int:
    """Queue a materialize command for every running job whose next action is within the lookahead."""
    with transaction.atomic():
        ids = list(
            skip_locked(
                CoordinatorJob.objects.due_for_materialization(now + lookahead()).filter(
                    Q(pending=False) | Q(last_modified__lt=now - stale_after())
                )
            ).order_by("next_materialize_at").values_list("pk", flat=True)[:BATCH]
        )
        CoordinatorJob.objects.filter(pk__in=ids).update(pending=True, last_modified=now)
        enqueue_many([CoordMaterializeXCommand(job_id=job_id) for job_id in ids])
    return len(ids)


def _check_waiting(now: datetime, due: Q, order: str, *, name_actions: bool) -> int:
    """Mark due WAITING actions pending and queue one input check per job for them (see input_checks, timeouts)."""
    with transaction.atomic():
        rows = list(
            skip_locked(
                # Only jobs whose inputs are checked: a suspended job's overdue actions stay as they are
                # (no command per tick to be skipped), and are due again the moment it is resumed.
                CoordinatorAction.objects.filter(
                    due, status=ActionStatus.WAITING, job__status__in=sorted(JOB_CHECKING_INPUTS),
                ).filter(Q(pending=False) | Q(last_modified__lt=now - stale_after()))
            ).order_by(order).values_list("pk", "job_id", "number")[:BATCH]
        )
        CoordinatorAction.objects.filter(pk__in=[pk for pk, _, _ in rows]).update(pending=True, last_modified=now)
        # Without numbers the command checks every pending or due action of the job.
        enqueue_many([
            CoordActionInputCheckXCommand(job_id=job_id, numbers=numbers if name_actions else [])
            for job_id, numbers in group_by_job(rows).items()
        ])
    return len(rows)


def input_checks(now: datetime) -> int:
    """Check and start due actions in bulk (ADR 0026), then queue one input check per job for the rest; actions taken.

    The rest (jobs whose commands are busy, LAST_ONLY/NONE, input logic, coord:latest/future,
    checks due before their nominal time) are marked pending for their job's command.
    """
    fan_out(now)
    report = start_due(now)
    return report.checked + _check_waiting(now, Q(next_check_at__lte=now), "next_check_at", name_actions=False)


def look_ahead(now: datetime) -> int:
    """Record which inputs of the actions due before the next tick already exist (ADR 0026); inputs asked."""
    return ask_ahead(now, now + timedelta(seconds=tick_seconds()))


def pause_times(now: datetime) -> int:
    """Queue pause for jobs whose pause time came, and unpause for paused jobs whose pause time was reset."""
    due = Q(pause_time__lte=now, status__in=sorted(PAUSE_TARGET))
    reset = Q(status__in=sorted(UNPAUSE_TARGET)) & (Q(pause_time__isnull=True) | Q(pause_time__gt=now))
    queued = 0
    with transaction.atomic():
        ids = list(skip_locked(CoordinatorJob.objects.filter(due | reset)).values_list("pk", flat=True)[:BATCH])
        for job_id in ids:
            queued += queue_once(CoordPauseXCommand(job_id=job_id))
    return queued


def timeouts(now: datetime) -> int:
    """Queue an input check (which times out what is still missing) for waiting actions past their timeout."""
    return _check_waiting(now, Q(timeout_at__lte=now), "timeout_at", name_actions=True)


def group_by_job(rows: list[tuple[Any, str, int]]) -> dict[str, list[int]]:
    """(pk, job id, number) rows as action numbers per job."""
    by_job: dict[str, list[int]] = {}
    for _, job_id, number in rows:
        by_job.setdefault(job_id, []).append(number)
    return by_job


def job_statuses(now: datetime) -> int:
    """Queue a status derivation for running jobs that are done materializing and have no live action left."""
    live = CoordinatorAction.objects.filter(job=OuterRef("pk"), status__in=sorted(ACTION_PENDING | ACTION_ACTIVE))
    queued = 0
    with transaction.atomic():
        ids = list(
            CoordinatorJob.objects.filter(status__in=sorted(JOB_MATERIALIZING), done_materializing=True)
            .exclude(Exists(live))
            .values_list("pk", flat=True)[:BATCH]
        )
        for job_id in ids:
            queued += queue_once(CoordJobStatusXCommand(job_id=job_id))
    return queued


def recover_launches(now: datetime) -> int:
    """Launched actions that no live run accounts for: launch one, or report the run's end again.

    Runs look after themselves (`workflows.recovery`: lost workers, lost messages); this
    catches what is left. A SUBMITTED or RUNNING action untouched for COORD_RECOVERY_SECONDS
    whose `external_id` names no workflow run (launched before runs existed, or the launch
    was lost) gets a new run, at-least-once; one whose run has ended while the action has
    not (its report command failed for good) gets the report queued again.
    """
    live_run = WorkflowJob.objects.filter(pk=OuterRef("external_id")).exclude(status__in=sorted(WORKFLOW_TERMINAL))
    rows = list(
        CoordinatorAction.objects.filter(in_constants("status", ACTION_ACTIVE), last_modified__lt=now - stale_after())
        .exclude(Exists(live_run))
        .order_by("last_modified")
        .values_list("pk", "job_id", "external_id", "last_modified")[:BATCH]
    )
    runs = {run.id: run for run in WorkflowJob.objects.filter(pk__in=[row[2] for row in rows if row[2]])}
    acted = 0
    for pk, job_id, run_id, modified in rows:
        run = runs.get(run_id)
        with transaction.atomic():
            action = (
                CoordinatorAction.objects.select_for_update()
                .filter(pk=pk, status__in=sorted(ACTION_ACTIVE), external_id=run_id, last_modified=modified).first()
            )
            if action is None:
                continue  # it moved meanwhile: nothing lost
            if run is None:
                launch_actions(CoordinatorJob.objects.get(pk=job_id), [action], now)
                log.warning("recovery: action %s had no run (%r); launched %s", pk, run_id, action.external_id)
            elif queue_once(CoordActionStatusXCommand(
                job_id=job_id, number=action.number, status=ACTION_OF_WORKFLOW[WorkflowStatus(run.status)],
                error=run.error_message, workflow_id=run.id,
            )):
                log.warning("recovery: action %s missed the end of its run %s (%s); reported again", pk, run.id, run.status)
            action.last_modified = now
            action.save(update_fields=["external_id", "last_modified"])
            acted += 1
    return acted


def stuck_ready(now: datetime) -> int:
    """Jobs with READY actions nobody started for a while (a ready command lost or skipped): queue one."""
    waiting = CoordinatorAction.objects.filter(
        job=OuterRef("pk"), status=ActionStatus.READY, last_modified__lt=now - stale_after()
    )
    active = Count("actions", filter=Q(actions__status__in=sorted(ACTION_ACTIVE)))
    queued = 0
    ids = list(
        CoordinatorJob.objects.filter(status__in=sorted(JOB_MATERIALIZING | JOB_PAUSED)).filter(Exists(waiting))
        .annotate(active=active).filter(Q(concurrency__lt=0) | Q(active__lt=F("concurrency")))
        .values_list("pk", flat=True)[:BATCH]
    )
    with transaction.atomic():
        for job_id in ids:
            queued += queue_once(CoordActionReadyXCommand(job_id=job_id))
    return queued
