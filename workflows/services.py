"""What other apps call on workflow jobs: kill, suspend and resume (docs/adr/0012-workflow-jobs-api.md).

`request_control` is the domain action the APIs call (the caller's permission check comes in
as a function: workflows know nothing of their parents); it queues a Wf* command on the
parent's key. The commands call `kill_workflows`, `suspend_workflow` and `resume_workflow`,
which lock the workflow row before its nodes, the order the worker's report takes them in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from functools import partial
from typing import Any

from celery import current_app as app  # project.celery's app, set up by this process
from django.db import transaction

from workflows import notifications, parents
from workflows.actions.celery import check_definition_tasks
from workflows.choices import (
    NODE_LIVE,
    NODE_TERMINAL,
    WORKFLOW_TERMINAL,
    NodeStatus,
    WorkflowStatus,
)
from workflows.models import WorkflowJob, WorkflowNode

log = logging.getLogger(__name__)

VERBS = ("kill", "suspend", "resume", "start")
#: The statuses each verb acts on; in any other the verb does nothing (Oozie's skipped precondition).
VERB_FROM: dict[str, frozenset[str]] = {
    "kill": frozenset({WorkflowStatus.PREP, WorkflowStatus.RUNNING, WorkflowStatus.SUSPENDED}),
    "suspend": frozenset({WorkflowStatus.RUNNING}),
    "resume": frozenset({WorkflowStatus.SUSPENDED}),
    "start": frozenset({WorkflowStatus.PREP}),
}
TASK_NODE_TYPE = "celery-task"


class VerbNotSupported(ValueError):
    """The verb cannot act on this kind of workflow (a `batch:` run is held through its batch)."""


def parent_key(workflow: WorkflowJob) -> str:
    """The key of the commands on a workflow: its parent coordinator job's (the action id before '@'), else its own."""
    if workflow.coord_action_id:
        return workflow.coord_action_id.rpartition("@")[0]
    return workflow.id


def request_control(workflow_id: str, verb: str, *, check: Callable[[WorkflowJob], None], reason: str = "") -> bool:
    """Queue kill, suspend or resume on the parent's key if the status allows it; False (nothing queued) if not.

    `check(workflow)` raises when the caller may not act (the parent's permission rule). A
    status the verb does not apply to is not an error: Oozie answers such a request and does
    nothing. Suspending a run whose node is not a Celery task raises VerbNotSupported.
    """
    from workflows.commands import (
        WfKillXCommand,
        WfResumeXCommand,
        WfStartXCommand,
        WfSuspendXCommand,
    )
    from xcommands.queue import enqueue

    if verb not in VERBS:
        raise ValueError(f"unknown verb {verb!r}; use {', '.join(VERBS)}")
    with transaction.atomic():
        workflow = WorkflowJob.objects.get(pk=workflow_id)
        check(workflow)
        if verb == "suspend" and not workflow.definition and workflow.nodes.exclude(type=TASK_NODE_TYPE).exists():
            raise VerbNotSupported(
                f"workflow {workflow.id} runs {workflow.app_path}: hold and release its batch instead"
            )
        if workflow.status not in VERB_FROM[verb]:
            log.info("%s of workflow %s ignored: it is %s", verb, workflow.id, workflow.status)
            return False
        key = parent_key(workflow)
        if verb == "kill":
            enqueue(WfKillXCommand(key=key, workflow_id=workflow.id, reason=reason or "killed"))
        elif verb == "suspend":
            enqueue(WfSuspendXCommand(key=key, workflow_id=workflow.id))
        elif verb == "start":
            if not workflow.definition:
                raise VerbNotSupported(f"workflow {workflow.id} was started by its coordinator action")
            enqueue(WfStartXCommand(key=key, workflow_id=workflow.id))
        else:
            enqueue(WfResumeXCommand(key=key, workflow_id=workflow.id))
    return True


