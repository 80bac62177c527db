"""Native coordinator API: submit, dry-run, list, detail, actions, verbs, and the errors users cause."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from coordinators.choices import ActionStatus, JobStatus
from coordinators.models import CoordinatorAction, CoordinatorJob, IdSequence
from tests.coordinators.api.factories import api, bulk_actions, bulk_jobs, coordinator_xml, window
from tests.support.engine import run_pending_commands
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)

JOBS = "/api/v1/coordinator-jobs/"



@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Commands run in process, doorbells go to the private Redis."""


def rows() -> tuple[int, int, int]:
    """What a submission writes: jobs, actions, commands."""
    return CoordinatorJob.objects.count(), CoordinatorAction.objects.count(), Command.objects.count()


def submit(owner: User, properties: dict[str, str] | None = None, start: bool = True) -> dict[str, Any]:
    response = api(owner).post(
        JOBS, {"definition": coordinator_xml(), "properties": {**window(), **(properties or {})}, "start": start}, format="json",
    )
    assert response.status_code == 201, response.content
    return dict(response.json())


def test_submit_inline_xml_then_it_runs(ann: User) -> None:
    """POST with the XML inline stores the job owned by the caller, queues its start; actions appear."""
    job = submit(ann, {"oozie.job.acl": "ops"})
    assert (job["user"], job["status"], job["acl"], job["app_name"]) == ("ann", "PREP", "ops", "api-test")
    assert job["configuration"]["user.name"] == "ann"
    run_pending_commands()
    detail = api(ann).get(f"{JOBS}{job['id']}/").json()
    assert detail["status"] == JobStatus.RUNNING
    assert detail["definition"].startswith("<coordinator-app")
    actions = api(ann).get(detail["actions_url"]).json()
    assert actions["count"] >= 5 and actions["results"][0]["id"] == f"{job['id']}@1"


def test_submit_without_start_stays_prep_until_started(ann: User) -> None:
    """start=false keeps the job in PREP; POST .../start/ queues the start (202)."""
    job = submit(ann, start=False)
    run_pending_commands()
    assert CoordinatorJob.objects.get(pk=job["id"]).status == JobStatus.PREP
    response = api(ann).post(f"{JOBS}{job['id']}/start/")
    assert response.status_code == 202, response.content
    run_pending_commands()
    assert CoordinatorJob.objects.get(pk=job["id"]).status == JobStatus.RUNNING


def test_configuration_text_in_hadoop_xml_or_properties(ann: User) -> None:
    """`configuration` may be Hadoop XML or .properties text; `properties` override it."""
    props = window()
    xml_conf = "<configuration>" + "".join(
        f"<property><name>{k}</name><value>{v}</value></property>" for k, v in props.items()
    ) + "<property><name>x</name><value>from-xml</value></property></configuration>"
    response = api(ann).post(
        JOBS, {"definition": coordinator_xml(), "configuration": xml_conf, "properties": {"x": "override"}}, format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["configuration"]["x"] == "override"
    text = "\n".join(f"{k}={v}" for k, v in props.items())
    response = api(ann).post(JOBS, {"definition": coordinator_xml(), "configuration": text}, format="json")
    assert response.status_code == 201, response.content


def test_submit_by_application_path(ann: User, tmp_path: Path) -> None:
    """Without inline XML, app_path (oozie.coord.application.path) names the application (a directory: its coordinator.xml)."""
    (tmp_path / "coordinator.xml").write_text(coordinator_xml())
    response = api(ann).post(JOBS, {"app_path": f"file://{tmp_path}", "properties": window()}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["app_name"] == "api-test"


def test_dryrun_plans_without_storing(ann: User) -> None:
    """POST .../dryrun/ answers the plans of the first actions and stores nothing."""
    before = rows()
    response = api(ann).post(
        f"{JOBS}dryrun/", {"definition": coordinator_xml(), "properties": window(), "max_actions": 3}, format="json",
    )
    assert response.status_code == 200, response.content
    actions = response.json()["actions"]
    assert [a["number"] for a in actions] == [1, 2, 3]
    assert actions[0]["app_path"] == "task:examples.noop"
    assert rows() == before


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param({"definition": "<coordinator-app"}, "coordinator.xml", id="malformed-xml"),
        pytest.param({"definition": coordinator_xml(), "properties": {"start": "2026-01-01T00:00Z"}}, "end", id="unresolved-variable"),
        pytest.param({"definition": coordinator_xml(task="x").replace("task:x", "hdfs://nn/app"), "properties": window()}, "storage is not available", id="unsupported-launcher"),
        pytest.param({"definition": "<workflow-app xmlns='uri:oozie:workflow:0.5' name='w'/>"}, "namespace", id="not-a-coordinator"),
        pytest.param({"properties": {"start": "x"}}, "app_path", id="no-definition"),
        pytest.param({"definition": coordinator_xml(), "configuration": "<configuration><oops/></configuration>"}, "property", id="bad-configuration"),
        pytest.param({"definition": coordinator_xml(), "properties": {"a\x00b": "1"}}, "property name", id="nul-in-name"),
    ],
)
def test_refused_submissions_name_the_problem_and_write_nothing(ann: User, body: dict[str, Any], message: str) -> None:
    """Bad XML, unresolved variables, unsupported launchers, bad configurations: 400, a message naming it, no rows."""
    before = rows()
    response = api(ann).post(JOBS, body, format="json")
    assert response.status_code == 400, response.content
    assert message in response.content.decode()
    assert rows() == before


