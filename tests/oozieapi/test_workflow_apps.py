"""Workflow applications on the Oozie API: an Oozie client submits workflow.xml, reads it node by node, draws it, acts on it.

Requests are those of Oozie's CLI and clients: `POST jobs?action=start` with a Hadoop
configuration naming `oozie.wf.application.path`, `job/<id>` (info with actions),
`show=definition`, `show=graph&format=svg|dot`, `PUT job/<id>?action=...`, and
`action=rerun` with a configuration body. Nodes run in this process as a worker runs them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from lxml import etree

from oozie.definitions import serialize_hadoop_configuration
from tests.oozieapi.client import Oozie, error_of
from tests.oozieapi.test_workflow_jobs import NODE_KEYS, RFC822, WORKFLOW_KEYS, launch
from tests.support.engine import run_pending_commands
from tests.workflows.api.factories import APP_PATH, drive, pipeline_app, rows, submit, write_app
from workflows.choices import NodeStatus, WorkflowStatus
from workflows.models import WorkflowJob, WorkflowNode
from xcommands.models import Command

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]

SVG = "{http://www.w3.org/2000/svg}"


def flag_of(directory: Path) -> Path:
    """The file the pipeline's `check` node needs (absent: it fails)."""
    return directory.parent / f"work-{directory.name}" / "flag"


def rerun(oozie: Oozie, job_id: str, properties: dict[str, str]) -> Any:
    """PUT job/<id>?action=rerun with a configuration body, as OozieClient.reRun sends it."""
    body = serialize_hadoop_configuration(properties)
    return oozie.client.put(f"/oozie/{oozie.version}/job/{job_id}?action=rerun", body,
                            content_type="application/xml;charset=UTF-8", headers=oozie.headers)


def graph_nodes(svg: bytes) -> dict[str, str]:
    """node name -> the status the drawing shows ('' when not reached)."""
    root = etree.fromstring(svg)
    return {g.get("data-node", ""): g.get("data-status", "") for g in root.iter(f"{SVG}g") if g.get("class") == "node"}


# ---- submit, info, list ------------------------------------------------------------------------


def test_submit_with_action_start_runs_the_application_and_info_lists_its_nodes_as_oozie_does(ann: User, tmp_path: Path) -> None:
    """201 {"id": "...-W"}; info answers WorkflowJobBean's keys and one WorkflowActionBean per node, in the order they ran."""
    directory = pipeline_app(tmp_path)
    oozie = Oozie(ann)
    response = oozie.submit({APP_PATH: str(directory)}, action="start")
    assert response.status_code == 201, error_of(response)
    job_id = response.json()["id"]
    assert job_id.endswith("-W") and set(response.json()) == {"id"}
    assert WorkflowJob.objects.get(pk=job_id).status == WorkflowStatus.RUNNING
    drive()

    info = oozie.get(f"job/{job_id}").json()
    assert set(info) == WORKFLOW_KEYS
    assert (info["status"], info["appName"], info["appPath"], info["user"]) == ("KILLED", "nightly", str(directory), "ann")
    assert info["parentId"] is None and RFC822.match(info["endTime"])
    conf = etree.fromstring(info["conf"].encode())
    assert {p.findtext("name"): p.findtext("value") for p in conf}[APP_PATH] == str(directory)
    actions = {action["name"]: action for action in info["actions"]}
    assert all(set(action) == NODE_KEYS for action in info["actions"])
    assert info["actions"][0]["name"] == ":start:" and actions[":start:"]["type"] == ":START:"
    assert set(actions) == {":start:", "prepare", "split", "extract", "check", "merge", "fail"}  # decide, end: not reached
    assert [actions[n]["type"] for n in ("prepare", "split", "extract", "merge", "fail")] == [
        "fs", ":FORK:", "celery", ":JOIN:", ":KILL:"]
    extract, check = actions["extract"], actions["check"]
    assert (extract["status"], extract["transition"], extract["externalStatus"]) == ("OK", "merge", "SUCCEEDED")
    assert extract["data"] == f"path={flag_of(directory).parent / 'out' / 'part-0'}\n"  # captured output, properties text
    assert extract["externalId"] and extract["id"] == f"{job_id}@extract"
    assert (check["status"], check["transition"], check["errorCode"]) == ("ERROR", "fail", "FileNotFoundError")
    assert "is not there" in check["errorMessage"] and check["data"] is None
    assert actions["split"]["transition"] == "extract,check" and actions["split"]["externalId"] is None
    assert actions["merge"]["status"] == "KILLED"  # it waited for check, which never came
    conf_xml = etree.fromstring(extract["conf"].encode())  # the node's element of workflow.xml
    assert conf_xml.get("name") == "extract" and "examples.touch" in extract["conf"]
    assert RFC822.match(extract["startTime"]) and RFC822.match(extract["endTime"])

    node = oozie.get(f"job/{job_id}@check").json()
    assert node["name"] == "check" and node["status"] == "ERROR" and node["transition"] == "fail"


