"""Launchers: each launch of an action is a workflow job; its start and end come back here.

`launch_actions` runs under the job's key (in the commands that submit actions) and starts
one workflow job per action; the action's `external_id` names it. A `task:` application is
a node a worker runs (`workflows.launch`); a `batch:` application a node that waits for the
batch it opens (`coordinators.batch_launch`). The workflow runtime tells the action what
happened through the hooks registered below, whichever kind of node it was:

- started: SUBMITTED -> RUNNING by compare-and-set (a fact only the worker knows; it cannot
  conflict with the job's commands: anything that moved the action first makes it match
  nothing), not a command: one command fewer per action (ADR 0006).
- ended: an action-status command on the job's key, written in the transaction that records
  the run's end, so the report is as durable as the outcome (ADR 0008).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

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
    tasks: list[CoordinatorAction] = []
    batches: list[CoordinatorAction] = []
    applications: list[CoordinatorAction] = []
    for action in actions:
        app_path = str(action.run_conf.get("app_path", ""))
        if is_batch_app(app_path):
            batches.append(action)
        elif app_path.startswith(TASK_SCHEME):
            tasks.append(action)
        else:
            applications.append(action)
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
            for action in tasks
        ],
        now,
    )
    runs += launch_batches(job, batches, now)
    runs += [launch_application(job, action, now) for action in applications]
    for action, run in zip(tasks + batches + applications, runs, strict=True):
        action.external_id = run.id


def launch_application(job: CoordinatorJob, action: CoordinatorAction, now: datetime) -> WorkflowJob:
    """Start a workflow job of the workflow.xml application the action names, with the action's configuration.

    The application is read now (Oozie reads it when the action starts). One that cannot be
    read or is refused still gives a workflow job: FAILED at once, its error saying why, so
    the action FAILS with that message through the usual report.
    """
    from coordinators.definitions import DefinitionError
    from coordinators.services import workflow_app_path
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


def _ended(workflow: WorkflowJob, node: WorkflowNode) -> None:
    """The action's run ended: report it through a command on the job's key (same transaction)."""
    from coordinators.commands.actions import CoordActionStatusXCommand

    if workflow.coord_action_id is None:
        return
    job_id, _, number = workflow.coord_action_id.rpartition("@")
    enqueue(CoordActionStatusXCommand(
        job_id=job_id,
        number=int(number),
        status=ACTION_OF_WORKFLOW[WorkflowStatus(workflow.status)],
        error=workflow.error_message,
        workflow_id=workflow.id,
    ))


def register() -> None:
    """Hear the starts and ends of the runs that actions launch, and the ends of the batches they open (app ready)."""
    from coordinators import batch_launch

    parents.on_started(_started)
    parents.on_ended(_ended)
    batch_launch.register()