def test_unresolved_variable_is_named(ann: User) -> None:
    """The 400 for an unresolved variable names the variable, and where."""
    response = api(ann).post(JOBS, {"definition": coordinator_xml(), "properties": {"start": "2026-01-01T00:00Z"}}, format="json")
    assert response.status_code == 400
    assert "end" in response.json()["detail"] and response.json()["source"]


def test_user_name_must_be_the_caller_unless_admin(ann: User, admin: User) -> None:
    """user.name naming someone else: 403 and nothing stored; an admin may; the owner is the caller either way."""
    before = rows()
    response = api(ann).post(JOBS, {"definition": coordinator_xml(), "properties": {**window(), "user.name": "bob"}}, format="json")
    assert response.status_code == 403 and "does not match" in response.json()["detail"]
    assert rows() == before
    job = submit(admin, {"user.name": "bob"})
    assert job["user"] == "root"


def test_anonymous_callers_cannot_read_or_write() -> None:
    """No credentials: 401 for reads and writes, nothing written."""
    assert api(None).get(JOBS).status_code == 401
    assert api(None).post(JOBS, {"definition": coordinator_xml()}, format="json").status_code == 401
    assert CoordinatorJob.objects.count() == 0


def test_session_authentication_works(ann: User, client: Client) -> None:
    """A logged-in browser session reads the API (the browsable docs use it)."""
    client.force_login(ann)
    assert client.get(JOBS).status_code == 200


def test_unknown_ids_are_404(ann: User) -> None:
    """Details, actions and verbs of a job that does not exist: 404 naming it."""
    missing = "0000099-260101000000000-C"
    assert api(ann).get(f"{JOBS}{missing}/").status_code == 404
    assert api(ann).get(f"{JOBS}{missing}/actions/").status_code == 404
    for verb in ("start", "suspend", "resume", "kill"):
        response = api(ann).post(f"{JOBS}{missing}/{verb}/")
        assert response.status_code == 404, (verb, response.content)
        assert response.json()["detail"] == f"CoordinatorJob '{missing}' does not exist"
    assert api(ann).get(f"/api/v1/coordinator-actions/{missing}@1/").status_code == 404


def test_illegal_transitions_are_409(ann: User) -> None:
    """Resume of a running job, suspend or kill of a killed one, start of a started one: 409 naming the status."""
    job = submit(ann)
    run_pending_commands()
    response = api(ann).post(f"{JOBS}{job['id']}/resume/")
    assert response.status_code == 409 and "RUNNING" in response.json()["detail"]
    assert api(ann).post(f"{JOBS}{job['id']}/start/").status_code == 409
    assert api(ann).post(f"{JOBS}{job['id']}/kill/").status_code == 202
    run_pending_commands()
    for verb in ("suspend", "kill", "resume"):
        response = api(ann).post(f"{JOBS}{job['id']}/{verb}/")
        assert response.status_code == 409 and "KILLED" in response.json()["detail"], verb


def test_suspend_resume_kill(ann: User) -> None:
    """The verbs queue the same commands as the CLI; statuses follow."""
    job = submit(ann)
    run_pending_commands()
    for verb, status in (("suspend", JobStatus.SUSPENDED), ("resume", JobStatus.RUNNING), ("kill", JobStatus.KILLED)):
        response = api(ann).post(f"{JOBS}{job['id']}/{verb}/")
        assert response.status_code == 202, response.content
        run_pending_commands()
        assert CoordinatorJob.objects.get(pk=job["id"]).status == status
    assert set(CoordinatorAction.objects.filter(job_id=job["id"]).values_list("status", flat=True)) <= {
        ActionStatus.KILLED, ActionStatus.SUCCEEDED,
    }