def kill_workflows(workflow_ids: Iterable[str], now: datetime, reason: str = "killed") -> int:
    """KILLED workflow jobs and live nodes (in the caller's transaction); their tasks are revoked after commit.

    A worker still running a killed node finds the node moved when it reports, so its
    outcome is discarded; the parent is not told (the caller is the one killing).
    """
    ids = sorted(workflow_id for workflow_id in workflow_ids if workflow_id)
    if not ids:
        return 0
    list(WorkflowJob.objects.select_for_update().filter(pk__in=ids).order_by("id").values_list("id", flat=True))
    for workflow_id in ids:
        kill_nodes(workflow_id, now, reason)
    live = list(WorkflowJob.objects.filter(pk__in=ids).exclude(status__in=sorted(WORKFLOW_TERMINAL)))
    killed = WorkflowJob.objects.filter(pk__in=[w.pk for w in live]).update(
        status=WorkflowStatus.KILLED, ended_at=now, error_message=reason, last_modified=now
    )
    for workflow in live:
        workflow.status = WorkflowStatus.KILLED
        notifications.job_changed(workflow)
    return killed


def kill_nodes(workflow_id: str, now: datetime, reason: str = "killed") -> int:
    """KILLED the live nodes of one workflow (its row locked by the caller); their tasks revoked after commit."""
    nodes = list(WorkflowNode.objects.select_for_update().filter(workflow_id=workflow_id, status__in=sorted(NODE_LIVE)))
    # A node with no task (a batch node waits for its batch) has nothing to revoke.
    task_ids = [node.task_id for node in nodes if node.status == NodeStatus.RUNNING and node.task_id]
    for node in nodes:
        node.transition_to(NodeStatus.KILLED)
        node.ended_at, node.lease_expires_at = now, None
        node.history = [*node.history, {"attempt": node.attempt, "worker": node.worker, "outcome": NodeStatus.KILLED,
                                        "ended": now.isoformat(timespec="milliseconds"), "error": reason}]
        node.save(update_fields=["status", "ended_at", "lease_expires_at", "history"])
    transaction.on_commit(partial(revoke, task_ids))
    return len(nodes)


def revoke(task_ids: list[str]) -> None:
    """Stop running node tasks (after commit; best effort: a worker that misses it is fenced out anyway)."""
    if not task_ids:
        return

    try:
        app.control.revoke(task_ids, terminate=True)
    except Exception as exc:  # the broker may be down: the kill is recorded, the task's outcome fenced out
        log.warning("could not revoke %s task(s): %s", len(task_ids), exc)


def suspend_workflow(workflow_id: str, now: datetime) -> bool:
    """RUNNING -> SUSPENDED (caller's transaction): a queued node is not claimed; a running one ends, its end held."""
    workflow = WorkflowJob.objects.select_for_update().get(pk=workflow_id)  # the row first, then the nodes
    list(WorkflowNode.objects.select_for_update().filter(workflow_id=workflow_id).order_by("id"))
    if workflow.status != WorkflowStatus.RUNNING:
        return False
    workflow.transition_to(WorkflowStatus.SUSPENDED)
    workflow.last_modified = now
    workflow.save(update_fields=["status", "last_modified"])
    notifications.job_changed(workflow)
    parents.suspended_or_resumed(workflow, True)
    return True


def resume_workflow(workflow_id: str, now: datetime) -> bool:
    """SUSPENDED -> RUNNING (caller's transaction): queued nodes are sent again; a node that ended meanwhile ends the workflow."""
    from workflows.launch import dispatch_on_commit
    from workflows.runner import end_workflow

    workflow = WorkflowJob.objects.select_for_update().get(pk=workflow_id)  # the row first, then the nodes
    nodes = list(WorkflowNode.objects.select_for_update().filter(workflow_id=workflow_id).order_by("id"))
    if workflow.status != WorkflowStatus.SUSPENDED:
        return False
    workflow.transition_to(WorkflowStatus.RUNNING)
    workflow.last_modified = now
    workflow.save(update_fields=["status", "last_modified"])
    notifications.job_changed(workflow)
    parents.suspended_or_resumed(workflow, False)
    if workflow.definition:  # a workflow application: queued nodes sent, held transitions taken
        from workflows.engine import resumed

        resumed(workflow, nodes, now)
        return True
    for node in nodes:
        node.workflow = workflow
        if node.status == NodeStatus.PREP:
            node.dispatched_at, node.dispatches = now, node.dispatches + 1
            node.save(update_fields=["dispatched_at", "dispatches"])
            dispatch_on_commit(node)
    ended = [node for node in nodes if node.status in NODE_TERMINAL]
    if ended:
        end_workflow(ended[0], now)
    return True