def test_without_action_start_it_waits_in_prep_until_the_start_verb(ann: User, tmp_path: Path) -> None:
    """Oozie's submit-then-start: PREP with no node; `PUT action=start` runs it (a second start changes nothing)."""
    directory = pipeline_app(tmp_path)
    flag_of(directory).parent.mkdir(parents=True)
    flag_of(directory).touch()
    oozie = Oozie(ann)
    job_id = oozie.submit({APP_PATH: str(directory)}).json()["id"]
    assert WorkflowJob.objects.get(pk=job_id).status == WorkflowStatus.PREP
    assert not WorkflowNode.objects.filter(workflow_id=job_id).exists()
    assert oozie.get(f"job/{job_id}").json()["actions"] == []
    assert oozie.put(f"job/{job_id}", action="start").status_code == 200
    drive()
    assert WorkflowJob.objects.get(pk=job_id).status == WorkflowStatus.SUCCEEDED
    assert oozie.put(f"job/{job_id}", action="start").status_code == 200  # not PREP: nothing to do
    assert WorkflowJob.objects.get(pk=job_id).status == WorkflowStatus.SUCCEEDED


def test_the_workflow_list_has_applications_and_coordinator_runs(ann: User, bob: User, tmp_path: Path) -> None:
    """`jobs?jobtype=wf` lists both kinds newest first; `filter=user=...` narrows; the list has no conf or actions."""
    coordinator = launch(ann)
    application = submit(pipeline_app(tmp_path), ann)
    other = submit(pipeline_app(tmp_path, "other"), bob)
    listed = Oozie(ann).get("jobs", jobtype="wf", len="50").json()
    ids = [w["id"] for w in listed["workflows"]]
    assert listed["total"] == 3 and ids[:2] == [other.id, application.id]
    assert coordinator.actions.get(number=1).external_id in ids
    mine = Oozie(ann).get("jobs", jobtype="wf", filter="user=bob").json()
    assert [w["id"] for w in mine["workflows"]] == [other.id]
    assert all(w["conf"] is None and w["actions"] == [] for w in listed["workflows"])
    assert next(w for w in listed["workflows"] if w["id"] == application.id)["appName"] == "nightly"


def test_definition_is_the_workflow_xml_as_submitted(ann: User, tmp_path: Path) -> None:
    """`show=definition` answers the stored workflow.xml byte for byte (a one-task run keeps its generated one)."""
    directory = pipeline_app(tmp_path)
    workflow = submit(directory, ann)
    response = Oozie(ann).get(f"job/{workflow.id}", show="definition")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/xml")
    assert response.content.decode() == (directory / "workflow.xml").read_text()


# ---- the graph -----------------------------------------------------------------------------------


def test_the_graph_as_svg_colours_nodes_by_status_and_shows_kill_nodes_as_oozie_does(ann: User, tmp_path: Path) -> None:
    """SVG with one box per node and its status; an unreached kill node only with show-kill; error edges dashed."""
    ok_dir = pipeline_app(tmp_path, "good")
    flag_of(ok_dir).parent.mkdir(parents=True)
    flag_of(ok_dir).touch()
    good = submit(ok_dir, ann)
    bad = submit(pipeline_app(tmp_path, "bad"), ann)
    drive()
    oozie = Oozie(ann)

    response = oozie.get(f"job/{good.id}", show="graph", format="svg")
    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
    shown = graph_nodes(response.content)
    assert "fail" not in shown  # not reached, and no show-kill
    assert shown == {":start:": "OK", "prepare": "OK", "split": "OK", "extract": "OK", "check": "OK", "merge": "OK",
                     "decide": "OK", "end": "OK"}
    with_kill = graph_nodes(oozie.get(f"job/{good.id}", show="graph", format="svg", **{"show-kill": "true"}).content)
    assert with_kill["fail"] == ""

    failed = etree.fromstring(oozie.get(f"job/{bad.id}", show="graph", format="svg").content)
    statuses = {g.get("data-node", ""): g.get("data-status", "") for g in failed.iter(f"{SVG}g") if g.get("class") == "node"}
    assert statuses["check"] == "ERROR" and statuses["fail"] == "OK" and statuses["end"] == ""  # the kill it reached
    fills = {g.get("data-node", ""): g[1].get("fill") for g in failed.iter(f"{SVG}g") if g.get("class") == "node"}
    assert fills["check"] == "#c62828" and fills["extract"] == "#2e7d32" and fills["end"] == "#ffffff"
    edges = [p for p in failed.iter(f"{SVG}path") if "edge" in (p.get("class") or "")]
    errors = [p for p in edges if "edge-error" in p.get("class", "")]
    assert errors and all(p.get("stroke-dasharray") for p in errors)
    taken = {(p.get("data-source"), p.get("data-target")) for p in edges if "taken" in p.get("class", "")}
    assert ("check", "fail") in taken and ("split", "extract") in taken and ("merge", "decide") not in taken