def test_change_by_value_or_parts(ann: User) -> None:
    """change takes Oozie's value string or its parts; bad values are 400 naming them."""
    job = submit(ann)
    run_pending_commands()
    response = api(ann).post(f"{JOBS}{job['id']}/change/", {"concurrency": "3"}, format="json")
    assert response.status_code == 202, response.content
    run_pending_commands()
    assert CoordinatorJob.objects.get(pk=job["id"]).concurrency == 3
    response = api(ann).post(f"{JOBS}{job['id']}/change/", {"value": "concurrency=abc"}, format="json")
    assert response.status_code == 400 and "concurrency" in response.content.decode()
    response = api(ann).post(f"{JOBS}{job['id']}/change/", {}, format="json")
    assert response.status_code == 400


def test_rerun_actions(ann: User) -> None:
    """rerun by action numbers answers the actions queued again (202)."""
    job = submit(ann)
    run_pending_commands()
    finished = CoordinatorAction.objects.filter(job_id=job["id"]).order_by("number").first()
    assert finished is not None
    CoordinatorAction.objects.filter(pk=finished.pk).update(status=ActionStatus.FAILED)
    response = api(ann).post(f"{JOBS}{job['id']}/rerun/", {"type": "action", "scope": "1"}, format="json")
    assert response.status_code == 202, response.content
    assert [a["number"] for a in response.json()["actions"]] == [1]
    response = api(ann).post(f"{JOBS}{job['id']}/rerun/", {"type": "action", "scope": "x-y"}, format="json")
    assert response.status_code == 400


def test_list_filters(ann: User, bob: User) -> None:
    """Filters on status (several), user, name, dates; bad values are 400 naming the parameter."""
    bulk_jobs(ann, 30)
    CoordinatorJob.objects.filter(pk__endswith="5-260101000000000-C").update(status=JobStatus.SUSPENDED)
    client = api(bob)
    assert client.get(JOBS).json()["count"] == 30
    assert client.get(JOBS, {"status": "suspended"}).json()["count"] == 3
    assert client.get(JOBS, {"status": "SUSPENDED,RUNNING"}).json()["count"] == 30
    assert client.get(JOBS, {"user": "ann"}).json()["count"] == 30
    assert client.get(JOBS, {"user": "bob"}).json()["count"] == 0
    assert client.get(JOBS, {"name": "job-7"}).json()["count"] == 1
    assert client.get(JOBS, {"start_after": "2026-01-01T12:00Z"}).json()["count"] == 12  # n % 24 in 12..23
    response = client.get(JOBS, {"status": "NOPE"})
    assert response.status_code == 400 and "status" in response.json()
    response = client.get(JOBS, {"created_after": "yesterday"})
    assert response.status_code == 400 and "created_after" in response.json()
    assert client.get(JOBS, {"offset": str(10**30)}).status_code == 400


def test_actions_of_a_job_paginated_and_filtered(ann: User) -> None:
    """Actions by number, filtered by status, newest first with order=desc, paged by limit/offset."""
    (job_id,) = bulk_jobs(ann, 1)
    bulk_actions(job_id, 120, statuses=("SUCCEEDED", "FAILED", "WAITING"))
    url = f"{JOBS}{job_id}/actions/"
    page = api(ann).get(url, {"limit": "10", "offset": "20"}).json()
    assert page["count"] == 120 and [a["number"] for a in page["results"]] == list(range(21, 31))
    failed = api(ann).get(url, {"status": "FAILED", "limit": "5"}).json()
    assert failed["count"] == 40 and {a["status"] for a in failed["results"]} == {"FAILED"}
    latest = api(ann).get(url, {"order": "desc", "limit": "1"}).json()["results"][0]
    assert latest["number"] == 120
    assert api(ann).get(url, {"order": "sideways"}).status_code == 400
    everything = api(ann).get("/api/v1/coordinator-actions/", {"job": job_id, "status": "WAITING"}).json()
    assert everything["count"] == 40
    one = api(ann).get(f"/api/v1/coordinator-actions/{job_id}@7/").json()
    assert (one["number"], one["job"]) == (7, job_id)


def test_restricted_reads(ann: User, bob: User, carol: User, admin: User, settings: Any) -> None:
    """With COORD_RESTRICT_READS, lists and details show a job only to its owner, its ACL and admins."""
    settings.COORD_RESTRICT_READS = True
    (mine,) = bulk_jobs(ann, 1, acl="ops")
    for who, visible in ((ann, 1), (carol, 1), (admin, 1), (bob, 0)):
        assert api(who).get(JOBS).json()["count"] == visible, who
        assert api(who).get(f"{JOBS}{mine}/").status_code == (200 if visible else 404)
        assert api(who).get("/api/v1/coordinator-actions/").status_code == 200


def test_nothing_half_written_when_id_sequence_is_used(ann: User) -> None:
    """A refused submission leaves even the id counter alone (one transaction)."""
    IdSequence.objects.all().delete()
    api(ann).post(JOBS, {"definition": coordinator_xml(), "properties": {"start": "bad"}}, format="json")
    assert IdSequence.objects.count() == 0
