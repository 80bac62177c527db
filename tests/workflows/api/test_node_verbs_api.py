"""Clear and mark one workflow node through the native API: the services the admin's node buttons call.

`POST /api/v1/workflows/{id}/nodes/{node}/clear/` `{"downstream": bool}` and `.../mark/`
`{"status": "OK"|"ERROR"}` queue a node command as the caller (202 with what it will do). Who
may not modify the workflow gets 403, an impossible verb 409, an unknown node 404, a bad body
400: none of them queues anything or changes a node.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.coordinators.api.factories import api
from tests.support.engine import run_pending_commands
from tests.workflows.api.factories import celery, drive, submit, write_app
from workflows.choices import NodeStatus, WorkflowStatus
from workflows.models import WorkflowJob, WorkflowNode
from xcommands.models import Command

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]

URL = "/api/v1/workflows/"
WF = 'xmlns="uri:oozie:workflow:1.0"'


def linear(tmp_path: Path, owner: User) -> WorkflowJob:
    """a -> b -> end (errors to the kill node `fail`), submitted by `owner` and running."""
    xml = (f'<workflow-app name="line" {WF}><start to="a"/>'
           + celery("a", "examples.noop_any", ok="b") + celery("b", "examples.noop_any", ok="end")
           + '<kill name="fail"><message>failed at ${wf:lastErrorNode()}</message></kill>'
           '<end name="end"/></workflow-app>')
    return submit(write_app(tmp_path / "line", xml), owner)


def post(account: User | None, workflow: WorkflowJob, node: str, verb: str, body: Any = None) -> Any:
    return api(account).post(f"{URL}{workflow.id}/nodes/{node}/{verb}/", body if body is not None else {},
                             format="json")


def snapshot(workflow: WorkflowJob) -> dict[str, tuple[str, int, int]]:
    """Each node's status, attempt and number of runs recorded (a refusal changes none)."""
    return {n.name: (n.status, n.attempt, len(n.history)) for n in WorkflowNode.objects.filter(workflow=workflow)}


def node(workflow: WorkflowJob, name: str) -> WorkflowNode:
    return WorkflowNode.objects.get(workflow=workflow, name=name)


def test_mark_queues_the_command_as_the_caller_and_the_workflow_takes_the_transition(ann: User, tmp_path: Path) -> None:
    """202 with the command and the mark's effect; when it runs, b is OK, its runs name ann, the workflow SUCCEEDS."""
    workflow = linear(tmp_path, ann)
    drive(rounds=1)  # a ran, b queued
    assert node(workflow, "b").status == NodeStatus.PREP
    response = post(ann, workflow, "b", "mark", {"status": "OK"})
    assert response.status_code == 202, response.json()
    body = response.json()
    assert body["node"] == "b" and body["workflow"]["id"] == workflow.id
    assert body["effect"][0] == f"node b of {workflow.id}: PREP -> OK (attempt 1)"
    command = Command.objects.get(pk=body["command"])
    assert command.owner_id == ann.pk and command.params["status"] == "OK" and command.params["by"] == "ann"
    run_pending_commands()
    b = node(workflow, "b")
    assert (b.status, b.transition) == (NodeStatus.OK, "end")
    assert b.history[-1]["marked_by"] == "ann" and b.history[-1]["was"] == NodeStatus.PREP
    assert WorkflowJob.objects.get(pk=workflow.pk).status == WorkflowStatus.SUCCEEDED


def test_mark_error_takes_the_error_transition(ann: User, tmp_path: Path) -> None:
    """A marked ERROR goes to the kill node at once: the node carries error code MARKED, the workflow is KILLED."""
    workflow = linear(tmp_path, ann)
    response = post(ann, workflow, "a", "mark", {"status": "ERROR"})
    assert response.status_code == 202, response.json()
    run_pending_commands()
    a = node(workflow, "a")
    assert (a.status, a.transition, a.error_code) == (NodeStatus.ERROR, "fail", "MARKED")
    assert WorkflowJob.objects.get(pk=workflow.pk).status == WorkflowStatus.KILLED


@pytest.mark.parametrize(("downstream", "rerun", "kept"), [
    (False, ["a"], ["b"]),
    (True, ["a", "b"], []),
], ids=["node-only", "with-downstream"])
def test_clear_runs_the_node_again_and_keeps_or_reruns_what_follows(ann: User, tmp_path: Path, downstream: bool,
                                                                    rerun: list[str], kept: list[str]) -> None:
    """Of an ended workflow: 202 with the plan; a runs again (attempt 2), b again only with downstream; SUCCEEDED again."""
    workflow = linear(tmp_path, ann)
    drive()
    assert WorkflowJob.objects.get(pk=workflow.pk).status == WorkflowStatus.SUCCEEDED
    response = post(ann, workflow, "a", "clear", {"downstream": downstream})
    assert response.status_code == 202, response.json()
    body = response.json()
    assert (body["rerun"], body["kept"], body["stopped"]) == (rerun, kept, [])
    assert any("ended -> RUNNING" in line for line in body["effect"])
    assert Command.objects.get(pk=body["command"]).params["downstream"] is downstream
    drive()
    assert WorkflowJob.objects.get(pk=workflow.pk).status == WorkflowStatus.SUCCEEDED
    a, b = node(workflow, "a"), node(workflow, "b")
    assert a.attempt == 2 and any(entry.get("cleared_by") == "ann" for entry in a.history)
    assert b.attempt == (2 if downstream else 1)


