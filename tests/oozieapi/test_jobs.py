"""Oozie Web Services API for coordinators: what an Oozie client sends and reads, error headers included."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from coordinators.choices import JobStatus
from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.services import submit_coordinator
from tests.coordinators.api.factories import bulk_actions, bulk_jobs, coordinator_xml, window
from tests.oozieapi.client import Oozie, error_of
from tests.support.engine import run_pending_commands
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)

RFC822 = re.compile(r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d GMT$")


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Commands run in process, doorbells go to the private Redis."""


def running_job(owner: User, acl: str = "") -> CoordinatorJob:
    """A started job with a few actions."""
    job = submit_coordinator(coordinator_xml(), {**window(), "oozie.job.acl": acl}, owner=owner)
    run_pending_commands()
    return CoordinatorJob.objects.get(pk=job.pk)


def app_dir(tmp_path: Path) -> Path:
    (tmp_path / "coordinator.xml").write_text(coordinator_xml())
    return tmp_path


def test_versions_and_admin_answer_anonymous_callers() -> None:
    """Protocol negotiation and system status need no credentials (Oozie clients call them first)."""
    oozie = Oozie(None)
    assert oozie.client.get("/oozie/versions").json() == [1, 2]
    for version in ("v1", "v2"):
        oozie.version = version
        assert oozie.get("admin/status").json() == {"systemMode": "NORMAL"}
        assert oozie.get("admin/build-version").json()["buildVersion"]
    zones = oozie.get("admin/available-timezones").json()["available-timezones"]
    by_id = {zone["timezoneId"]: zone["timezoneDisplayName"] for zone in zones}
    assert by_id["America/Los_Angeles"] == "PST (America/Los_Angeles)"
    assert by_id["Pacific/Niue"].endswith("(Pacific/Niue)")
    assert by_id["PST"] == "PST (PST)" and by_id["EST"] == "EST (EST)"  # Java's three-letter ids, which jobs may use
    assert error_of(oozie.get("admin/os-env"))[:2] == (400, "E0301")
    assert oozie.get("admin/status").headers["Content-Type"] == "application/json;charset=UTF-8"


def test_everything_else_needs_credentials(ann: User) -> None:
    """Anonymous job reads and writes: 401 E0500 with a basic challenge; bad credentials and session cookies too; nothing written."""
    job = running_job(ann)
    anonymous = Oozie(None)
    for response in (
        anonymous.get(f"job/{job.id}"),
        anonymous.get("jobs", jobtype="coord"),
        anonymous.put(f"job/{job.id}", action="kill"),
        anonymous.submit({"oozie.coord.application.path": "/x"}),
    ):
        assert error_of(response)[:2] == (401, "E0500")
        assert response.headers["WWW-Authenticate"].startswith("Basic")
    browser = Oozie(None)
    browser.client.force_login(ann)  # a session cookie is not a credential here (no CSRF exposure)
    assert error_of(browser.put(f"job/{job.id}", action="kill"))[:2] == (401, "E0500")
    wrong = Oozie(None)
    wrong.headers["Authorization"] = "Basic " + "YW5uOndyb25n"  # ann:wrong
    assert error_of(wrong.get("admin/status"))[:2] == (401, "E0500")
    assert error_of(wrong.get(f"job/{job.id}"))[:2] == (401, "E0500")
    commands = Command.objects.count()
    assert CoordinatorJob.objects.get(pk=job.id).status == JobStatus.RUNNING
    assert Command.objects.count() == commands


def test_job_info_in_oozie_json(ann: User) -> None:
    """show=info: JsonTags names, RFC 822 GMT times, Oozie statuses; v2 lists actions only when len asks."""
    job = running_job(ann, acl="ops")
    info = Oozie(ann, use_token=True).get(f"job/{job.id}", show="info").json()
    assert (info["coordJobId"], info["coordJobName"], info["user"], info["status"], info["acl"]) == (
        job.id, "api-test", "ann", "RUNNING", "ops",
    )
    assert RFC822.match(info["startTime"]) and RFC822.match(info["endTime"])
    assert info["actions"] == [] and info["total"] >= 5
    assert info["conf"].startswith("<?xml") and "<name>oozie.job.acl</name>" in info["conf"]
    assert info["toString"] == f"Coordinator application id[{job.id}] status[RUNNING]"
    assert (info["timeUnit"], info["frequency"], info["executionPolicy"]) == ("MINUTE", "1", "FIFO")
    paged = Oozie(ann).get(f"job/{job.id}", len=2, offset=2, order="desc").json()
    assert [a["actionNumber"] for a in paged["actions"]] == [info["total"] - 1, info["total"] - 2]
    action = paged["actions"][0]
    assert action["id"] == f"{job.id}@{action['actionNumber']}" and action["coordJobId"] == job.id
    assert RFC822.match(action["nominalTime"]) and RFC822.match(action["createdTime"])
    v1 = Oozie(ann, version="v1").get(f"job/{job.id}").json()
    assert len(v1["actions"]) == v1["total"]  # v1's default len is 1000
    local = Oozie(ann).get(f"job/{job.id}", timezone="America/New_York").json()
    assert local["startTime"].endswith(("EST", "EDT"))
    pacific = Oozie(ann).get(f"job/{job.id}", timezone="PST").json()  # Java's id: Los Angeles, with its DST
    assert pacific["startTime"].endswith(("PST", "PDT"))
    assert error_of(Oozie(ann).get(f"job/{job.id}", timezone="Mars/Olympus"))[:2] == (400, "E0303")


