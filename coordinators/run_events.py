"""What the runs that actions launch report back: started, suspended or resumed, ended.

The workflow runtime tells the action what happened through the hooks registered here
(`register`, at app ready), whichever kind of node its run was (`coordinators.launchers`):

- started: SUBMITTED -> RUNNING by compare-and-set (a fact only the worker knows; it cannot
  conflict with the job's commands: anything that moved the action first makes it match
  nothing), not a command: one command fewer per action (ADR 0006).
- ended: settled in the transaction that records the run's end, so the outcome is as durable as
  the run's (ADR 0008): by compare-and-set when no command holds the action's row (ADR 0027),
  else through an action-status command on the job's key.
- suspended or resumed: the action shows its run's state, by compare-and-set as for the start.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import Exists, OuterRef
from django.utils import timezone

from coordinators import batch_launch
from coordinators.choices import ACTION_ACTIVE, ACTION_PENDING, JOB_MATERIALIZING, ActionStatus
from coordinators.commands.actions import (
    STARTING_JOB_STATUSES,
    CoordActionReadyXCommand,
    CoordActionStatusXCommand,
    CoordJobStatusXCommand,
    apply_run_outcome,
)
from coordinators.launchers import ACTION_OF_WORKFLOW
from coordinators.models import CoordinatorAction, CoordinatorJob, StatusChange, record_changes
from kernel.history import acting_as
from kernel.locking import skip_locked
from workflows import parents
from workflows.choices import WorkflowStatus
from workflows.models import WorkflowJob, WorkflowNode
from xcommands.queue import enqueue


def _started(workflow: WorkflowJob, node: WorkflowNode) -> None:
    """A worker started the action's run (or its batch was opened): SUBMITTED -> RUNNING, if the action still waits for this run."""
    if workflow.coord_action_id is None:
        return
    now = timezone.now()
    moved = CoordinatorAction.objects.filter(
        pk=workflow.coord_action_id, status=ActionStatus.SUBMITTED, external_id=workflow.id
    ).update(status=ActionStatus.RUNNING, started_at=now, last_modified=now)
    if moved:
        with acting_as(f"worker (run {workflow.id})"):
            record_changes(StatusChange.Kind.ACTION, workflow.coord_action_id, workflow.coord_action_id.split("@")[0],
                           [(ActionStatus.SUBMITTED, ActionStatus.RUNNING, now, "its run started")])


def _suspended_or_resumed(workflow: WorkflowJob, suspended: bool) -> None:
    """The action's run was suspended (SUBMITTED/RUNNING -> SUSPENDED) or resumed (SUSPENDED -> RUNNING), as Oozie shows it.

    A compare-and-set, as for the start: the action must still wait for this run. It runs in the
    verb's transaction, under the coordinator job's key, so the job's own commands never overlap it.
    """
    if workflow.coord_action_id is None:
        return
    now = timezone.now()
    sources = (ActionStatus.SUBMITTED, ActionStatus.RUNNING) if suspended else (ActionStatus.SUSPENDED,)
    target = ActionStatus.SUSPENDED if suspended else ActionStatus.RUNNING
    before = CoordinatorAction.objects.filter(
        pk=workflow.coord_action_id, status__in=sources, external_id=workflow.id
    ).values_list("status", flat=True).first()
    if before is None:
        return
    moved = CoordinatorAction.objects.filter(
        pk=workflow.coord_action_id, status=before, external_id=workflow.id
    ).update(status=target, last_modified=now)
    if moved:
        with acting_as(f"workflow {workflow.id}"):
            record_changes(StatusChange.Kind.ACTION, workflow.coord_action_id, workflow.coord_action_id.split("@")[0],
                           [(before, target, now, f"its run was {'suspended' if suspended else 'resumed'}")])


def _ended(workflow: WorkflowJob, node: WorkflowNode) -> None:
    """The action's run ended: settle the action in the same transaction, or report it through a command on the job's key.

    The action row is taken `FOR UPDATE SKIP LOCKED` (ADR 0027): when no command holds it, the
    action moves to the run's outcome here by compare-and-set (it must still be launched and
    wait for this run), its outputs are announced, and only what needs the job's key is queued
    (a start of READY actions the freed slot lets in, the job's status when the run failed or
    the job may be done). When a command holds the row, or the action moved on, the
    `CoordActionStatusXCommand` is queued as before and decides under the key. Either way the
    outcome commits exactly when the run's end does.
    """
    if workflow.coord_action_id is None:
        return
    job_id, _, number = workflow.coord_action_id.rpartition("@")
    status = ACTION_OF_WORKFLOW[WorkflowStatus(workflow.status)]
    if settle_action(workflow, status):
        return
    enqueue(CoordActionStatusXCommand(
        job_id=job_id,
        number=int(number),
        status=status,
        error=workflow.error_message,
        workflow_id=workflow.id,
    ))


def settle_action(workflow: WorkflowJob, status: str) -> bool:
    """Move the run's action to its outcome if nobody holds its row and it still waits for this run; whether it did."""
    if not settings.COORD_SETTLE_ON_END:
        return False
    action = (
        skip_locked(CoordinatorAction.objects.filter(
            pk=workflow.coord_action_id, status__in=sorted(ACTION_ACTIVE), external_id=workflow.id,
        )).defer("sla").first()
    )
    if action is None:
        return False  # held by a command, or no longer waiting for this run: the command decides
    with acting_as(f"worker (run {workflow.id})"):
        apply_run_outcome(action, status, workflow.error_message, timezone.now())
    # One query for what the follow-ups depend on: the job's state, READY actions, live ones.
    others = CoordinatorAction.objects.filter(job_id=OuterRef("pk")).exclude(pk=action.pk)
    job = (
        CoordinatorJob.objects.filter(pk=action.job_id)
        .annotate(
            has_ready=Exists(others.filter(status=ActionStatus.READY)),
            has_live=Exists(others.filter(status__in=sorted(ACTION_PENDING | ACTION_ACTIVE))),
        )
        .values("status", "done_materializing", "has_ready", "has_live").first()
    )
    if job is None:
        return True
    if job["status"] in STARTING_JOB_STATUSES and job["has_ready"]:
        enqueue(CoordActionReadyXCommand(job_id=action.job_id))  # the freed slot lets a READY action in
    if job["status"] in JOB_MATERIALIZING and (
        status != ActionStatus.SUCCEEDED or (job["done_materializing"] and not job["has_live"])
    ):
        enqueue(CoordJobStatusXCommand(job_id=action.job_id))  # RUNNINGWITHERROR, or the job's end
    return True


def register() -> None:
    """Hear the starts and ends of the runs that actions launch, and the ends of the batches they open (app ready)."""
    parents.on_started(_started)
    parents.on_ended(_ended)
    parents.on_suspended_or_resumed(_suspended_or_resumed)
    batch_launch.register()
