"""Launchers: each launch of an action is a workflow job; its start and end come back here.

`launch_actions` runs under the job's key (in the commands that submit actions) and starts
one workflow job per action; the action's `external_id` names it. A `task:` application is
a node a worker runs (`workflows.launch`); a `batch:` application a node that waits for the
batch it opens (`coordinators.batch_launch`). The workflow runtime tells the action what
happened through the hooks registered below, whichever kind of node it was:

- started: SUBMITTED -> RUNNING by compare-and-set (a fact only the worker knows; it cannot
  conflict with the job's commands: anything that moved the action first makes it match
  nothing), not a command: one command fewer per action (ADR 0006).
- ended: settled in the transaction that records the run's end, so the outcome is as durable as
  the run's (ADR 0008): by compare-and-set when no command holds the action's row (ADR 0027),
  else through an action-status command on the job's key.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.conf import settings
from django.db.models import Exists, OuterRef
from django.utils import timezone

from coordinators.batch_launch import is_batch_app, launch_batches
from coordinators.choices import ActionStatus
from coordinators.models import CoordinatorAction, CoordinatorJob
from workflows import parents
from workflows.choices import WorkflowStatus
from workflows.launch import TASK_SCHEME, Launch, start_workflows
from workflows.models import WorkflowJob, WorkflowNode
from xcommands.queue import enqueue

ACTION_OF_WORKFLOW = {
    WorkflowStatus.SUCCEEDED: ActionStatus.SUCCEEDED,
    WorkflowStatus.FAILED: ActionStatus.FAILED,
    WorkflowStatus.KILLED: ActionStatus.KILLED,
}


def launch_actions(job: CoordinatorJob, actions: Iterable[CoordinatorAction], now: datetime) -> None:
    """Start a workflow job for each action (in the caller's transaction); set each action's `external_id`.

    The caller saves the actions. The runs' messages (and batch submissions) are sent after commit.
    """
    launch_many([(job, action) for action in actions], now)


def launch_many(launches: Iterable[tuple[CoordinatorJob, CoordinatorAction]], now: datetime) -> None:
    """`launch_actions` for actions of any jobs: the `task:` runs of them all are inserted together."""
    tasks: list[tuple[CoordinatorJob, CoordinatorAction]] = []
    batches: dict[str, tuple[CoordinatorJob, list[CoordinatorAction]]] = {}
    applications: list[tuple[CoordinatorJob, CoordinatorAction]] = []
    for job, action in launches:
        app_path = str(action.run_conf.get("app_path", ""))
        if is_batch_app(app_path):
            batches.setdefault(job.pk, (job, []))[1].append(action)
        elif app_path.startswith(TASK_SCHEME):
            tasks.append((job, action))
        else:
            applications.append((job, action))
    runs = start_workflows(
        [
            Launch(
                app_path=str(action.run_conf.get("app_path", "")),
                configuration={k: v for k, v in action.run_conf.items() if k != "app_path"},
                nominal_time=action.nominal_time,
                coord_action_id=action.id,
                run=action.run_count,
                owner_id=job.owner_id,
            )
            for job, action in tasks
        ],
        now,
    )
    for action, run in zip([action for _, action in tasks], runs, strict=True):
        action.external_id = run.id
    for job, actions in batches.values():
        for action, run in zip(actions, launch_batches(job, actions, now), strict=True):
            action.external_id = run.id
    for job, action in applications:
        action.external_id = launch_application(job, action, now).id


def launch_application(job: CoordinatorJob, action: CoordinatorAction, now: datetime) -> WorkflowJob:
    """Start a workflow job of the workflow.xml application the action names, with the action's configuration.

    The application is read now (Oozie reads it when the action starts). One that cannot be
    read or is refused still gives a workflow job: FAILED at once, its error saying why, so
    the action FAILS with that message through the usual report.
    """
    from coordinators.preparation import workflow_app_path
    from oozie.definitions import DefinitionError
    from workflows.definitions.loader import load_application
    from workflows.definitions.submission import prepare_workflow
    from workflows.engine import create_job, failed_launch

    app_path = workflow_app_path(str(action.run_conf.get("app_path", "")), job.app_path or None)
    configuration = {k: str(v) for k, v in action.run_conf.items() if k != "app_path"}
    configuration["oozie.wf.application.path"] = app_path
    if job.owner_id:
        configuration.setdefault("user.name", job.owner.get_username())
    try:
        xml, defaults = load_application(app_path, trusted=True)  # its roots were checked at submission
        prepared = prepare_workflow(xml, configuration, app_path=app_path, config_default=defaults)
    except DefinitionError as exc:
        return failed_launch(app_path, configuration, str(exc), now=now, owner_id=job.owner_id,
                             coord_action_id=action.id, run=action.run_count, nominal_time=action.nominal_time)
    return create_job(prepared, now=now, owner_id=job.owner_id, coord_action_id=action.id, run=action.run_count,
                      nominal_time=action.nominal_time)


def _started(workflow: WorkflowJob, node: WorkflowNode) -> None:
    """A worker started the action's run (or its batch was opened): SUBMITTED -> RUNNING, if the action still waits for this run."""
    if workflow.coord_action_id is None:
        return
    from coordinators.history import acting_as
    from coordinators.models import StatusChange, record_changes

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
    from coordinators.history import acting_as
    from coordinators.models import StatusChange, record_changes

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
    from coordinators.commands.actions import CoordActionStatusXCommand

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
    from coordinators.choices import ACTION_ACTIVE, ACTION_PENDING, JOB_MATERIALIZING
    from coordinators.commands.actions import (
        STARTING_JOB_STATUSES,
        CoordActionReadyXCommand,
        CoordJobStatusXCommand,
        apply_run_outcome,
    )
    from coordinators.history import acting_as
    from kernel.locking import skip_locked

    if not getattr(settings, "COORD_SETTLE_ON_END", True):
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
    from coordinators import batch_launch

    parents.on_started(_started)
    parents.on_ended(_ended)
    parents.on_suspended_or_resumed(_suspended_or_resumed)
    batch_launch.register()
