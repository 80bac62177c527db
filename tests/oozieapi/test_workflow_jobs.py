"""Workflow jobs on the Oozie API: each launch of an action is a `-W` job an Oozie client can read, list and control.

Request shapes are those of Oozie's Python clients (pyoozie): `job/<wf id>` without `show`,
`jobs?jobtype=wf&filter=user=ann;status=RUNNING&offset=1&len=500`, `job/<wf id>?action=kill`,
`job/<coord id>@<n>?show=allruns`.
"""

from __future__ import annotations

import re
from datetime import timedelta
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from django.utils import timezone
from lxml import etree

from coordinators.choices import ActionStatus
from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.services import submit_coordinator
from statusservice.tasks import input_checks
from tests.oozieapi.client import Oozie, error_of
from tests.support.coordinator_apps import coordinator_xml
from tests.support.engine import run_pending_commands
from workflows import runner
from workflows.choices import NodeStatus, WorkflowStatus
from workflows.models import WorkflowJob, WorkflowNode
from workflows.recovery import resend_unclaimed
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)

RFC822 = re.compile(r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d [A-Z]{3,4}$")
# The keys of WorkflowJobBean.toJSONObject and WorkflowActionBean.toJSONObject (Oozie's JsonTags).
WORKFLOW_KEYS = {
    "appPath", "appName", "id", "externalId", "parentId", "conf", "status", "lastModTime", "createdTime",
    "startTime", "endTime", "user", "group", "acl", "run", "consoleUrl", "actions", "toString",
}
NODE_KEYS = {
    "id", "name", "cred", "type", "conf", "status", "retries", "startTime", "endTime", "transition", "data",
    "stats", "externalChildIDs", "externalId", "externalStatus", "trackerUri", "consoleUrl", "errorCode",
    "errorMessage", "toString", "userRetryInterval", "userRetryCount", "userRetryMax",
}
PYOOZIE_WORKFLOW_ID = re.compile(r"^(?P<id>.*-W)(?:@(?P<action>.*))?$")  # pyoozie.model._WORKFLOW_ID_RE


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Commands run in process, doorbells go to the private Redis."""


def launch(owner: User, task: str = "examples.noop", acl: str = "", actions: int = 1) -> CoordinatorJob:
    """A coordinator whose due actions are launched (SUBMITTED, their nodes PREP)."""
    job = submit_coordinator(coordinator_xml(task, actions=actions), {"oozie.job.acl": acl} if acl else {}, owner=owner)
    run_pending_commands()
    input_checks()
    run_pending_commands()
    return CoordinatorJob.objects.get(pk=job.pk)


def action_of(job: CoordinatorJob, number: int = 1) -> CoordinatorAction:
    return CoordinatorAction.objects.get(pk=CoordinatorAction.action_id(job.id, number))


def node_of(workflow_id: str) -> WorkflowNode:
    return WorkflowNode.objects.select_related("workflow").get(workflow_id=workflow_id)


def run(workflow_id: str) -> str:
    """A worker runs the node's current attempt, then the parent's commands run."""
    node = node_of(workflow_id)
    outcome = runner.run_node(node.id, node.attempt, "w1@host")
    run_pending_commands()
    return outcome


def test_an_actions_external_id_is_a_workflow_job_oozie_clients_can_read(ann: User) -> None:
    """`job/<externalId>` answers WorkflowJobBean's JSON: parent action, run, conf, its node as a WorkflowActionBean."""
    job = launch(ann)
    action = action_of(job)
    oozie = Oozie(ann)
    coord_action = oozie.get(f"job/{action.id}").json()
    wf_id = coord_action["externalId"]
    assert PYOOZIE_WORKFLOW_ID.match(wf_id) and wf_id == action.external_id
    body = oozie.get(f"job/{wf_id}").json()  # pyoozie sends no `show`
    assert set(body) == WORKFLOW_KEYS
    assert (body["id"], body["parentId"], body["status"], body["run"]) == (wf_id, action.id, "RUNNING", 0)
    assert (body["appPath"], body["user"], body["toString"]) == ("task:examples.noop", "ann", f"Workflow id[{wf_id}] status[RUNNING]")
    assert all(RFC822.match(body[key]) for key in ("createdTime", "startTime", "lastModTime")) and body["endTime"] is None
    conf = etree.fromstring(body["conf"].encode())
    properties = {p.findtext("name"): p.findtext("value") for p in conf.iter("property")}
    assert properties["oozie.wf.application.path"] == "task:examples.noop" and properties["user.name"] == "ann"
    [node] = body["actions"]
    stored = node_of(wf_id)
    assert set(node) == NODE_KEYS
    assert (node["id"], node["name"], node["type"], node["status"]) == (f"{wf_id}@task", "task", "celery-task", "PREP")
    assert node["externalId"] == stored.task_id and node["toString"] == "Action name[task] status[PREP]"
    assert PYOOZIE_WORKFLOW_ID.match(node["id"])["action"] == node["name"]  # type: ignore[index]
    assert oozie.get(f"job/{wf_id}@task").json() == node
    assert oozie.get(f"job/{wf_id}", show="status").json() == {"status": "RUNNING"}
    assert oozie.get(f"job/{wf_id}@task", show="status").json() == {"status": "PREP"}
    local = oozie.get(f"job/{wf_id}", timezone="America/New_York").json()
    assert local["createdTime"].endswith(("EST", "EDT")) and local["createdTime"] != body["createdTime"]


def test_a_finished_run_shows_its_outcome_worker_and_error(ann: User) -> None:
    """A failed task: FAILED workflow, ERROR node with the task's error, the worker as trackerUri, transition to fail."""
    job = launch(ann, "examples.fail")
    wf_id = action_of(job).external_id
    assert run(wf_id) == NodeStatus.ERROR
    body = Oozie(ann).get(f"job/{wf_id}", show="info").json()
    [node] = body["actions"]
    assert body["status"] == "FAILED" and RFC822.match(body["endTime"])
    assert (node["status"], node["externalStatus"], node["transition"]) == ("ERROR", "FAILED", "fail")
    assert node["errorCode"] == "RuntimeError" and node["errorMessage"].startswith("RuntimeError: example failure")
    assert node["trackerUri"].startswith("w1@host:") and RFC822.match(node["endTime"])
    assert action_of(job).status == ActionStatus.FAILED


def test_the_definition_is_a_one_node_workflow_app(ann: User) -> None:
    """show=definition: a uri:oozie:workflow:1.0 app whose one action runs the task, ok to end, error to fail."""
    job = launch(ann)
    wf_id = action_of(job).external_id
    response = Oozie(ann).get(f"job/{wf_id}", show="definition")
    assert response["Content-Type"] == "application/xml;charset=UTF-8"
    app = etree.fromstring(response.content)
    ns = {"wf": "uri:oozie:workflow:1.0", "t": "uri:oozie-py:celery-task:0.1"}
    assert app.tag == "{uri:oozie:workflow:1.0}workflow-app"
    start, ok, error = (app.find(path, ns) for path in ("wf:start", "wf:action/wf:ok", "wf:action/wf:error"))
    assert start is not None and ok is not None and error is not None
    assert start.get("to") == "task"
    assert app.findtext("wf:action[@name='task']/t:celery-task/t:task", namespaces=ns) == "examples.noop"
    assert ok.get("to") == "end" and error.get("to") == "fail"


def test_the_log_tells_the_runs_story(ann: User) -> None:
    """show=log: launch, attempts and end in Oozie's line format; errorlog and loglevel=ERROR keep the failure only."""
    job = launch(ann, "examples.fail")
    wf_id = action_of(job).external_id
    run(wf_id)
    oozie = Oozie(ann)
    lines = oozie.get(f"job/{wf_id}", show="log").content.decode().splitlines()
    # Every record names the job; a traceback follows its try's line unprefixed, as log4j writes a stack trace.
    records = [line for line in lines if re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ", line)]
    assert records and all(f"JOB[{wf_id}]" in line and "USER[ann]" in line for line in records)
    assert "Traceback (most recent call last):" in lines and all(
        line.startswith(("  ", "Traceback", "RuntimeError")) for line in lines if line not in records)
    assert any("started: task:examples.noop" in line or "started: task:examples.fail" in line for line in lines)
    assert any(f"ACTION[{wf_id}@task] attempt 1 on w1@host:" in line and ": ERROR: RuntimeError" in line for line in lines)
    errors = oozie.get(f"job/{wf_id}", show="errorlog").content.decode().splitlines()
    error_records = [line for line in errors if re.match(r"^\d{4}-\d\d-\d\d ", line)]
    assert error_records and all(" ERROR " in line for line in error_records) and len(errors) < len(lines)
    assert "Traceback (most recent call last):" in errors  # the error's traceback comes with it
    filtered = oozie.get(f"job/{wf_id}", show="log", logfilter="loglevel=ERROR;action=task").content.decode().splitlines()
    assert filtered and all(f"ACTION[{wf_id}@task]" in line for line in filtered if re.match(r"^\d{4}-\d\d-\d\d ", line))
    assert error_of(oozie.get(f"job/{wf_id}", show="log", logfilter="colour=red"))[:2] == (400, "E0302")


def test_unknown_and_malformed_workflow_ids_are_refused(ann: User) -> None:
    """E0604 for a job that does not exist (or cannot), E0605 for a node, E0303 for a show the workflow has not."""
    job = launch(ann)
    wf_id = action_of(job).external_id
    oozie = Oozie(ann)
    assert error_of(oozie.get("job/0999999-260101000000000-W"))[:2] == (400, "E0604")
    assert error_of(oozie.get("job/bad id;drop-W"))[:2] == (400, "E0604")
    assert error_of(oozie.get(f"job/{wf_id}@nope"))[:2] == (400, "E0605")
    assert error_of(oozie.get(f"job/{wf_id}", show="allruns"))[:2] == (400, "E0303")
    assert error_of(Oozie(None).get(f"job/{wf_id}"))[:2] == (401, "E0500")


def test_jobs_lists_workflow_runs_with_oozies_filters_and_paging(ann: User, bob: User) -> None:
    """`jobs?jobtype=wf` (the default type): newest first, filters user/name/status/id, offset from 1, no conf nor actions."""
    mine = launch(ann, actions=3)
    theirs = launch(bob)
    oozie = Oozie(ann)
    listed = oozie.get("jobs", jobtype="wf", offset="1", len="500").json()
    assert listed["total"] == 4 and (listed["offset"], listed["len"]) == (1, 500)
    ids = [wf["id"] for wf in listed["workflows"]]
    expected = list(WorkflowJob.objects.order_by("-created_at", "-id").values_list("id", flat=True))
    assert ids == expected and oozie.get("jobs").json()["workflows"] == listed["workflows"]
    assert all(wf["conf"] is None and wf["actions"] == [] and wf["parentId"] for wf in listed["workflows"])
    by_user = oozie.get("jobs", jobtype="wf", filter="user=ann;status=RUNNING").json()
    assert {wf["parentId"].split("@")[0] for wf in by_user["workflows"]} == {mine.id} and by_user["total"] == 3
    their_wf = action_of(theirs).external_id
    assert [wf["id"] for wf in oozie.get("jobs", filter=f"id={their_wf}").json()["workflows"]] == [their_wf]
    assert oozie.get("jobs", filter="name=examples.noop;status=SUCCEEDED").json()["total"] == 0
    page = oozie.get("jobs", jobtype="wf", offset="2", len="2").json()
    assert [wf["id"] for wf in page["workflows"]] == expected[1:3] and page["total"] == 4
    assert error_of(oozie.get("jobs", jobtype="wf", filter="colour=red"))[:2] == (400, "E0420")


def test_lists_and_reads_follow_the_coordinators_read_rule(ann: User, bob: User, carol: User) -> None:
    """With COORD_RESTRICT_READS, only who may act on the parent job sees its runs (ACL groups included)."""
    job = launch(ann, acl="ops")
    wf_id = action_of(job).external_id
    with override_settings(COORD_RESTRICT_READS=True):
        assert Oozie(bob).get("jobs", jobtype="wf").json()["total"] == 0
        assert error_of(Oozie(bob).get(f"job/{wf_id}"))[:2] == (403, "E0509")
        assert [wf["id"] for wf in Oozie(carol).get("jobs").json()["workflows"]] == [wf_id]
        assert Oozie(carol).get(f"job/{wf_id}").json()["acl"] == "ops"


def test_kill_ends_the_run_and_its_action_killed(ann: User) -> None:
    """PUT action=kill: a command on the coordinator's key kills the run (KILLED node); the action follows, KILLED."""
    job = launch(ann)
    action = action_of(job)
    wf_id = action.external_id
    oozie = Oozie(ann)
    with mock.patch("workflows.states.revoke") as revoke:
        response = oozie.put(f"job/{wf_id}", action="kill")
        assert response.status_code == 200 and response.content == b""
        queued = Command.objects.filter(key=job.id, name="workflows.WfKillXCommand")
        assert queued.count() == 1
        run_pending_commands()
    revoke.assert_called_once()
    node = node_of(wf_id)
    assert (node.workflow.status, node.status) == (WorkflowStatus.KILLED, NodeStatus.KILLED)
    assert "killed by ann" in node.workflow.error_message
    action.refresh_from_db()
    assert action.status == ActionStatus.KILLED
    assert oozie.get(f"job/{action.id}").json()["status"] == "KILLED"
    assert runner.run_node(node.id, 1, "late@host") == "skipped"  # its queued message runs nothing
    commands = Command.objects.count()
    assert oozie.put(f"job/{wf_id}", action="kill").status_code == 200  # a finished run: nothing to do, as Oozie
    assert Command.objects.count() == commands


def test_only_who_may_act_on_the_coordinator_may_act_on_its_runs(ann: User, bob: User, carol: User, admin: User) -> None:
    """Another user gets 403 and nothing is queued; the job's ACL group and admins may kill."""
    job = launch(ann, acl="ops", actions=3)
    first, second, third = (action_of(job, n).external_id for n in (1, 2, 3))
    commands = Command.objects.count()
    for verb in ("kill", "suspend", "resume", "start"):
        assert error_of(Oozie(bob).put(f"job/{first}", action=verb))[:2] == (403, "E0509")
    assert Command.objects.count() == commands and WorkflowJob.objects.get(pk=first).status == WorkflowStatus.RUNNING
    assert Oozie(carol).put(f"job/{second}", action="kill").status_code == 200
    assert Oozie(admin).put(f"job/{third}", action="kill").status_code == 200
    with mock.patch("workflows.states.revoke"):
        run_pending_commands()
    statuses = dict(WorkflowJob.objects.values_list("id", "status"))
    assert (statuses[first], statuses[second], statuses[third]) == ("RUNNING", "KILLED", "KILLED")


def test_a_suspended_run_starts_nothing_until_resumed(ann: User) -> None:
    """Suspend: the queued node is not claimed and not sent again; resume sends it, and it runs to SUCCEEDED."""
    job = launch(ann)
    action = action_of(job)
    wf_id = action.external_id
    oozie = Oozie(ann)
    assert oozie.put(f"job/{wf_id}", action="suspend").status_code == 200
    run_pending_commands()
    node = node_of(wf_id)
    assert node.workflow.status == WorkflowStatus.SUSPENDED
    assert runner.run_node(node.id, 1, "w1@host") == "skipped"
    with mock.patch("workflows.launch.dispatch") as sent:
        assert resend_unclaimed(timezone.now() + timedelta(hours=1)) == 0
        assert oozie.put(f"job/{wf_id}", action="resume").status_code == 200
        run_pending_commands()
    assert sent.call_count == 1 and sent.call_args.args[0] == node.task_id
    assert WorkflowJob.objects.get(pk=wf_id).status == WorkflowStatus.RUNNING
    assert run(wf_id) == NodeStatus.OK
    action.refresh_from_db()
    assert action.status == ActionStatus.SUCCEEDED and WorkflowJob.objects.get(pk=wf_id).status == "SUCCEEDED"


def test_a_task_ending_while_suspended_ends_the_run_at_resume(ann: User) -> None:
    """A running task finishes (node OK) while suspended; the action shows SUSPENDED; both end only when resumed."""
    job = launch(ann)
    action = action_of(job)
    wf_id = action.external_id
    node = node_of(wf_id)
    assert runner.claim(node.id, 1, "w1@host:1") is not None
    oozie = Oozie(ann)
    oozie.put(f"job/{wf_id}", action="suspend")
    run_pending_commands()
    assert runner.record(node.id, 1, runner.Outcome(NodeStatus.OK)) == NodeStatus.OK
    run_pending_commands()
    body = oozie.get(f"job/{wf_id}").json()
    assert body["status"] == "SUSPENDED" and body["actions"][0]["status"] == "OK"
    action.refresh_from_db()
    assert action.status == ActionStatus.SUSPENDED  # as Oozie shows the action of a suspended workflow
    coordinator_action = Oozie(ann).get(f"job/{action.job_id}", len=10).json()["actions"][0]
    assert coordinator_action["status"] == "SUSPENDED"
    oozie.put(f"job/{wf_id}", action="resume")
    run_pending_commands()
    action.refresh_from_db()
    assert WorkflowJob.objects.get(pk=wf_id).status == WorkflowStatus.SUCCEEDED and action.status == ActionStatus.SUCCEEDED


@pytest.mark.parametrize(("verb", "setup"), [
    pytest.param("suspend", "succeeded", id="suspend-finished"),
    pytest.param("resume", "running", id="resume-running"),
    pytest.param("kill", "succeeded", id="kill-finished"),
    pytest.param("start", "running", id="start-started"),
])
def test_verbs_the_status_does_not_allow_do_nothing_as_in_oozie(ann: User, verb: str, setup: str) -> None:
    """Oozie skips a verb whose precondition fails: 200, no command, no change."""
    job = launch(ann)
    wf_id = action_of(job).external_id
    if setup == "succeeded":
        run(wf_id)
    before = WorkflowJob.objects.get(pk=wf_id).status
    commands = Command.objects.count()
    assert Oozie(ann).put(f"job/{wf_id}", action=verb).status_code == 200
    assert Command.objects.count() == commands and WorkflowJob.objects.get(pk=wf_id).status == before


def test_verbs_this_service_does_not_serve_on_runs_are_refused(ann: User) -> None:
    """rerun/change/update name the coordinator (E1008), ignore is E0302 as in Oozie, nonsense E0303, none E0305."""
    job = launch(ann)
    wf_id = action_of(job).external_id
    oozie = Oozie(ann)
    status, code, message = error_of(oozie.put(f"job/{wf_id}", action="rerun"))
    assert (status, code) == (400, "E1008") and job.id in message
    assert error_of(oozie.put(f"job/{wf_id}", action="ignore"))[:2] == (400, "E0302")
    assert error_of(oozie.put(f"job/{wf_id}", action="explode"))[:2] == (400, "E0303")
    assert error_of(oozie.put(f"job/{wf_id}"))[:2] == (400, "E0305")
    assert error_of(oozie.put(f"job/{wf_id}@task", action="kill"))[:2] == (400, "E0303")
    assert WorkflowJob.objects.get(pk=wf_id).status == WorkflowStatus.RUNNING


def test_reruns_are_new_workflow_jobs_and_allruns_lists_them(ann: User, bob: User) -> None:
    """A rerun launches a new `-W` job (run 1); show=allruns lists both runs, oldest first, in either of Oozie's forms."""
    job = launch(ann, "examples.fail")
    first = action_of(job).external_id
    run(first)
    oozie = Oozie(ann)
    assert oozie.put(f"job/{job.id}", action="coord-rerun", type="action", scope="1").status_code == 200
    run_pending_commands()
    input_checks()
    run_pending_commands()
    action = action_of(job)
    second = action.external_id
    assert second and second != first and action.status == ActionStatus.SUBMITTED
    assert WorkflowJob.objects.get(pk=second).run == 1 and WorkflowJob.objects.get(pk=first).run == 0
    assert oozie.get(f"job/{second}").json()["run"] == 1
    runs = oozie.get(f"job/{job.id}", show="allruns", type="action", scope="1").json()
    assert set(runs) == {"workflows"}
    assert [(r["id"], r["status"]) for r in runs["workflows"]] == [(first, "FAILED"), (second, "RUNNING")]
    assert all(set(r) == {"id", "status", "startTime", "endTime"} for r in runs["workflows"])
    assert runs["workflows"][1]["endTime"] is None and RFC822.match(runs["workflows"][0]["endTime"])
    assert oozie.get(f"job/{action.id}", show="allruns").json() == runs
    assert Oozie(ann, version="v1").get(f"job/{action.id}", show="allruns").json() == runs


def test_allruns_refusals(ann: User, bob: User) -> None:
    """A coordinator id needs type=action&scope=<n> (E0305/E0303); a missing action E0605; a missing job E0604; readers only."""
    job = launch(ann)
    oozie = Oozie(ann)
    assert error_of(oozie.get(f"job/{job.id}", show="allruns"))[:2] == (400, "E0305")
    assert error_of(oozie.get(f"job/{job.id}", show="allruns", type="date", scope="1"))[:2] == (400, "E0303")
    assert error_of(oozie.get(f"job/{job.id}", show="allruns", type="action", scope="1-3"))[:2] == (400, "E0303")
    assert error_of(oozie.get(f"job/{job.id}", show="allruns", type="action", scope="99"))[:2] == (400, "E0605")
    assert error_of(oozie.get("job/0999999-260101000000000-C@1", show="allruns"))[:2] == (400, "E0604")
    with override_settings(COORD_RESTRICT_READS=True):
        assert error_of(Oozie(bob).get(f"job/{job.id}@1", show="allruns"))[:2] == (403, "E0509")