def test_the_graph_as_dot_and_the_formats_refused(ann: User, tmp_path: Path) -> None:
    """format=dot is Graphviz text; png (Oozie's default) is a 400 saying which formats there are; a task: run has no graph."""
    workflow = submit(pipeline_app(tmp_path), ann)
    oozie = Oozie(ann)
    dot = oozie.get(f"job/{workflow.id}", show="graph", format="dot")
    assert dot.status_code == 200 and dot["Content-Type"].startswith("text/plain")
    text = dot.content.decode()
    assert text.startswith('digraph "nightly" {') and '"split" -> "extract"' in text and '"check" -> "fail"' not in text
    for fmt in ({"format": "png"}, {}, {"format": "gif"}):
        status, code, message = error_of(oozie.get(f"job/{workflow.id}", show="graph", **fmt))
        assert (status, code) == (400, "E0303") and "format=svg or format=dot" in message
    task_run = launch(ann).actions.get(number=1).external_id
    status, code, message = error_of(oozie.get(f"job/{task_run}", show="graph", format="svg"))
    assert (status, code) == (400, "E0303") and "task:examples.noop" in message


# ---- verbs -----------------------------------------------------------------------------------------


def test_suspend_resume_and_kill_of_a_running_application(ann: User, tmp_path: Path) -> None:
    """The verbs act through commands: suspended nodes wait, resume sends them, kill ends the job and its live nodes."""
    workflow = submit(pipeline_app(tmp_path), ann)  # prepare is queued
    oozie = Oozie(ann)
    assert oozie.put(f"job/{workflow.id}", action="suspend").status_code == 200
    drive()
    assert WorkflowJob.objects.get(pk=workflow.pk).status == WorkflowStatus.SUSPENDED
    assert WorkflowNode.objects.get(workflow=workflow, name="prepare").status == NodeStatus.PREP  # not claimed
    assert oozie.put(f"job/{workflow.id}", action="resume").status_code == 200
    run_pending_commands()
    assert WorkflowJob.objects.get(pk=workflow.pk).status == WorkflowStatus.RUNNING
    assert oozie.put(f"job/{workflow.id}", action="kill").status_code == 200
    run_pending_commands()
    killed = WorkflowJob.objects.get(pk=workflow.pk)
    assert killed.status == WorkflowStatus.KILLED and "ann" in killed.error_message
    assert not WorkflowNode.objects.filter(workflow=workflow, status__in=[NodeStatus.PREP, NodeStatus.RUNNING]).exists()
    assert oozie.put(f"job/{workflow.id}", action="kill").status_code == 200  # ended: Oozie's silent no-op


def test_rerun_from_the_failed_nodes_keeps_what_succeeded(ann: User, tmp_path: Path) -> None:
    """`action=rerun` with oozie.wf.rerun.failnodes=true: extract keeps its run, check runs again and the job succeeds."""
    directory = pipeline_app(tmp_path)
    workflow = submit(directory, ann)
    drive()
    before = WorkflowNode.objects.get(workflow=workflow, name="extract")
    flag_of(directory).touch()  # the cause of the failure is fixed
    response = rerun(Oozie(ann), workflow.id, {"oozie.wf.rerun.failnodes": "true"})
    assert response.status_code == 200, error_of(response)
    drive()
    again = WorkflowJob.objects.get(pk=workflow.pk)
    assert (again.status, again.run) == (WorkflowStatus.SUCCEEDED, 1)
    extract = WorkflowNode.objects.get(workflow=workflow, name="extract")
    assert extract.started_at == before.started_at and extract.task_id == before.task_id  # skipped, not run again
    assert WorkflowNode.objects.get(workflow=workflow, name="check").status == NodeStatus.OK