# ---- workflow applications (workflow.xml) submitted on their own ----------------------------------

APP_PATH_PROPERTY = "oozie.wf.application.path"


def prepare_submission(properties: Mapping[str, str], *, trusted: bool = False) -> Any:
    """Read and validate the application a job configuration names (DefinitionError if refused; nothing stored)."""
    from coordinators.definitions import DefinitionError
    from workflows.definitions.loader import load_application
    from workflows.definitions.submission import prepare_workflow

    app_path = str(properties.get(APP_PATH_PROPERTY, "")).strip()
    if not app_path:
        raise DefinitionError(f"the job configuration has no {APP_PATH_PROPERTY}", source="job.properties")
    xml, defaults = load_application(app_path, trusted=trusted)
    prepared = prepare_workflow(xml, dict(properties), app_path=app_path, config_default=defaults)
    check_definition_tasks(prepared.definition, app_path.rstrip("/") + "/workflow.xml")
    notifications.check_notification_properties(prepared.configuration)  # config-default.xml's too
    return prepared


def submit_workflow(properties: Mapping[str, str], *, owner: Any, trusted: bool = False, start: bool = True) -> WorkflowJob:
    """Submit (PREP) or run (RUNNING) a workflow application; DefinitionError if refused, nothing stored then."""
    from django.utils import timezone

    from workflows.engine import create_job

    prepared = prepare_submission(properties, trusted=trusted)
    with transaction.atomic():
        workflow = create_job(
            prepared, now=timezone.now(), owner_id=getattr(owner, "pk", None),
            group=str(properties.get("group.name", "")), start=start,
        )
    log.info("workflow %s (%s) submitted by %s%s", workflow.id, workflow.app_name,
             getattr(owner, "username", "?"), ", started" if start else "")
    return workflow


def request_rerun(workflow_id: str, properties: Mapping[str, str], *, check: Callable[[WorkflowJob], None]) -> None:
    """Queue a rerun of an ended application workflow (spec 10): skip-nodes or failnodes from the properties.

    Refused at once (WorkflowError, nothing queued) when the job has not ended, is not an
    application, or the skip list names nodes that cannot be skipped.
    """
    from workflows.commands import WfRerunXCommand
    from workflows.engine import SKIP_NODES, WorkflowError, check_rerun
    from xcommands.queue import enqueue

    fail_nodes = str(properties.get("oozie.wf.rerun.failnodes", "")).strip().lower() == "true"
    skip = [n.strip() for n in str(properties.get(SKIP_NODES, "")).split(",") if n.strip()]
    conf = {k: v for k, v in properties.items() if k not in (SKIP_NODES, "oozie.wf.rerun.failnodes")}
    notifications.check_notification_properties(conf)  # rerun properties replace the stored ones
    with transaction.atomic():
        workflow = WorkflowJob.objects.select_for_update().get(pk=workflow_id)
        check(workflow)
        if not workflow.definition:
            raise WorkflowError(f"workflow {workflow.id} runs {workflow.app_path}: rerun its coordinator action instead")
        if workflow.parent_workflow_id:
            raise WorkflowError(f"workflow {workflow.id} is a sub-workflow of {workflow.parent_workflow_id}: rerun that one")
        check_rerun(workflow, skip_nodes=skip, fail_nodes=fail_nodes)
        enqueue(WfRerunXCommand(key=parent_key(workflow), workflow_id=workflow.id, configuration=conf,
                                skip_nodes=skip, fail_nodes=fail_nodes))
