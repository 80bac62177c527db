"""The buttons of a workflow job's page (kernel.object_verbs): the job's verbs, and each node's clear and mark.

Job: kill, suspend, resume, start (`services.request_control`), rerun from the failed nodes
(`services.request_rerun`). Node: clear, clear with downstream, mark OK, mark ERROR
(`services.request_node_clear`, `services.request_node_mark`). All with the permission check
of the APIs (`workflows.api.access.may_modify`), each disabled with the reason the service
would give when the status refuses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernel.object_verbs import ObjectVerb
from oozie.properties import WF_RERUN_FAIL_NODES
from workflows.api.access import may_modify
from workflows.choices import WORKFLOW_TERMINAL, NodeStatus, WorkflowStatus
from workflows.engine import check_rerun
from workflows.models import WorkflowJob, WorkflowNode
from workflows.node_verbs import check_clear, describe_mark, node_verbs_allowed
from workflows.services import (
    TASK_NODE_TYPE,
    VERB_FROM,
    request_control,
    request_node_clear,
    request_node_mark,
    request_rerun,
)

TARGET = {"kill": WorkflowStatus.KILLED, "suspend": WorkflowStatus.SUSPENDED, "resume": WorkflowStatus.RUNNING,
          "start": WorkflowStatus.RUNNING}
NODE_LABELS = {"clear": "clear", "clear-downstream": "clear + downstream", "mark-ok": "mark OK",
               "mark-error": "mark ERROR"}


def _checker(user: Any) -> Any:
    def check(workflow: WorkflowJob) -> None:
        may_modify(user, workflow)

    return check


def _control(workflow: WorkflowJob, user: Any, verb: str) -> ObjectVerb:
    refused = "" if workflow.status in VERB_FROM[verb] else (
        f"workflow {workflow.pk} is {workflow.status}: {verb} needs {' or '.join(sorted(VERB_FROM[verb]))}")
    if not refused and verb == "start" and not workflow.definition:
        refused = f"workflow {workflow.pk} was started by its coordinator action"
    if not refused and verb == "suspend" and not workflow.definition and workflow.nodes.exclude(
            type=TASK_NODE_TYPE).exists():
        refused = f"workflow {workflow.pk} runs {workflow.app_path}: hold and release its batch instead"

    def run(data: Mapping[str, Any]) -> str:
        done = request_control(workflow.pk, verb, check=_checker(user), reason=f"killed by {user} in the admin")
        if not done:
            return f"{verb.capitalize()} of workflow {workflow.pk}: nothing to do, it is no longer {workflow.status}"
        return f"{verb.capitalize()} of workflow {workflow.pk} queued ({workflow.status} -> {TARGET[verb]})"

    return ObjectVerb(name=verb, label=verb.capitalize(), refused=refused, run=run, danger=verb == "kill",
                      effect=lambda data: [f"workflow {workflow.pk} ({workflow.app_name}): {workflow.status} -> "
                                           f"{TARGET[verb]}"])


def _rerun(workflow: WorkflowJob, user: Any) -> ObjectVerb:
    refused = ""
    if not workflow.definition:
        refused = f"workflow {workflow.pk} runs {workflow.app_path}: rerun its coordinator action instead"
    elif workflow.parent_workflow_id:
        refused = f"workflow {workflow.pk} is a sub-workflow of {workflow.parent_workflow_id}: rerun that one"
    elif workflow.status not in WORKFLOW_TERMINAL:
        refused = f"workflow {workflow.pk} is {workflow.status}: only an ended job can be rerun"

    def effect(data: Mapping[str, Any]) -> list[str]:
        skipped = check_rerun(workflow, skip_nodes=None, fail_nodes=True)
        return [f"workflow {workflow.pk}: {workflow.status} -> RUNNING (run {workflow.run + 1})",
                f"kept (ended OK): {', '.join(sorted(skipped)) or 'none'}; every other node runs again"]

    def run(data: Mapping[str, Any]) -> str:
        request_rerun(workflow.pk, {WF_RERUN_FAIL_NODES: "true"}, check=_checker(user))
        return f"Rerun of workflow {workflow.pk} from its failed nodes queued"

    return ObjectVerb(name="rerun", label="Rerun failed nodes", refused=refused, effect=effect, run=run)


def workflow_verbs(workflow: WorkflowJob, user: Any) -> list[ObjectVerb]:
    """The job's verbs, as its status allows them."""
    return [_control(workflow, user, "start"), _control(workflow, user, "suspend"),
            _control(workflow, user, "resume"), _rerun(workflow, user), _control(workflow, user, "kill")]


def node_verbs(workflow: WorkflowJob, node: WorkflowNode, user: Any,
               reasons: Mapping[str, str] | None = None) -> list[ObjectVerb]:
    """One node's clear, clear with downstream, mark OK and mark ERROR (`reasons`: computed already, for the table)."""
    reasons = reasons if reasons is not None else node_verbs_allowed(workflow, node)
    params = {"node": node.name}
    check = _checker(user)

    def mark(status: str) -> ObjectVerb:
        verb = f"mark-{status.lower()}"

        def run(data: Mapping[str, Any]) -> str:
            command, _ = request_node_mark(workflow.pk, node.name, status, check=check, actor=user)
            return f"Mark {status} of node {node.name} of workflow {workflow.pk} queued as command {command.pk}"

        return ObjectVerb(name=verb, label=NODE_LABELS[verb], refused=reasons.get(verb, ""), params=params, run=run,
                          effect=lambda data: describe_mark(workflow, node, status), danger=status == NodeStatus.ERROR,
                          title=f"end {node.name} as {status}; the workflow takes its {status.lower()} transition")

    def clear(downstream: bool) -> ObjectVerb:
        verb = "clear-downstream" if downstream else "clear"

        def run(data: Mapping[str, Any]) -> str:
            command, plan = request_node_clear(workflow.pk, node.name, downstream=downstream, check=check, actor=user)
            return (f"Clear of node {node.name}{' and its downstream' if downstream else ''} of workflow "
                    f"{workflow.pk} queued as command {command.pk}: {len(plan.rerun)} node(s) run again")

        return ObjectVerb(name=verb, label=NODE_LABELS[verb], refused=reasons.get(verb, ""), params=params, run=run,
                          effect=lambda data: check_clear(workflow, node.name, downstream=downstream).describe(),
                          title=f"run {node.name} again" + (" and every node after it" if downstream else ""))

    return [clear(False), clear(True), mark(NodeStatus.OK), mark(NodeStatus.ERROR)]