def test_job_info_action_filter(ann: User) -> None:
    """filter=status=...;status!=...;nominaltime>=... narrows the actions; total counts what matched."""
    (job_id,) = bulk_jobs(ann, 1)
    bulk_actions(job_id, 30, statuses=("SUCCEEDED", "KILLED", "FAILED"))
    oozie = Oozie(ann)
    killed = oozie.get(f"job/{job_id}", filter="status=KILLED", len=100).json()
    assert killed["total"] == 10 and {a["status"] for a in killed["actions"]} == {"KILLED"}
    not_ok = oozie.get(f"job/{job_id}", filter="status!=SUCCEEDED", len=100).json()
    assert not_ok["total"] == 20
    either = oozie.get(f"job/{job_id}", filter="status=KILLED;status=FAILED;nominaltime>=2026-01-01T10:00Z", len=100).json()
    assert either["total"] == 14
    for bad in ("status=NOPE", "colour=red", "status", "nominaltime>=tomorrow"):
        assert error_of(oozie.get(f"job/{job_id}", filter=bad))[:2] == (400, "E0421"), bad


def test_action_info_definition_status_and_log(ann: User) -> None:
    """GET job/ID@N gives the action; show=definition the XML; show=status the status; show=log the command history."""
    job = running_job(ann)
    oozie = Oozie(ann)
    action = oozie.get(f"job/{job.id}@1").json()
    assert (action["id"], action["actionNumber"], action["coordJobId"]) == (f"{job.id}@1", 1, job.id)
    assert oozie.get(f"job/{job.id}@1", show="status").json() == {"status": action["status"]}
    definition = oozie.get(f"job/{job.id}", show="definition")
    assert definition.headers["Content-Type"] == "application/xml;charset=UTF-8"
    assert definition.content.decode() == job.definition
    assert oozie.get(f"job/{job.id}", show="status").json() == {"status": "RUNNING"}
    CoordinatorAction.objects.filter(pk=f"{job.id}@2").update(error_message="boom\nat line 2")
    log = oozie.get(f"job/{job.id}", show="log")
    assert log.headers["Content-Type"] == "text/plain;charset=UTF-8"
    text = log.content.decode()
    assert "CoordStartXCommand" in text and f"JOB[{job.id}]" in text and "USER[ann]" in text
    assert f"ACTION[{job.id}@2] " in text and "boom at line 2" in text
    errors = oozie.get(f"job/{job.id}", show="errorlog").content.decode().splitlines()
    assert errors and all(" ERROR " in line for line in errors)
    assert len(oozie.get(f"job/{job.id}", show="log", len=2).content.decode().splitlines()) == 2
    assert oozie.get(f"job/{job.id}", show="log", logfilter="loglevel=ERROR").content.decode().splitlines() == errors
    assert error_of(oozie.get(f"job/{job.id}", show="log", logfilter="bogus=1"))[:2] == (400, "E0302")
    assert error_of(oozie.get(f"job/{job.id}", show="graph"))[:2] == (400, "E0303")


def test_unknown_ids(ann: User) -> None:
    """Unknown jobs are E0604 and unknown actions E0605 (HTTP 400, as Oozie answers), for reads and verbs."""
    oozie = Oozie(ann)
    missing = "0000099-260101000000000-C"
    assert error_of(oozie.get(f"job/{missing}")) == (400, "E0604", f"E0604: Job does not exist [{missing}]")
    assert error_of(oozie.put(f"job/{missing}", action="suspend"))[:2] == (400, "E0604")
    assert error_of(oozie.get(f"job/{missing}@3"))[:2] == (400, "E0605")
    assert error_of(oozie.get("job/not an id"))[:2] == (400, "E0604")


