"""`manage.py job -clear WF_ID@NODE [-downstream]` and `-mark WF_ID@NODE -status OK|ERROR`: one node's verbs.

The CLI queues the node commands through the services the native API and the admin call, as
`-user`, with their permission check; every misuse and refusal is one line and changes nothing.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from tests.support.engine import run_pending_commands
from tests.workflows.api.factories import celery, drive, submit, write_app
from workflows.choices import NodeStatus, WorkflowStatus
from workflows.models import WorkflowJob, WorkflowNode
from xcommands.models import Command

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]

WF = 'xmlns="uri:oozie:workflow:1.0"'


def linear(tmp_path: Path, owner: User) -> WorkflowJob:
    """a -> b -> end (errors to the kill node `fail`), submitted by `owner` and running."""
    xml = (f'<workflow-app name="line" {WF}><start to="a"/>'
           + celery("a", "examples.noop_any", ok="b") + celery("b", "examples.noop_any", ok="end")
           + '<kill name="fail"><message>failed at ${wf:lastErrorNode()}</message></kill>'
           '<end name="end"/></workflow-app>')
    return submit(write_app(tmp_path / "line", xml), owner)


def job(*args: str) -> str:
    out = io.StringIO()
    call_command("job", *args, stdout=out)
    return out.getvalue()


def snapshot(workflow: WorkflowJob) -> dict[str, tuple[str, int, int]]:
    """Each node's status, attempt and number of runs recorded (a refusal changes none)."""
    return {n.name: (n.status, n.attempt, len(n.history)) for n in WorkflowNode.objects.filter(workflow=workflow)}


def node(workflow: WorkflowJob, name: str) -> WorkflowNode:
    return WorkflowNode.objects.get(workflow=workflow, name=name)


def test_mark_queues_the_command_as_the_user_and_says_what_it_does(ann: User, tmp_path: Path) -> None:
    """-mark WF@b -status ok: the effect, then `mark: ... queued (command N)`; run, b is OK and names ann."""
    workflow = linear(tmp_path, ann)
    drive(rounds=1)  # a ran, b queued
    out = job("-mark", f"{workflow.id}@b", "-status", "ok", "-user", "ann")
    lines = out.strip().splitlines()
    assert lines[0] == f"node b of {workflow.id}: PREP -> OK (attempt 1)"
    command = Command.objects.get(name="workflows.WfNodeMarkXCommand")
    assert lines[-1] == f"mark: {workflow.id}@b OK queued (command {command.pk})"
    assert command.owner_id == ann.pk
    run_pending_commands()
    b = node(workflow, "b")
    assert (b.status, b.history[-1]["marked_by"]) == (NodeStatus.OK, "ann")
    assert WorkflowJob.objects.get(pk=workflow.pk).status == WorkflowStatus.SUCCEEDED


def test_clear_with_downstream_reruns_the_node_and_those_after_it(ann: User, tmp_path: Path) -> None:
    """-clear WF@a -downstream of an ended workflow: the plan names b; both run again and it SUCCEEDS again."""
    workflow = linear(tmp_path, ann)
    drive()
    out = job("-clear", f"{workflow.id}@a", "-downstream", "-user", "ann")
    assert "after it, run again when reached: b" in out
    assert out.strip().splitlines()[-1].startswith(f"clear: {workflow.id}@a and its downstream queued (command ")
    drive()
    assert WorkflowJob.objects.get(pk=workflow.pk).status == WorkflowStatus.SUCCEEDED
    assert (node(workflow, "a").attempt, node(workflow, "b").attempt) == (2, 2)
    assert any(entry.get("cleared_by") == "ann" for entry in node(workflow, "a").history)


@pytest.mark.parametrize(("case", "args", "words"), [
    ("someone-else", ("-mark", "{wf}@b", "-status", "OK", "-user", "bob"), "user 'bob' may not modify workflow job"),
    ("ended-node", ("-mark", "{wf}@a", "-status", "OK", "-user", "ann"), "already ended OK"),
    ("queued-node", ("-clear", "{wf}@b", "-user", "ann"), "is PREP: mark it"),
    ("unknown-node", ("-clear", "{wf}@nope", "-user", "ann"), "no such node 'nope'"),
    ("unknown-workflow", ("-clear", "0000000-000000000000000-W@a", "-user", "ann"), "no workflow job"),
    ("no-node", ("-clear", "{wf}", "-user", "ann"), "WORKFLOW_ID@NODE"),
    ("not-a-workflow", ("-clear", "0000001-000000000000000-C@a", "-user", "ann"), "WORKFLOW_ID@NODE"),
    ("no-status", ("-mark", "{wf}@b", "-user", "ann"), "-mark needs -status OK or ERROR"),
    ("bad-status", ("-mark", "{wf}@b", "-status", "KILLED", "-user", "ann"), "not 'KILLED'"),
    ("status-with-clear", ("-clear", "{wf}@a", "-status", "OK", "-user", "ann"), "-status goes with -mark"),
    ("downstream-with-mark", ("-mark", "{wf}@b", "-status", "OK", "-downstream", "-user", "ann"),
     "-downstream goes with -clear"),
    ("downstream-with-kill", ("-kill", "{wf}", "-downstream", "-user", "ann"), "-downstream goes with -clear"),
    ("unknown-user", ("-mark", "{wf}@b", "-status", "OK", "-user", "nobody"), "no user 'nobody'"),
])
def test_a_refusal_is_one_line_and_changes_nothing(ann: User, bob: User, tmp_path: Path, case: str,
                                                   args: tuple[str, ...], words: str) -> None:
    """Misuse, permission and status refusals: a one-line CommandError naming the problem; no command, no node moved."""
    workflow = linear(tmp_path, ann)
    drive(rounds=1)  # a ended OK, b queued
    before, commands = snapshot(workflow), Command.objects.count()
    with pytest.raises(CommandError) as raised:
        job(*(arg.format(wf=workflow.id) for arg in args))
    message = str(raised.value)
    assert words in message and "\n" not in message, message
    assert (snapshot(workflow), Command.objects.count()) == (before, commands)
    assert WorkflowJob.objects.get(pk=workflow.pk).status == WorkflowStatus.RUNNING
