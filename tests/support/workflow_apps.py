"""Workflow applications written for a test: celery action nodes, a kill, submitted and driven in this process."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.models import User

from tests.support.engine import run_pending_commands
from workflows.choices import NodeStatus as N
from workflows.choices import WorkflowStatus as W
from workflows.models import WorkflowJob, WorkflowNode
from workflows.runner import run_node
from workflows.services import submit_workflow

WF = 'xmlns="uri:oozie:workflow:1.0"'
CELERY = 'xmlns="uri:oozie:celery-action:0.1"'


def celery(name: str, task: str, *args: str, ok: str, error: str = "fail", extra: str = "") -> str:
    """A celery action node."""
    arguments = "".join(f"<arg>{a}</arg>" for a in args)
    return (f'<action name="{name}"{extra}><celery {CELERY}><task>{task}</task>{arguments}</celery>'
            f'<ok to="{ok}"/><error to="{error}"/></action>')


KILL = '<kill name="fail"><message>failed at ${wf:lastErrorNode()}: ${wf:errorMessage(wf:lastErrorNode())}</message></kill>'


def app(tmp_path: Path, body: str, name: str = "app", start: str = "", wf_name: str = "wf") -> Path:
    """Write a workflow application directory; its path."""
    directory = tmp_path / name
    directory.mkdir(parents=True, exist_ok=True)
    first = start or body.split('name="', 1)[1].split('"', 1)[0]
    (directory / "workflow.xml").write_text(
        f'<workflow-app name="{wf_name}" {WF}><start to="{first}"/>{body}{KILL}<end name="end"/></workflow-app>'
    )
    return directory


def owner() -> User:
    return User.objects.get_or_create(username="wf-user")[0]


def submit(directory: Path, **properties: str) -> WorkflowJob:
    conf = {"oozie.wf.application.path": str(directory), **{k.replace("_", "."): v for k, v in properties.items()}}
    return submit_workflow(conf, owner=owner(), trusted=True)


def drive(rounds: int = 50, worker: str = "test") -> int:
    """Run queued nodes and commands in this process until nothing is left, as `worker`; how many nodes ran."""
    ran = 0
    for _ in range(rounds):
        queued = list(WorkflowNode.objects.filter(status=N.PREP, workflow__status=W.RUNNING)
                      .values_list("pk", "attempt"))
        commands = run_pending_commands()
        if not queued and not commands:
            return ran
        for node_id, attempt in queued:
            run_node(node_id, attempt, worker)
            ran += 1
    return ran


def nodes(workflow: WorkflowJob) -> dict[str, tuple[str, str]]:
    """name -> (status, transition)."""
    return {n.name: (n.status, n.transition) for n in WorkflowNode.objects.filter(workflow=workflow)}
