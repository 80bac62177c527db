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

import json
from typing import Any

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
    announce_outputs,
    apply_run_outcome,
)
from coordinators.launchers import ACTION_OF_WORKFLOW
from coordinators.models import CoordinatorAction, CoordinatorJob, StatusChange, record_changes
from kernel import sqlbatch
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


#: The run's action, as the statements below name it: the action the claimed workflow job runs for.
_RUN_ACTION = "(SELECT coord_action_id FROM workflows_workflowjob WHERE id = %(workflow)s)"


def _start_statements() -> list[str]:
    """`_started` as SQL in the worker's claim (workflows.parents.on_started_statements): the same move, no wait.

    A row a command holds is skipped (PostgreSQL), as the start report never waited for one:
    the run's end settles the action all the same.
    """
    return [
        "UPDATE coordinators_coordinatoraction SET status = 'RUNNING', started_at = %(now)s, last_modified = %(now)s"  # noqa: S608 - constant SQL
        " WHERE id IN (SELECT a.id FROM coordinators_coordinatoraction a WHERE a.id = " + _RUN_ACTION +
        " AND a.status = 'SUBMITTED' AND a.external_id = %(workflow)s AND " + parents.CLAIMED
        + sqlbatch.for_update(skip_locked=True) + ")",
        "INSERT INTO coordinators_statuschange (kind, object_id, job_id, from_status, to_status, at, by, reason)"  # noqa: S608 - constant SQL
        " SELECT 'action', a.id, a.job_id, 'SUBMITTED', 'RUNNING', %(now)s, 'worker (run ' || %(workflow)s || ')',"
        " 'its run started' FROM coordinators_coordinatoraction a WHERE a.id = " + _RUN_ACTION +
        " AND a.status = 'RUNNING' AND a.started_at = %(now)s AND a.external_id = %(workflow)s AND " + parents.CLAIMED,
    ]


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


def _another_action(status: str) -> str:
    """SQL: another action of the run's action's job (`a`) is in `status`, found by one probe of the (job, status, nominal time) index.

    Written as EXISTS, PostgreSQL's generic plan (kernel.sqlbatch) expected many such rows and
    scanned the table for the first one; ordered as the index is, it reads the index.
    """
    return ("(SELECT o.id FROM coordinators_coordinatoraction o WHERE o.job_id = a.job_id"  # noqa: S608 - constant SQL
            f" AND o.status = '{status}' AND o.id <> a.id ORDER BY o.job_id, o.status, o.nominal_time LIMIT 1)"
            " IS NOT NULL")


def _end_statements() -> list[str]:
    """`settle_action` as SQL in the worker's end report (workflows.parents.on_ended_statements).

    The run's action, if it is RUNNING for this run and nobody holds its row (PostgreSQL: SKIP
    LOCKED), takes the run's outcome with its history line; the last statement answers what
    the follow-ups depend on (`_after_end`). A SUBMITTED action (its start was skipped), one a
    command holds, or one that moved on is left to `_ended`, as before.
    """
    settled = (
        " FROM coordinators_coordinatoraction a WHERE a.id = " + _RUN_ACTION
        + " AND a.status = %(workflow_status)s AND a.ended_at = %(now)s AND a.external_id = %(workflow)s"
    )
    if not settings.COORD_SETTLE_ON_END:
        return ["SELECT 1 WHERE 1 = 0"]  # the command settles every action: `_after_end` queues it
    return [
        "UPDATE coordinators_coordinatoraction SET status = %(workflow_status)s, error_message = %(error_message)s,"  # noqa: S608 - constant SQL
        " ended_at = %(now)s, last_modified = %(now)s WHERE id IN (SELECT a.id FROM coordinators_coordinatoraction a"
        " WHERE a.id = " + _RUN_ACTION + " AND a.status = 'RUNNING' AND a.external_id = %(workflow)s AND "
        + parents.ENDED + sqlbatch.for_update(skip_locked=True) + ")",
        "INSERT INTO coordinators_statuschange (kind, object_id, job_id, from_status, to_status, at, by, reason)"  # noqa: S608 - constant SQL
        " SELECT 'action', a.id, a.job_id, 'RUNNING', %(workflow_status)s, %(now)s, 'worker (run ' || %(workflow)s || ')',"
        " %(error_message)s" + settled,
        "SELECT a.job_id, a.data_out, j.status, j.done_materializing,"  # noqa: S608 - constant SQL
        f" {_another_action(ActionStatus.READY)},"
        # Only asked once the job materialized everything (nothing else reads it), one probe per
        # status: as one `IN (...)`, the estimate for a job with many live actions picked a scan
        # of the whole table, which read every row once the last of them ended.
        " CASE WHEN j.done_materializing THEN ("
        + " OR ".join(_another_action(status) for status in sorted(ACTION_PENDING | ACTION_ACTIVE))
        + ") ELSE FALSE END"
        " FROM coordinators_coordinatoraction a JOIN coordinators_coordinatorjob j ON j.id = a.job_id"
        " WHERE a.id = " + _RUN_ACTION + " AND a.status = %(workflow_status)s AND a.ended_at = %(now)s"
        " AND a.external_id = %(workflow)s",
    ]


def _after_end(workflow: WorkflowJob, node: WorkflowNode, rows: list[list[tuple[Any, ...]]]) -> None:
    """After `_end_statements`: what `settle_action` queues once the action settled; `_ended` if the statements did not settle it."""
    if not rows[-1]:
        _ended(workflow, node)
        return
    job_id, data_out, job_status, done_materializing, has_ready, has_live = rows[-1][0]
    status = ACTION_OF_WORKFLOW[WorkflowStatus(workflow.status)]
    outputs = data_out if isinstance(data_out, dict) else json.loads(data_out or "{}")
    if status == ActionStatus.SUCCEEDED and outputs:
        announce_outputs(CoordinatorAction(id=str(workflow.coord_action_id), job_id=job_id, data_out=outputs),
                         workflow.ended_at or timezone.now())
    _follow_up(job_id, job_status, bool(done_materializing), bool(has_ready), bool(has_live), status)


def _follow_up(job_id: str, job_status: str, done_materializing: bool, has_ready: bool, has_live: bool,
               status: str) -> None:
    """Queue what a settled action's end lets happen: READY actions into the freed slot, the job's status."""
    if job_status in STARTING_JOB_STATUSES and has_ready:
        enqueue(CoordActionReadyXCommand(job_id=job_id))  # the freed slot lets a READY action in
    if job_status in JOB_MATERIALIZING and (status != ActionStatus.SUCCEEDED or (done_materializing and not has_live)):
        enqueue(CoordJobStatusXCommand(job_id=job_id))  # RUNNINGWITHERROR, or the job's end


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
    _follow_up(action.job_id, job["status"], job["done_materializing"], job["has_ready"], job["has_live"], status)
    return True


def register() -> None:
    """Hear the starts and ends of the runs that actions launch, and the ends of the batches they open (app ready)."""
    parents.on_started(_started)
    parents.on_started_statements(_start_statements)
    parents.on_ended(_ended)
    parents.on_ended_statements(_end_statements, _after_end)
    parents.on_suspended_or_resumed(_suspended_or_resumed)
    batch_launch.register()
