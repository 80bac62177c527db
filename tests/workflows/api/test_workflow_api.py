"""The native workflow API: submit an application as JSON, list and read workflows with their nodes, act on them.

Refusals are clear 4xx answers that store and queue nothing: 400 for input the service
refuses, 403 for someone else's workflow, 401 without credentials, 404 for what the caller
may not read or does not exist, 409 for a verb the workflow's status does not allow.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from tests.coordinators.api.factories import api
from tests.oozieapi.test_workflow_jobs import launch
from tests.support.engine import run_pending_commands
from tests.workflows.api.factories import APP_PATH, drive, pipeline_app, rows, submit, write_app
from workflows.choices import NodeStatus, WorkflowStatus
from workflows.models import WorkflowJob, WorkflowNode
from xcommands.models import Command

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]

URL = "/api/v1/workflows/"


def flag_of(directory: Path) -> Path:
    return directory.parent / f"work-{directory.name}" / "flag"


def post(account: User | None, path: str, body: dict[str, Any] | None = None) -> Any:
    return api(account).post(path, body or {}, format="json")


def test_submit_runs_the_application_and_the_detail_has_every_node(ann: User, tmp_path: Path) -> None:
    """201 with the workflow (kind application, RUNNING); once run, the detail lists each node's status, transition,
    attempts, error, captured output and external id, and the definition and workflow.xml."""
    directory = pipeline_app(tmp_path)
    response = post(ann, URL, {"properties": {APP_PATH: str(directory)}})
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["id"].endswith("-W") and body["kind"] == "application" and body["status"] == "RUNNING"
    assert body["user"] == "ann" and body["configuration"]["user.name"] == "ann"
    assert [n["name"] for n in body["nodes"]] == [":start:", "prepare"]
    drive()
    detail = api(ann).get(f"{URL}{body['id']}/").json()
    assert detail["status"] == "KILLED" and detail["app_xml"] == (directory / "workflow.xml").read_text()
    assert {n["name"] for n in detail["definition"]["nodes"]} >= {"decide", "end", "fail"}
    nodes = {n["name"]: n for n in detail["nodes"]}
    assert (nodes["extract"]["status"], nodes["extract"]["transition"]) == ("OK", "merge")
    assert nodes["extract"]["data"] == {"path": str(flag_of(directory).parent / "out" / "part-0")}
    assert nodes["extract"]["task_id"] and nodes["extract"]["history"][-1]["outcome"] == "OK"
    assert nodes["prepare"]["external_status"] == "OK" and nodes["fail"]["type"] == ":KILL:"
    assert (nodes["check"]["status"], nodes["check"]["error_code"]) == ("ERROR", "FileNotFoundError")
    assert nodes["check"]["retries"] == 0 and nodes["check"]["attempt"] == 1
    assert detail["sub_workflows"] == [] and detail["coord_action"] is None


def test_start_false_keeps_it_prep_until_the_start_verb(ann: User, tmp_path: Path) -> None:
    """PREP with no node; `start` queues the start (202) and it runs; start again is 409 (not PREP)."""
    directory = pipeline_app(tmp_path)
    flag_of(directory).parent.mkdir(parents=True)
    flag_of(directory).touch()
    body = post(ann, URL, {"properties": {APP_PATH: str(directory)}, "start": False}).json()
    assert body["status"] == "PREP" and body["nodes"] == []
    response = post(ann, f"{URL}{body['id']}/start/")
    assert response.status_code == 202
    drive()
    assert WorkflowJob.objects.get(pk=body["id"]).status == WorkflowStatus.SUCCEEDED
    again = post(ann, f"{URL}{body['id']}/start/")
    assert again.status_code == 409 and "SUCCEEDED" in again.json()["detail"]


def test_the_list_filters_and_hides_what_the_caller_may_not_read(ann: User, bob: User, admin: User, tmp_path: Path) -> None:
    """Newest first, both kinds; ?status= and ?user= narrow; with restricted reads bob sees only his own."""
    coordinator = launch(ann)
    mine = submit(pipeline_app(tmp_path), ann)
    his = submit(pipeline_app(tmp_path, "his"), bob)
    listed = api(ann).get(URL).json()
    ids = [w["id"] for w in listed["results"]]
    assert ids[:2] == [his.id, mine.id] and coordinator.actions.get(number=1).external_id in ids
    kinds = {w["id"]: w["kind"] for w in listed["results"]}
    assert kinds[mine.id] == "application" and kinds[coordinator.actions.get(number=1).external_id] == "task"
    assert [w["id"] for w in api(ann).get(URL, {"user": "bob"}).json()["results"]] == [his.id]
    assert api(ann).get(URL, {"status": "nonsense"}).status_code == 400
    with override_settings(COORD_RESTRICT_READS=True):
        assert [w["id"] for w in api(bob).get(URL).json()["results"]] == [his.id]
        assert api(bob).get(f"{URL}{mine.id}/").status_code == 404
        assert len(api(admin).get(URL).json()["results"]) == 3


@pytest.mark.parametrize(
    ("case", "named"),
    [
        pytest.param("no-path", "oozie.wf.application.path", id="no-application-path"),
        pytest.param("absent", "absent", id="unreadable-application"),
        pytest.param("malformed", "workflow.xml", id="malformed-xml"),
        pytest.param("cycle", "b", id="a-cycle"),
        pytest.param("hadoop", "mr", id="a-hadoop-action"),
        pytest.param("not-a-dict", "properties", id="properties-not-an-object"),
        pytest.param("someone-else", "user.name", id="user-name-of-someone-else"),
    ],
)
def test_a_refused_submission_stores_nothing(ann: User, tmp_path: Path, case: str, named: str) -> None:
    """400 (403 for a user.name naming someone else) with a one-line message naming the problem; no row, no command."""
    malformed = write_app(tmp_path / "malformed", "<workflow-app name='x' xmlns='uri:oozie:workflow:1.0'><start to=")
    cycle = write_app(tmp_path / "cycle", (
        '<workflow-app name="x" xmlns="uri:oozie:workflow:1.0"><start to="a"/>'
        '<decision name="a"><switch><case to="b">${true}</case><default to="end"/></switch></decision>'
        '<decision name="b"><switch><case to="a">${true}</case><default to="end"/></switch></decision>'
        '<end name="end"/></workflow-app>'))
    hadoop = write_app(tmp_path / "hadoop", (
        '<workflow-app name="x" xmlns="uri:oozie:workflow:1.0"><start to="mr"/><action name="mr"><map-reduce>'
        '<resource-manager>rm</resource-manager><name-node>nn</name-node></map-reduce><ok to="end"/>'
        '<error to="end"/></action><end name="end"/></workflow-app>'))
    body: Any = {
        "no-path": {"properties": {"a": "b"}},
        "absent": {"properties": {APP_PATH: str(tmp_path / "absent")}},
        "malformed": {"properties": {APP_PATH: str(malformed)}},
        "cycle": {"properties": {APP_PATH: str(cycle)}},
        "hadoop": {"properties": {APP_PATH: str(hadoop)}},
        "not-a-dict": {"properties": "oozie.wf.application.path=/x"},
        "someone-else": {"properties": {APP_PATH: str(cycle), "user.name": "bob"}},
    }[case]
    before = (rows(), Command.objects.count())
    response = post(ann, URL, body)
    assert response.status_code == (403 if case == "someone-else" else 400), response.json()
    text = str(response.json())
    assert named in text and "\\n" not in text
    assert (rows(), Command.objects.count()) == before


def test_verbs_act_through_commands_and_refuse_what_the_status_does_not_allow(ann: User, tmp_path: Path) -> None:
    """suspend, resume and kill answer 202 and take effect when their commands run; a verb on an ended job is 409."""
    workflow = submit(pipeline_app(tmp_path), ann)
    url = f"{URL}{workflow.id}"
    assert post(ann, f"{url}/resume/").status_code == 409  # not suspended
    assert post(ann, f"{url}/suspend/").status_code == 202
    run_pending_commands()
    assert WorkflowJob.objects.get(pk=workflow.pk).status == WorkflowStatus.SUSPENDED
    assert post(ann, f"{url}/resume/").status_code == 202
    run_pending_commands()
    response = post(ann, f"{url}/kill/")
    assert response.status_code == 202 and response.json()["id"] == workflow.id
    run_pending_commands()
    assert WorkflowJob.objects.get(pk=workflow.pk).status == WorkflowStatus.KILLED
    assert not WorkflowNode.objects.filter(workflow=workflow, status__in=[NodeStatus.PREP, NodeStatus.RUNNING]).exists()
    conflict = post(ann, f"{url}/kill/")
    assert conflict.status_code == 409 and "KILLED" in conflict.json()["detail"]


def test_rerun_failed_nodes_and_its_refusals(ann: User, bob: User, tmp_path: Path) -> None:
    """fail_nodes reruns what failed (extract keeps its run); a running job 409, both options 400, unknown skip node 400,
    bob 403, anonymous 401; no refusal queues anything."""
    directory = pipeline_app(tmp_path)
    workflow = submit(directory, ann)
    url = f"{URL}{workflow.id}/rerun/"
    assert post(ann, url, {"fail_nodes": True}).status_code == 409
    drive()
    before = Command.objects.count()
    assert post(ann, url, {"fail_nodes": True, "skip_nodes": ["extract"]}).status_code == 400
    response = post(ann, url, {"skip_nodes": ["check"]})
    assert response.status_code == 400 and "check" in response.json()["detail"]
    assert post(ann, url, {"skip_nodes": "extract"}).status_code == 400  # not a list
    assert post(bob, url, {"fail_nodes": True}).status_code == 403
    assert post(None, url, {"fail_nodes": True}).status_code == 401
    assert post(bob, f"{URL}{workflow.id}/kill/").status_code == 403
    assert Command.objects.count() == before
    extract = WorkflowNode.objects.get(workflow=workflow, name="extract")
    flag_of(directory).touch()
    response = post(ann, url, {"fail_nodes": True})
    assert response.status_code == 202, response.json()
    drive()
    again = WorkflowJob.objects.get(pk=workflow.pk)
    assert (again.status, again.run) == (WorkflowStatus.SUCCEEDED, 1)
    assert WorkflowNode.objects.get(workflow=workflow, name="extract").task_id == extract.task_id


def test_the_detail_and_verbs_answer_404_for_an_unknown_workflow_and_401_anonymously(ann: User) -> None:
    """Unknown ids are 404 (nothing queued); without credentials everything is 401."""
    assert api(ann).get(f"{URL}0000000-000000000000000-W/").status_code == 404
    assert post(ann, f"{URL}0000000-000000000000000-W/kill/").status_code == 404
    assert api(None).get(URL).status_code == 401
    assert post(None, URL, {"properties": {APP_PATH: "/x"}}).status_code == 401
    assert not Command.objects.exists()


def test_the_openapi_schema_describes_the_workflow_api(ann: User) -> None:
    """drf-spectacular's schema has the collection, the detail, submit and each verb."""
    schema = api(ann).get("/api/schema/", {"format": "json"}).json()
    paths = schema["paths"]
    assert {"get", "post"} <= set(paths["/api/v1/workflows/"])
    for verb in ("kill", "suspend", "resume", "start", "rerun"):
        assert "post" in paths[f"/api/v1/workflows/{{id}}/{verb}/"]
    assert "WorkflowSubmission" in schema["components"]["schemas"]
    assert api(ann).get("/api/v1/").json()["workflows"].endswith("/api/v1/workflows/")