def test_another_user_gets_403_and_nothing_is_queued(ann: User, bob: User, admin: User, tmp_path: Path) -> None:
    """bob may read ann's workflow but not act on it: 403 for both verbs (as for kill), nothing queued or changed;
    a job admin may."""
    workflow = linear(tmp_path, ann)
    drive(rounds=1)
    before, commands = snapshot(workflow), Command.objects.count()
    for verb, name, body in (("mark", "b", {"status": "OK"}), ("clear", "a", {"downstream": True})):
        response = post(bob, workflow, name, verb, body)
        assert response.status_code == 403, response.json()
        assert response.json()["detail"] == f"user 'bob' may not modify workflow job {workflow.id}"
    assert post(None, workflow, "b", "mark", {"status": "OK"}).status_code == 401
    assert (snapshot(workflow), Command.objects.count()) == (before, commands)
    assert post(admin, workflow, "b", "mark", {"status": "OK"}).status_code == 202


@pytest.mark.parametrize(("case", "name", "verb", "body", "code", "words"), [
    ("mark-an-ended-node", "a", "mark", {"status": "OK"}, 409, "already ended OK"),
    ("clear-a-queued-node", "b", "clear", {}, 409, "is PREP: mark it"),
    ("clear-a-control-node", "end", "clear", {"downstream": True}, 409, "only action nodes are cleared"),
    ("mark-a-control-node", ":start:", "mark", {"status": "ERROR"}, 409, "control node"),
    ("clear-unknown-node", "nope", "clear", {}, 404, "no such node 'nope'"),
    ("mark-unknown-node", "nope", "mark", {"status": "OK"}, 404, "no such node 'nope'"),
    ("mark-without-status", "b", "mark", {}, 400, "status"),
    ("mark-killed", "b", "mark", {"status": "KILLED"}, 400, "KILLED"),
    ("downstream-not-a-boolean", "a", "clear", {"downstream": "maybe"}, 400, "downstream"),
    ("misspelt-option", "a", "clear", {"downstrem": True}, 400, "unknown field(s) 'downstrem'"),
    ("body-not-an-object", "b", "mark", ["OK"], 400, "dictionary"),
])
def test_an_impossible_or_malformed_verb_is_refused_and_changes_nothing(
        ann: User, tmp_path: Path, case: str, name: str, verb: str, body: Any, code: int, words: str) -> None:
    """409 for what the node's status refuses, 404 for a node the workflow lacks, 400 for a bad body; one clear message."""
    workflow = linear(tmp_path, ann)
    drive(rounds=1)  # a ended OK, b queued, the workflow RUNNING
    before, commands = snapshot(workflow), Command.objects.count()
    response = post(ann, workflow, name, verb, body)
    assert response.status_code == code, response.json()
    assert words in str(response.json()), response.json()
    assert (snapshot(workflow), Command.objects.count()) == (before, commands)
    assert WorkflowJob.objects.get(pk=workflow.pk).status == WorkflowStatus.RUNNING


def test_an_ended_workflow_s_node_is_not_marked_and_an_unknown_workflow_is_404(ann: User, tmp_path: Path) -> None:
    """Marking needs a running or suspended workflow (409, pointing at clear); an unknown workflow id is 404."""
    workflow = linear(tmp_path, ann)
    drive()
    response = post(ann, workflow, "b", "mark", {"status": "ERROR"})
    assert response.status_code == 409 and "clear the node" in response.json()["detail"]
    unknown = api(ann).post(f"{URL}0000000-000000000000000-W/nodes/a/clear/", {}, format="json")
    assert unknown.status_code == 404
    assert not Command.objects.filter(name__startswith="workflows.WfNode").exists()


def test_the_openapi_schema_describes_the_node_verbs(ann: User) -> None:
    """Both verbs are documented with their body, the node path parameter and their 202/400/403/404/409 answers."""
    schema = api(ann).get("/api/schema/", {"format": "json"}).json()
    for verb, request in (("clear", "NodeClear"), ("mark", "NodeMark")):
        operation = schema["paths"][f"/api/v1/workflows/{{id}}/nodes/{{node}}/{verb}/"]["post"]
        assert {"202", "400", "403", "404", "409"} <= set(operation["responses"])
        assert {p["name"] for p in operation["parameters"]} >= {"id", "node"}
        assert operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(request)
    assert "rerun" in schema["components"]["schemas"]["NodeClearResult"]["properties"]
