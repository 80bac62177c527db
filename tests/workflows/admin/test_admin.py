"""The workflow admin: a job's page draws its DAG coloured by node status and lists each node's runs; verbs as actions.

Pages are read only; the bulk actions call workflows.services with the APIs' permission check.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission, User
from django.test import Client
from lxml import etree, html

from kernel.display import status_colour
from tests.oozieapi.test_workflow_jobs import launch
from tests.workflows.api.factories import WF, drive, pipeline_app, submit, write_app
from workflows.choices import WorkflowStatus
from workflows.models import WorkflowJob, WorkflowNode
from xcommands.models import Command

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]

SVG = "{http://www.w3.org/2000/svg}"
LIST = "/admin/workflows/workflowjob/"


def page(workflow_id: str) -> str:
    return f"{LIST}{quote(workflow_id)}/change/"


def operator(client: Client, *, superuser: bool = True) -> User:
    """Log the client in: a superuser, or a staff user who may view and change workflows but is no job admin."""
    if superuser:
        user = User.objects.create_superuser("operator", "operator@example.com", "pw")
    else:
        user = User.objects.create_user("helper", password="pw", is_staff=True)
        user.user_permissions.add(*Permission.objects.filter(codename__in=["view_workflowjob", "change_workflowjob"]))
    client.force_login(user)
    return user


def test_the_page_draws_the_dag_coloured_by_status_and_lists_every_nodes_runs(client: Client, ann: User, tmp_path: Path) -> None:
    """An inline SVG with a box per node (status colour), error edges dashed; a row per node that ran: its status,
    transition, attempts, error and captured output."""
    workflow = submit(pipeline_app(tmp_path), ann)
    drive()
    operator(client)
    response = client.get(page(workflow.id))
    assert response.status_code == 200
    document = cast(html.HtmlElement, html.fromstring(response.content))
    svg = document.find_class("wf-graph")[0].getchildren()
    assert len(svg) == 1 and svg[0].tag == "svg"
    tree = etree.fromstring(etree.tostring(svg[0]))
    boxes = {g.get("data-node", ""): g for g in tree.iter() if g.get("class") == "node"}
    assert set(boxes) == {":start:", "prepare", "split", "extract", "check", "merge", "decide", "end", "fail"}
    colour = {name: next(c for c in g if c.tag.endswith("rect")).get("fill") for name, g in boxes.items()}
    assert colour["extract"] == "#2e7d32" and colour["check"] == "#c62828" and colour["decide"] == "#ffffff"
    assert colour["merge"] == status_colour("KILLED")  # it waited for check
    assert any("edge-error" in (p.get("class") or "") and p.get("stroke-dasharray")
               for p in tree.iter() if str(p.tag).endswith("path"))
    rows = {row.get("data-node", ""): row for row in document.find_class("wf-nodes")[0].iter("tr") if row.get("data-node")}
    assert set(rows) == {":start:", "prepare", "split", "extract", "check", "merge", "fail"}
    check = rows["check"].text_content()
    assert "FileNotFoundError" in check and "attempt 1 on w1@host" in check and "fail" in check
    assert "path=" in rows["extract"].text_content() and "part-0" in rows["extract"].text_content()
    assert (tmp_path / "nightly" / "workflow.xml").read_text() in document.text_content()  # the XML, shown as text


def test_a_coordinator_run_links_its_action_and_a_sub_workflow_links_both_ways(client: Client, ann: User, tmp_path: Path) -> None:
    """A task: run shows no graph but links its coordinator action; a sub-workflow node links its child, the child its parent."""
    coordinator = launch(ann)
    run_id = coordinator.actions.get(number=1).external_id
    child_dir = write_app(tmp_path / "child", f'<workflow-app name="child" {WF}><start to="end"/><end name="end"/></workflow-app>')
    parent_dir = write_app(tmp_path / "parent", (
        f'<workflow-app name="parent" {WF}><start to="sub"/><action name="sub"><sub-workflow>'
        f"<app-path>{child_dir}</app-path><propagate-configuration/></sub-workflow>"
        '<ok to="end"/><error to="fail"/></action><kill name="fail"><message>x</message></kill>'
        '<end name="end"/></workflow-app>'))
    parent = submit(parent_dir, ann)
    drive()
    child = WorkflowJob.objects.get(parent_workflow=parent)
    assert (WorkflowJob.objects.get(pk=parent.pk).status, child.status) == (WorkflowStatus.SUCCEEDED, WorkflowStatus.SUCCEEDED)
    operator(client)
    text = client.get(page(run_id)).content.decode()
    assert "nothing to draw" in text and f"/admin/coordinators/coordinatoraction/{quote(coordinator.id + '@1')}/change/" in text
    text = client.get(page(parent.id)).content.decode()
    assert f'href="{page(child.id)}"' in text
    text = client.get(page(child.id)).content.decode()
    assert f'href="{page(parent.id)}"' in text and "node sub" in text


def test_kill_and_rerun_failed_nodes_as_admin_actions(client: Client, ann: User, tmp_path: Path) -> None:
    """Kill queues through the services; rerun of the failed nodes reruns check only; the message names each workflow."""
    directory = pipeline_app(tmp_path)
    running = submit(pipeline_app(tmp_path, "other"), ann)
    failed = submit(directory, ann)
    drive(rounds=1)  # prepare of both ran once
    operator(client)
    response = client.post(LIST, {"action": "kill_workflows", "_selected_action": [running.id]}, follow=True)
    assert f"Kill queued for 1 workflow(s): {running.id}" in response.content.decode()
    drive()
    assert WorkflowJob.objects.get(pk=running.pk).status == WorkflowStatus.KILLED
    assert WorkflowJob.objects.get(pk=failed.pk).status == WorkflowStatus.KILLED  # check failed
    (directory.parent / "work-nightly" / "flag").touch()
    extract = WorkflowNode.objects.get(workflow=failed, name="extract")
    response = client.post(LIST, {"action": "rerun_failed_nodes", "_selected_action": [failed.id]}, follow=True)
    assert f"Rerun queued for 1 workflow(s): {failed.id}" in response.content.decode()
    drive()
    assert WorkflowJob.objects.get(pk=failed.pk).status == WorkflowStatus.SUCCEEDED
    assert WorkflowNode.objects.get(workflow=failed, name="extract").task_id == extract.task_id


def test_an_operator_who_is_not_a_job_admin_cannot_act_on_someone_elses_workflow(client: Client, ann: User, tmp_path: Path) -> None:
    """The admin action goes through the same permission check as the APIs: refused, said, nothing queued."""
    workflow = submit(pipeline_app(tmp_path), ann)
    operator(client, superuser=False)
    before = Command.objects.count()
    response = client.post(LIST, {"action": "kill_workflows", "_selected_action": [workflow.id]}, follow=True)
    text = response.content.decode()
    assert "Kill not done for" in text and "may not modify" in text
    assert Command.objects.count() == before and WorkflowJob.objects.get(pk=workflow.pk).status == WorkflowStatus.RUNNING
    assert client.get(page(workflow.id)).status_code == 200  # reading is fine