def test_rerun_with_skip_nodes_and_its_refusals(ann: User, bob: User, tmp_path: Path) -> None:
    """skip.nodes that succeeded are kept; both properties E0404, a running job E0805, a node that failed E0807,
    someone else's job 403 E0509; no refusal queues anything."""
    directory = pipeline_app(tmp_path)
    workflow = submit(directory, ann)
    oozie = Oozie(ann)

    def queued() -> int:
        return Command.objects.filter(params__workflow_id=workflow.id, name__icontains="rerun").count()

    status, code, message = error_of(rerun(oozie, workflow.id, {"oozie.wf.rerun.failnodes": "true"}))
    assert (status, code) == (400, "E0805") and "RUNNING" in message
    drive()
    cases = [
        (oozie, {"oozie.wf.rerun.failnodes": "true", "oozie.wf.rerun.skip.nodes": "extract"}, 400, "E0404"),
        (oozie, {"oozie.wf.rerun.skip.nodes": "check"}, 400, "E0807"),
        (oozie, {"oozie.wf.rerun.skip.nodes": "nowhere"}, 400, "E0807"),
        (oozie, {"oozie.wf.rerun.failnodes": "maybe"}, 400, "E0303"),
        (Oozie(bob), {"oozie.wf.rerun.failnodes": "true"}, 403, "E0509"),
    ]
    for client, properties, http, expected in cases:
        status, code, message = error_of(rerun(client, workflow.id, properties))
        assert (status, code) == (http, expected), (properties, message)
        assert "\n" not in message
    assert queued() == 0 and WorkflowJob.objects.get(pk=workflow.pk).status == WorkflowStatus.KILLED
    flag_of(directory).touch()
    assert rerun(oozie, workflow.id, {"oozie.wf.rerun.skip.nodes": "prepare,extract"}).status_code == 200
    drive()
    assert WorkflowJob.objects.get(pk=workflow.pk).status == WorkflowStatus.SUCCEEDED


# ---- bad input, permissions -------------------------------------------------------------------------


