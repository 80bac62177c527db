"""What other apps call on workflow jobs: kill, suspend and resume (docs/adr/0012-workflow-jobs-api.md).

`request_control` is the domain action the APIs call (the caller's permission check comes in
as a function: workflows know nothing of their parents); it queues a Wf* command on the
parent's key. The commands change the workflow through `workflows.states`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from oozie.definitions import DefinitionError
from oozie.properties import WF_APP_PATH, WF_RERUN_FAIL_NODES, WF_RERUN_SKIP_NODES
from workflows import notifications
from workflows.actions.celery import check_definition_tasks
from workflows.choices import (
    WorkflowStatus,
)
from workflows.commands import (
    WfKillXCommand,
    WfNodeClearXCommand,
    WfNodeMarkXCommand,
    WfRerunXCommand,
    WfResumeXCommand,
    WfStartXCommand,
    WfSuspendXCommand,
)
from workflows.definitions.loader import load_application
from workflows.definitions.submission import prepare_workflow
from workflows.engine import WorkflowError, check_rerun, create_job
from workflows.models import WorkflowJob, WorkflowNode
from workflows.node_verbs import (
    MARKS,
    ClearPlan,
    NodeVerbRefused,
    check_clear,
    check_mark,
    check_node_name,
    describe_mark,
)
from workflows.states import parent_key
from xcommands.models import Command
from xcommands.queue import enqueue

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


def request_control(workflow_id: str, verb: str, *, check: Callable[[WorkflowJob], None], reason: str = "") -> bool:
    """Queue kill, suspend or resume on the parent's key if the status allows it; False (nothing queued) if not.

    `check(workflow)` raises when the caller may not act (the parent's permission rule). A
    status the verb does not apply to is not an error: Oozie answers such a request and does
    nothing. Suspending a run whose node is not a Celery task raises VerbNotSupported.
    """
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


# ---- workflow applications (workflow.xml) submitted on their own ----------------------------------



def prepare_submission(properties: Mapping[str, str], *, trusted: bool = False) -> Any:
    """Read and validate the application a job configuration names (DefinitionError if refused; nothing stored)."""
    app_path = str(properties.get(WF_APP_PATH, "")).strip()
    if not app_path:
        raise DefinitionError(f"the job configuration has no {WF_APP_PATH}", source="job.properties")
    xml, defaults = load_application(app_path, trusted=trusted)
    prepared = prepare_workflow(xml, dict(properties), app_path=app_path, config_default=defaults)
    check_definition_tasks(prepared.definition, app_path.rstrip("/") + "/workflow.xml")
    notifications.check_notification_properties(prepared.configuration)  # config-default.xml's too
    return prepared


def submit_workflow(properties: Mapping[str, str], *, owner: Any, trusted: bool = False, start: bool = True) -> WorkflowJob:
    """Submit (PREP) or run (RUNNING) a workflow application; DefinitionError if refused, nothing stored then."""
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
    fail_nodes = str(properties.get(WF_RERUN_FAIL_NODES, "")).strip().lower() == "true"
    skip = [n.strip() for n in str(properties.get(WF_RERUN_SKIP_NODES, "")).split(",") if n.strip()]
    conf = {k: v for k, v in properties.items() if k not in (WF_RERUN_SKIP_NODES, WF_RERUN_FAIL_NODES)}
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


# ---- one node: clear, mark OK or ERROR (workflows.node_verbs) ----------------------------------------


def _username(actor: Any) -> str:
    return str(actor.get_username()) if actor is not None and hasattr(actor, "get_username") else "?"


def request_node_mark(workflow_id: str, node: str, status: str, *, check: Callable[[WorkflowJob], None],
                      actor: Any) -> tuple[Command, list[str]]:
    """Queue marking a live node OK or ERROR (Airflow's mark success / failed): the command and what it will do.

    `check(workflow)` raises when the caller may not act. UnknownNode when the workflow has no
    such node; NodeVerbRefused (nothing queued) when the node is not live, is a control node, or
    the workflow is not running or suspended.
    """
    status = str(status).upper()
    if status not in MARKS:
        raise NodeVerbRefused(f"a node is marked {' or '.join(MARKS)}, not {status!r}")
    with transaction.atomic():
        workflow = WorkflowJob.objects.get(pk=workflow_id)
        check(workflow)
        check_node_name(workflow, node)
        row = WorkflowNode.objects.filter(workflow=workflow, name=node).first()
        if row is None:
            raise NodeVerbRefused(f"workflow {workflow.id} has no node {node!r} that has run")
        check_mark(workflow, row, status)
        command = enqueue(WfNodeMarkXCommand(key=parent_key(workflow), workflow_id=workflow.id, node=node,
                                             status=status, by=_username(actor)), owner_id=getattr(actor, "pk", None))
    log.info("workflow %s: node %s marked %s by %s (command %s)", workflow_id, node, status, _username(actor),
             command.pk)
    return command, describe_mark(workflow, row, status)


def request_node_clear(workflow_id: str, node: str, *, downstream: bool, check: Callable[[WorkflowJob], None],
                       actor: Any) -> tuple[Command, ClearPlan]:
    """Queue clearing an ended node (Airflow's clear, with or without downstream): the command and its plan.

    UnknownNode when the workflow has no such node; NodeVerbRefused (nothing queued) when the
    node has not ended, is a control node, a node after it still runs (without downstream), or
    the workflow cannot run again.
    """
    with transaction.atomic():
        workflow = WorkflowJob.objects.get(pk=workflow_id)
        check(workflow)
        check_node_name(workflow, node)
        plan = check_clear(workflow, node, downstream=downstream)
        command = enqueue(WfNodeClearXCommand(key=parent_key(workflow), workflow_id=workflow.id, node=node,
                                              downstream=downstream, by=_username(actor)),
                          owner_id=getattr(actor, "pk", None))
    log.info("workflow %s: node %s cleared%s by %s (command %s)", workflow_id, node,
             " with downstream" if downstream else "", _username(actor), command.pk)
    return command, plan