def test_put_verbs(ann: User) -> None:
    """PUT ?action=suspend|resume|kill answers 200 with an empty body; the commands do the rest."""
    job = running_job(ann)
    oozie = Oozie(ann)
    for verb, status in (("suspend", JobStatus.SUSPENDED), ("resume", JobStatus.RUNNING), ("kill", JobStatus.KILLED)):
        response = oozie.put(f"job/{job.id}", action=verb)
        assert response.status_code == 200 and response.content == b"", verb
        run_pending_commands()
        assert CoordinatorJob.objects.get(pk=job.id).status == status


def test_put_start_of_a_prep_job(ann: User) -> None:
    """PUT ?action=start starts a job submitted without starting."""
    job = submit_coordinator(coordinator_xml(), window(), owner=ann, start=False)
    assert Oozie(ann).put(f"job/{job.id}", action="start").status_code == 200
    run_pending_commands()
    assert CoordinatorJob.objects.get(pk=job.id).status == JobStatus.RUNNING


def test_put_refusals(ann: User) -> None:
    """Missing or unknown actions, illegal transitions: 400 with the code naming the problem."""
    job = running_job(ann)
    oozie = Oozie(ann)
    assert error_of(oozie.put(f"job/{job.id}")) == (400, "E0305", "E0305: Missing parameter [action]")
    assert error_of(oozie.put(f"job/{job.id}", action="explode"))[:2] == (400, "E0303")
    assert oozie.put(f"job/{job.id}", action="resume").status_code == 200  # Oozie skips it (ADR 0013)
    status, code, message = error_of(oozie.put(f"job/{job.id}", action="start"))
    assert (status, code) == (400, "E1025") and "RUNNING" in message
    assert error_of(oozie.put(f"job/{job.id}", action="change"))[:2] == (400, "E0305")
    assert error_of(oozie.put(f"job/{job.id}", action="coord-rerun", type="action"))[:2] == (400, "E0305")
    assert error_of(oozie.put(f"job/{job.id}", action="coord-rerun", type="week", scope="1"))[:2] == (400, "E0303")
    assert error_of(oozie.put(f"job/{job.id}@1", action="kill"))[:2] == (400, "E0303")


def test_put_change(ann: User) -> None:
    """PUT ?action=change&value=concurrency=3 changes the job; a bad value is E1015 naming it."""
    job = running_job(ann)
    oozie = Oozie(ann)
    assert oozie.put(f"job/{job.id}", action="change", value="concurrency=3").status_code == 200
    run_pending_commands()
    assert CoordinatorJob.objects.get(pk=job.id).concurrency == 3
    status, code, message = error_of(oozie.put(f"job/{job.id}", action="change", value="concurrency=lots"))
    assert (status, code) == (400, "E1015") and "concurrency" in message


def test_put_rerun(ann: User) -> None:
    """PUT ?action=coord-rerun&type=action&scope=1 answers the actions queued again."""
    job = running_job(ann)
    CoordinatorAction.objects.filter(pk=f"{job.id}@1").update(status="FAILED")
    response = Oozie(ann).put(f"job/{job.id}", action="coord-rerun", type="action", scope="1", refresh="false", nocleanup="true")
    assert response.status_code == 200, response.headers.get("oozie-error-message")
    assert [a["actionNumber"] for a in response.json()["actions"]] == [1]
    status, code, _ = error_of(Oozie(ann).put(f"job/{job.id}", action="rerun", type="action", scope="z"))
    assert (status, code) == (400, "E1018")


def test_jobs_list(ann: User, bob: User) -> None:
    """GET jobs?jobtype=coord&filter=...&offset=&len=: coordinatorjobs, total, 1-based offset; workflows are empty."""
    bulk_jobs(ann, 25)
    CoordinatorJob.objects.filter(pk__startswith="000000").update(status=JobStatus.SUSPENDED)  # ids 1..9
    oozie = Oozie(bob)
    page = oozie.get("jobs", jobtype="coord", offset=3, len=5).json()
    assert (page["total"], page["offset"], page["len"], len(page["coordinatorjobs"])) == (25, 3, 5, 5)
    assert page["coordinatorjobs"][0]["coordJobId"] == "0000023-260101000000000-C"  # newest first
    assert oozie.get("jobs", jobtype="coordinator", filter="status=SUSPENDED").json()["total"] == 9
    assert oozie.get("jobs", jobtype="coord", filter="status=SUSPENDED;status=RUNNING;user=ann").json()["total"] == 25
    assert oozie.get("jobs", jobtype="coord", filter="name=job-3").json()["total"] == 1
    assert oozie.get("jobs", jobtype="coord", filter="text=job-1").json()["total"] == 11
    assert oozie.get("jobs", jobtype="coord", filter="user=bob").json()["total"] == 0
    assert oozie.get("jobs", jobtype="coord", filter="startCreatedTime=-1d;endCreatedTime=2999-01-01T00:00Z").json()["total"] == 25
    assert oozie.get("jobs", jobtype="coord", filter="sortby=lastModifiedTime").json()["total"] == 25
    assert oozie.get("jobs").json() == {"workflows": [], "total": 0, "offset": 1, "len": 50}
    for bad in ("status=NOPE", "colour=red", "user", "startCreatedTime=yesterday", "sortby=size"):
        assert error_of(oozie.get("jobs", jobtype="coord", filter=bad))[:2] == (400, "E0420"), bad
    assert error_of(oozie.get("jobs", jobtype="coord", offset="x"))[:2] == (400, "E0303")
    assert error_of(oozie.get("jobs", jobtype="spaceship"))[:2] == (400, "E0303")


