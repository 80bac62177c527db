"""Buttons on a workflow job's page: the job's verbs and each node's clear and mark, through workflows.services.

Allowed verbs follow the statuses; the confirmation names the node's move; the POST queues the
node command as the operator; a staff user who may not act on the workflow gets a 403.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User
from django.test import Client
from lxml import html

from tests.support.engine import run_pending_commands
from tests.support.users import staff
from tests.workflows.test_engine import app, celery, drive, submit
from workflows.choices import NodeStatus, WorkflowStatus
from workflows.models import WorkflowJob, WorkflowNode
from xcommands.models import Command

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]

LIST = "/admin/workflows/workflowjob/"


@pytest.fixture
def operator(client: Client) -> Client:
    User.objects.create_superuser("operator", "operator@example.com", "pw")
    client.login(username="operator", password="pw")
    return client


def linear(tmp_path: Path) -> WorkflowJob:
    return submit(app(tmp_path, celery("a", "examples.noop_any", ok="b") + celery("b", "examples.noop_any", ok="end")))


def verbs_of(client: Client, workflow: WorkflowJob) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """The job's buttons and each node's: verb -> '' (enabled) or the reason it is disabled."""
    response = client.get(f"{LIST}{quote(workflow.pk)}/change/")
    assert response.status_code == 200
    document = cast(html.HtmlElement, html.fromstring(response.content))

    def read(element: html.HtmlElement) -> dict[str, str]:
        return {e.get("data-verb", ""): (e.get("title", "") if "disabled" in e.get("class", "") else "")
                for e in element.find_class("object-verb")}

    bars = document.find_class("object-verbs")
    rows = {row.get("data-node", ""): read(row) for row in document.xpath('//tr[@data-node]')}
    return (read(bars[0]) if bars else {}), {name: found for name, found in rows.items() if found}


def node_url(workflow: WorkflowJob, verb: str, node: str) -> str:
    return f"{LIST}{quote(workflow.pk)}/verb/{verb}/?node={node}"


def test_a_running_workflow_offers_suspend_and_kill_and_its_queued_node_the_marks(operator: Client,
                                                                                   tmp_path: Path) -> None:
    """RUNNING: suspend and kill, resume disabled; node a (PREP) may be marked, not cleared; control nodes have none."""
    workflow = linear(tmp_path)
    job, nodes = verbs_of(operator, workflow)
    assert {verb for verb, reason in job.items() if not reason} == {"suspend", "kill"}
    assert "is RUNNING" in job["resume"] and "only an ended job" in job["rerun"]
    assert set(nodes) == {"a"}
    assert nodes["a"]["mark-ok"] == "" and nodes["a"]["mark-error"] == ""
    assert "is PREP: mark it" in nodes["a"]["clear"]


def test_mark_ok_confirms_the_node_s_move_then_queues_the_command_and_the_workflow_goes_on(operator: Client,
                                                                                            tmp_path: Path) -> None:
    """The page names `PREP -> OK` and the transition; the POST queues the command as the operator; b runs next."""
    workflow = linear(tmp_path)
    confirm = operator.get(node_url(workflow, "mark-ok", "a")).content.decode()
    assert f"node a of {workflow.pk}: PREP -&gt; OK (attempt 1)" in confirm
    assert "takes its ok transition to b" in confirm and 'name="node" value="a"' in confirm
    response = operator.post(f"{LIST}{quote(workflow.pk)}/verb/mark-ok/", {"node": "a", "confirm": "yes"}, follow=True)
    assert "Mark OK of node a" in response.content.decode() and "queued as command" in response.content.decode()
    command = Command.objects.get(name="workflows.WfNodeMarkXCommand")
    assert command.owner is not None and command.owner.username == "operator"
    run_pending_commands()
    a = WorkflowNode.objects.get(workflow=workflow, name="a")
    assert (a.status, a.history[-1]["marked_by"]) == (NodeStatus.OK, "operator")
    assert WorkflowNode.objects.get(workflow=workflow, name="b").status == NodeStatus.PREP


def test_clear_with_downstream_of_an_ended_workflow_confirms_and_runs_the_nodes_again(operator: Client,
                                                                                      tmp_path: Path) -> None:
    """SUCCEEDED: clear is offered, marks are not; the confirmation lists what runs again; the workflow ends again."""
    workflow = linear(tmp_path)
    drive()
    job, nodes = verbs_of(operator, workflow)
    assert nodes["a"]["clear-downstream"] == "" and "SUCCEEDED" in nodes["a"]["mark-ok"]
    confirm = operator.get(node_url(workflow, "clear-downstream", "a")).content.decode()
    assert "ended -&gt; RUNNING" in confirm and "run again when reached: b" in confirm
    operator.post(f"{LIST}{quote(workflow.pk)}/verb/clear-downstream/", {"node": "a", "confirm": "yes"})
    run_pending_commands()
    drive()
    workflow.refresh_from_db()
    assert workflow.status == WorkflowStatus.SUCCEEDED
    assert list(WorkflowNode.objects.filter(workflow=workflow, name__in=["a", "b"]).order_by("name")
                .values_list("attempt", flat=True)) == [2, 2]


def test_an_impossible_node_verb_is_refused_with_409_and_nothing_is_queued(operator: Client, tmp_path: Path) -> None:
    """Clear of a queued node: the reason on the page; no command."""
    workflow = linear(tmp_path)
    response = operator.post(f"{LIST}{quote(workflow.pk)}/verb/clear/", {"node": "a", "confirm": "yes"})
    assert response.status_code == 409 and b"is PREP" in response.content
    assert not Command.objects.filter(name__startswith="workflows.WfNode").exists()
    assert operator.get(node_url(workflow, "clear", "nope")).status_code == 404


def test_a_user_who_may_not_act_on_the_workflow_sees_disabled_buttons_and_gets_403(tmp_path: Path) -> None:
    """Staff with the model's permissions, not the owner nor a job admin: disabled, 403, nothing queued or changed."""
    workflow = linear(tmp_path)
    helper = staff("helper", "workflows.view_workflowjob", "workflows.change_workflowjob")
    job, nodes = verbs_of(helper, workflow)
    assert job and all(reason for reason in job.values()) and all(reason for reason in nodes["a"].values())
    assert helper.post(f"{LIST}{quote(workflow.pk)}/verb/mark-ok/", {"node": "a", "confirm": "yes"}).status_code == 403
    assert helper.post(f"{LIST}{quote(workflow.pk)}/verb/kill/", {"confirm": "yes"}).status_code == 403
    assert not Command.objects.filter(key=workflow.pk).exists()
    run_pending_commands()
    assert WorkflowNode.objects.get(workflow=workflow, name="a").status == NodeStatus.PREP