HOSTILE = {
    "malformed": ("<workflow-app name='x' xmlns='uri:oozie:workflow:1.0'><start to='end'/>", "E0700"),
    "entities": ('<!DOCTYPE x [<!ENTITY e "boom">]><workflow-app name="&e;" xmlns="uri:oozie:workflow:1.0">'
                 '<start to="end"/><end name="end"/></workflow-app>', "E0700"),
    "schema": ('<workflow-app name="x" xmlns="uri:oozie:workflow:1.0"><start to="end"/><nope/><end name="end"/>'
               "</workflow-app>", "E0701"),
    "cycle": ('<workflow-app name="x" xmlns="uri:oozie:workflow:1.0"><start to="a"/>'
              '<decision name="a"><switch><case to="b">${true}</case><default to="end"/></switch></decision>'
              '<decision name="b"><switch><case to="a">${true}</case><default to="end"/></switch></decision>'
              '<end name="end"/></workflow-app>', "E0710"),
    "hadoop": ('<workflow-app name="x" xmlns="uri:oozie:workflow:1.0"><start to="mr"/><action name="mr"><map-reduce>'
               '<resource-manager>rm</resource-manager><name-node>nn</name-node></map-reduce><ok to="end"/>'
               '<error to="end"/></action><end name="end"/></workflow-app>', "E0802"),
    "unresolved": ('<workflow-app name="x" xmlns="uri:oozie:workflow:1.0"><start to="fs"/><action name="fs"><fs>'
                   '<mkdir path="${nowhere}"/></fs><ok to="end"/><error to="end"/></action><end name="end"/>'
                   "</workflow-app>", "E1004"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_refused_application_is_a_400_with_oozies_code_in_one_line_and_nothing_stored(
    ann: User, tmp_path: Path, case: str,
) -> None:
    """Malformed or hostile XML, a schema error, a cycle, a Hadoop action, an unresolved variable: refused, nothing stored."""
    xml, expected = HOSTILE[case]
    directory = write_app(tmp_path / case, xml)
    before = (rows(), Command.objects.count())
    response = Oozie(ann).submit({APP_PATH: str(directory)}, action="start")
    status, code, message = error_of(response)
    assert (status, code) == (400, expected), message
    assert message.startswith(f"{expected}: ") and "\n" not in message and "\n" not in response.json()["error"]["message"]
    assert (rows(), Command.objects.count()) == before


def test_no_or_unreadable_application_is_refused(ann: User, tmp_path: Path) -> None:
    """An empty path is E0405; a missing directory E0504; one without workflow.xml E0505; outside the roots refused;
    a workflow path with a coordinator path E0302; dryrun E1008. Nothing stored."""
    (tmp_path / "empty").mkdir()
    oozie = Oozie(ann)
    before = rows()
    cases = [
        ({APP_PATH: ""}, None, "E0405", "application"),
        ({APP_PATH: str(tmp_path / "absent")}, "start", "E0504", "absent"),
        ({APP_PATH: str(tmp_path / "empty")}, "start", "E0505", "empty"),
        ({APP_PATH: "/etc"}, "start", "E0710", "application roots"),
        ({APP_PATH: str(tmp_path), "oozie.coord.application.path": str(tmp_path)}, None, "E0302", "Multiple"),
        ({APP_PATH: str(pipeline_app(tmp_path))}, "dryrun", "E1008", "dryrun"),
    ]
    for properties, action, expected, named in cases:
        status, code, message = error_of(oozie.submit(properties, action=action))
        assert (status, code) == (400, expected), (properties, message)
        assert named in message
    assert rows() == before


def test_who_may_read_and_act_on_an_application_workflow(ann: User, bob: User, admin: User, tmp_path: Path) -> None:
    """Its owner and admins act; another user reads (unless reads are restricted) but may not act (403 E0509);
    anonymous callers get 401; user.name naming someone else is refused at submission."""
    workflow = submit(pipeline_app(tmp_path), ann)
    assert Oozie(bob).get(f"job/{workflow.id}").status_code == 200
    for verb in ("kill", "suspend", "start"):
        status, code, message = error_of(Oozie(bob).put(f"job/{workflow.id}", action=verb))
        assert (status, code) == (403, "E0509") and workflow.id in message
    assert error_of(Oozie(None).get(f"job/{workflow.id}"))[:2] == (401, "E0500")
    assert error_of(Oozie(None).put(f"job/{workflow.id}", action="kill"))[:2] == (401, "E0500")
    with override_settings(COORD_RESTRICT_READS=True):
        assert error_of(Oozie(bob).get(f"job/{workflow.id}", show="graph", format="svg"))[:2] == (403, "E0509")
        assert Oozie(bob).get("jobs", jobtype="wf").json()["total"] == 0
        assert Oozie(admin).get("jobs", jobtype="wf").json()["total"] == 1
    assert not Command.objects.filter(params__workflow_id=workflow.id).exists()
    assert Oozie(admin).put(f"job/{workflow.id}", action="kill").status_code == 200
    drive()
    assert WorkflowJob.objects.get(pk=workflow.pk).status == WorkflowStatus.KILLED
    before = rows()
    status, code, _ = error_of(Oozie(bob).submit({APP_PATH: str(pipeline_app(tmp_path, "x")), "user.name": "ann"}))
    assert (status, code, rows()) == (403, "E0500", before)


def test_a_sub_workflow_names_its_parent_answers_to_its_root_and_is_rerun_through_it(
    ann: User, bob: User, tmp_path: Path,
) -> None:
    """parentId is the parent workflow (as Oozie sets it); bob may not act on it (403); rerunning it is E0755."""
    child_dir = write_app(tmp_path / "child", '<workflow-app name="child" xmlns="uri:oozie:workflow:1.0">'
                                              '<start to="end"/><end name="end"/></workflow-app>')
    parent_dir = write_app(tmp_path / "parent", (
        '<workflow-app name="parent" xmlns="uri:oozie:workflow:1.0"><start to="sub"/><action name="sub"><sub-workflow>'
        f"<app-path>{child_dir}</app-path></sub-workflow><ok to=\"end\"/><error to=\"fail\"/></action>"
        '<kill name="fail"><message>x</message></kill><end name="end"/></workflow-app>'))
    parent = submit(parent_dir, ann)
    drive()
    child = WorkflowJob.objects.get(parent_workflow=parent)
    oozie = Oozie(ann)
    info = oozie.get(f"job/{child.id}").json()
    assert (info["parentId"], info["status"], info["user"]) == (parent.id, "SUCCEEDED", "ann")
    node = oozie.get(f"job/{parent.id}@sub").json()
    assert (node["type"], node["externalId"], node["externalStatus"]) == ("sub-workflow", child.id, "SUCCEEDED")
    assert error_of(Oozie(bob).put(f"job/{child.id}", action="kill"))[:2] == (403, "E0509")
    status, code, message = error_of(rerun(oozie, child.id, {"oozie.wf.rerun.failnodes": "true"}))
    assert (status, code) == (400, "E0755") and parent.id in message
    assert rerun(oozie, parent.id, {}).status_code == 200  # the top workflow reruns (everything: no skip list)
    drive()
    assert WorkflowJob.objects.get(pk=parent.pk).run == 1