def test_submission_refusals(ann: User) -> None:
    """Wrong content type, malformed configuration, no application path, workflows: 400 with Oozie's codes; nothing stored."""
    oozie = Oozie(ann)
    assert error_of(oozie.submit({"a": "b"}, content_type="text/plain"))[:2] == (400, "E0300")
    response = oozie.client.post("/oozie/v2/jobs", b"<configuration><property>", content_type="application/xml", headers=oozie.headers)
    assert error_of(response)[:2] == (400, "E0700")
    response = oozie.client.post("/oozie/v2/jobs", b"<!DOCTYPE x [<!ENTITY e 'x'>]><configuration/>", content_type="application/xml", headers=oozie.headers)
    assert error_of(response)[:2] == (400, "E0700")
    assert error_of(oozie.submit({"start": "x"}))[:2] == (400, "E0405")
    assert error_of(oozie.submit({"oozie.wf.application.path": "hdfs://nn/wf"}))[:2] == (400, "E0710")  # hdfs:// cannot be read here
    status, code, message = error_of(oozie.submit({"oozie.coord.application.path": "/x", "user.name": "bob"}))
    assert (status, code) == (403, "E0500") and "does not match" in message
    assert error_of(oozie.submit({"oozie.coord.application.path": "/x"}, action="kill"))[:2] == (400, "E0303")
    assert CoordinatorJob.objects.count() == 0 and Command.objects.count() == 0


@pytest.mark.parametrize("action", [None, "start"])
def test_submit_hadoop_xml_configuration(ann: User, tmp_path: Path, action: str | None) -> None:
    """POST jobs with a Hadoop XML configuration: 201 {"id"}; action=start runs it, without it stays PREP."""
    properties = {"oozie.coord.application.path": f"file://{app_dir(tmp_path)}", "user.name": "ann", **window()}
    response = Oozie(ann).submit(properties, action=action)
    assert response.status_code == 201, response.headers.get("oozie-error-message")
    job_id = response.json()["id"]
    run_pending_commands()
    job = CoordinatorJob.objects.get(pk=job_id)
    assert job.owner == ann and job.status == (JobStatus.RUNNING if action else JobStatus.PREP)


@pytest.mark.parametrize(
    ("xml", "properties", "code", "named"),
    [
        pytest.param("<coordinator-app", {}, "E0700", "coordinator", id="malformed-xml"),
        pytest.param(coordinator_xml(), {"start": "2026-01-01T00:00Z"}, "E1004", "end", id="unresolved-variable"),
    ],
)
def test_submitted_application_errors(ann: User, tmp_path: Path, xml: str, properties: dict[str, str], code: str, named: str) -> None:
    """The application's own errors come back with Oozie's codes and a message naming the problem; nothing stored."""
    (tmp_path / "coordinator.xml").write_text(xml)
    response = Oozie(ann).submit({"oozie.coord.application.path": str(tmp_path / "coordinator.xml"), **properties})
    status, got, message = error_of(response)
    assert (status, got) == (400, code) and named in message
    assert CoordinatorJob.objects.count() == 0 and Command.objects.count() == 0


def test_dryrun_submission_and_job(ann: User, tmp_path: Path) -> None:
    """POST jobs?action=dryrun plans without storing ({"id": <plan text>}); PUT job?action=dryrun re-plans a job."""
    properties = {"oozie.coord.application.path": f"file://{app_dir(tmp_path)}", **window()}
    response = Oozie(ann).submit(properties, action="dryrun")
    assert response.status_code == 200, response.headers.get("oozie-error-message")
    assert "action 1" in response.json()["id"] and CoordinatorJob.objects.count() == 0
    job = running_job(ann)
    planned: dict[str, Any] = Oozie(ann).put(f"job/{job.id}", action="dryrun", len=2).json()
    assert [a["number"] for a in planned["actions"]] == [1, 2]
