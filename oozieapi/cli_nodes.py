"""`manage.py job -clear WF_ID@NODE [-downstream]` and `-mark WF_ID@NODE -status OK|ERROR`: one node's verbs.

Not Oozie's (its CLI has no node verbs): Airflow's clear and mark success / failed, through the
services the native API and the admin's node buttons call (`workflows.services.request_node_clear`,
`request_node_mark`), with their permission check (`workflows.api.access`: the parent
coordinator job's rules, else the workflow's owner and job admins). The queued command and the
node's runs name the `-user`. Misuse and refusals are one line (CommandError); nothing changes.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError

from oozieapi.ids import is_workflow_id
from workflows.api.access import may_modify
from workflows.models import WorkflowJob
from workflows.node_verbs import MARKS
from workflows.services import request_node_clear, request_node_mark

NODE_VERBS = ("clear", "mark")


def split_target(verb: str, target: str) -> tuple[str, str]:
    """`WF_ID@NODE` -> (workflow id, node name); a CommandError naming the expected form otherwise."""
    job_id, _, node = target.strip().partition("@")
    if not is_workflow_id(job_id) or not node.strip():
        raise CommandError(f"-{verb} takes a workflow node, WORKFLOW_ID@NODE (e.g. 0000003-261122093000123-W@extract), "
                           f"not {target!r}")
    return job_id, node.strip()


def check_options(verb: str | None, options: dict[str, Any]) -> None:
    """-downstream goes with -clear only, -status with -mark only (and -mark needs it)."""
    if options.get("downstream") and verb != "clear":
        raise CommandError("-downstream goes with -clear WORKFLOW_ID@NODE")
    if options.get("status") is not None and verb != "mark":
        raise CommandError("-status goes with -mark WORKFLOW_ID@NODE")
    if verb == "mark" and str(options.get("status") or "").strip().upper() not in MARKS:
        given = options.get("status")
        raise CommandError(f"-mark needs -status {' or '.join(MARKS)}" + (f", not {given!r}" if given else ""))


def run_node_verb(verb: str, target: str, actor: Any, options: dict[str, Any]) -> list[str]:
    """Queue the clear or mark as `actor`: what it will do, then the line naming the queued command."""
    check_options(verb, options)
    job_id, node = split_target(verb, target)
    if not WorkflowJob.objects.filter(pk=job_id).exists():
        raise CommandError(f"no workflow job {job_id!r}")

    def check(run: WorkflowJob) -> None:
        may_modify(actor, run)

    if verb == "clear":
        downstream = bool(options.get("downstream"))
        command, plan = request_node_clear(job_id, node, downstream=downstream, check=check, actor=actor)
        scope = " and its downstream" if downstream else ""
        return [*plan.describe(), f"clear: {job_id}@{node}{scope} queued (command {command.pk})"]
    status = str(options["status"]).strip().upper()
    command, effect = request_node_mark(job_id, node, status, check=check, actor=actor)
    return [*effect, f"mark: {job_id}@{node} {status} queued (command {command.pk})"]
