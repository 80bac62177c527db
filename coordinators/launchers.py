"""Launchers: each launch of an action is a workflow job; its start and end come back to `coordinators.run_events`.

`launch_actions` runs under the job's key (in the commands that submit actions) and starts
one workflow job per action; the action's `external_id` names it. A `task:` application is
a node a worker runs (`workflows.launch`); a `batch:` application a node that waits for the
batch it opens (`coordinators.batch_launch`); a workflow application a workflow job of its
own (`workflows.engine`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from coordinators.batch_launch import is_batch_app, launch_batches
from coordinators.choices import ActionStatus
from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.preparation import workflow_app_path
from oozie.definitions import DefinitionError
from oozie.properties import USER_NAME, WF_APP_PATH
from workflows.choices import WorkflowStatus
from workflows.definitions.loader import load_application
from workflows.definitions.submission import prepare_workflow
from workflows.engine import create_job, failed_launch
from workflows.launch import TASK_SCHEME, Launch, start_workflows
from workflows.models import WorkflowJob

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
    app_path = workflow_app_path(str(action.run_conf.get("app_path", "")), job.app_path or None)
    configuration = {k: str(v) for k, v in action.run_conf.items() if k != "app_path"}
    configuration[WF_APP_PATH] = app_path
    if job.owner_id:
        configuration.setdefault(USER_NAME, job.owner.get_username())
    try:
        xml, defaults = load_application(app_path, trusted=True)  # its roots were checked at submission
        prepared = prepare_workflow(xml, configuration, app_path=app_path, config_default=defaults)
    except DefinitionError as exc:
        return failed_launch(app_path, configuration, str(exc), now=now, owner_id=job.owner_id,
                             coord_action_id=action.id, run=action.run_count, nominal_time=action.nominal_time)
    return create_job(prepared, now=now, owner_id=job.owner_id, coord_action_id=action.id, run=action.run_count,
                      nominal_time=action.nominal_time)
