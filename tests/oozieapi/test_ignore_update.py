"""ignore and update in every interface: Oozie's API (the requests Oozie's client sends), the native API and the CLI."""

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.utils import timezone

from coordinators.choices import ActionStatus, JobStatus
from coordinators.models import CoordinatorJob
from coordinators.services import control, submit_from_properties
from datasets.timeline import format_datetime
from oozie.definitions import serialize_hadoop_configuration
from tests.coordinators.api.factories import api
from tests.oozieapi.client import Oozie, error_of
from tests.support.engine import run_pending_commands
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)
APP_PATH = "oozie.coord.application.path"
XML = "application/xml;charset=UTF-8"


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Commands run in process, doorbells go to the private Redis."""


def coordinator(concurrency: int = 1, colour: str = "red") -> str:
    return f"""<coordinator-app name="iu" frequency="${{coord:minutes(1)}}" start="${{start}}" end="${{end}}" timezone="UTC"
    xmlns="uri:oozie:coordinator:0.4">
  <controls>
    <concurrency>{concurrency}</concurrency>
  </controls>
  <action><workflow><app-path>task:examples.noop</app-path>
    <configuration><property><name>colour</name><value>{colour}</value></property></configuration>
  </workflow></action>
</coordinator-app>
"""


def window() -> dict[str, str]:
    start = timezone.now().replace(second=0, microsecond=0) - timedelta(minutes=5)
    return {"start": format_datetime(start), "end": format_datetime(start + timedelta(hours=1))}


def job_with_app(owner: User, app: Path) -> CoordinatorJob:
    """A running job read from app/coordinator.xml, its first actions FAILED, KILLED and SUCCEEDED."""
    app.mkdir(exist_ok=True)
    (app / "coordinator.xml").write_text(coordinator())
    job = submit_from_properties({APP_PATH: f"file://{app}", **window()}, owner=owner)
    run_pending_commands()
    for number, status in ((1, ActionStatus.FAILED), (2, ActionStatus.KILLED), (3, ActionStatus.SUCCEEDED)):
        job.actions.filter(number=number).update(status=status, pending=False)
    return CoordinatorJob.objects.get(pk=job.pk)


def statuses(job: CoordinatorJob) -> dict[int, str]:
    return dict(job.actions.values_list("number", "status"))


def put_xml(oozie: Oozie, path: str, body: bytes, content_type: str = XML, **params: Any) -> Any:
    """A PUT with a configuration body, as Oozie's client sends update."""
    return oozie.client.put(f"/oozie/{oozie.version}/{path}?{urlencode(params)}", body, content_type=content_type,
                            headers=oozie.headers)


# --- Oozie's API -----------------------------------------------------------------------------


def test_oozie_ignore_of_actions(ann: User, tmp_path: Path) -> None:
    """PUT ?action=ignore&type=action&scope=1-2: 200 {"actions": [...]} (Oozie's JSON); then they are IGNORED."""
    job = job_with_app(ann, tmp_path / "app")
    response = Oozie(ann).put(f"job/{job.id}", action="ignore", type="action", scope="1-2")
    assert response.status_code == 200, response.headers.get("oozie-error-message")
    body = response.json()
    assert [a["actionNumber"] for a in body["actions"]] == [1, 2]
    assert {a["id"] for a in body["actions"]} == {f"{job.id}@1", f"{job.id}@2"}
    run_pending_commands()
    assert (statuses(job)[1], statuses(job)[2]) == (ActionStatus.IGNORED, ActionStatus.IGNORED)
    info = Oozie(ann).get(f"job/{job.id}", show="info", len="50", filter="status=IGNORED").json()
    assert [a["actionNumber"] for a in info["actions"]] == [1, 2]


def test_oozie_ignore_refusals(ann: User, bob: User, tmp_path: Path) -> None:
    """E1024 naming the ineligible actions (nothing changes); E1015 for a job not FAILED or KILLED; E0509 for others."""
    job = job_with_app(ann, tmp_path / "app")
    before, commands = statuses(job), Command.objects.count()
    oozie = Oozie(ann)
    status, code, message = error_of(oozie.put(f"job/{job.id}", action="ignore", type="action", scope="1-3"))
    assert (status, code) == (400, "E1024") and "action number(s) [3]" in message
    assert message.startswith("E1024: Cannot run ignore command: [")
    assert error_of(oozie.put(f"job/{job.id}", action="ignore", type="week", scope="1"))[:2] == (400, "E1024")
    assert error_of(oozie.put(f"job/{job.id}", action="ignore", type="action", scope="1-x"))[:2] == (400, "E1024")
    status, code, message = error_of(oozie.put(f"job/{job.id}", action="ignore"))
    assert (status, code) == (400, "E1015") and "RUNNING" in message
    assert error_of(Oozie(bob).put(f"job/{job.id}", action="ignore", type="action", scope="1"))[:2] == (403, "E0509")
    assert error_of(oozie.put("job/0000999-260101000000000-C", action="ignore"))[:2] == (400, "E0604")
    assert statuses(job) == before and Command.objects.count() == commands


def test_oozie_ignore_of_a_job_and_what_is_not_supported(ann: User, tmp_path: Path) -> None:
    """PUT ?action=ignore on a KILLED job: 200, empty body, then IGNORED; bundles: E0302 as Oozie (workflows: oozieapi.workflows)."""
    job = job_with_app(ann, tmp_path / "app")
    control(job.id, "kill", actor=ann)
    run_pending_commands()
    response = Oozie(ann).put(f"job/{job.id}", action="ignore")
    assert (response.status_code, response.content) == (200, b"")
    run_pending_commands()
    assert CoordinatorJob.objects.get(pk=job.pk).status == JobStatus.IGNORED
    assert Oozie(ann).get(f"job/{job.id}", show="status").json() == {"status": "IGNORED"}
    assert error_of(Oozie(ann).put("job/0000001-260101000000000-B", action="ignore")) == (
        400, "E0302", "E0302: Invalid parameter [Bundle Ignore Not supported]",
    )


def test_oozie_update_dryrun_and_apply(ann: User, tmp_path: Path) -> None:
    """PUT ?action=update[&dryrun=true] with Oozie's XML configuration body: {"update": {"diff": ...}}."""
    job = job_with_app(ann, tmp_path / "app")
    (tmp_path / "app" / "coordinator.xml").write_text(coordinator(concurrency=4))
    oozie = Oozie(ann)
    commands = Command.objects.count()
    response = put_xml(oozie, f"job/{job.id}", serialize_hadoop_configuration({}), action="update", dryrun="true")
    assert response.status_code == 200, response.headers.get("oozie-error-message")
    diff = response.json()["update"]["diff"]
    assert diff.startswith("**********Job definition changes**********\n")
    assert "+    <concurrency>4</concurrency>\n" in diff and "No conf update requested" in diff
    assert Command.objects.count() == commands and CoordinatorJob.objects.get(pk=job.pk).concurrency == 1
    new_conf = {**job.configuration, "extra": "yes", "user.name": "ann"}
    response = put_xml(oozie, f"job/{job.id}", serialize_hadoop_configuration(new_conf), action="update")
    assert response.status_code == 200
    assert "+    <name>extra</name>\n" in response.json()["update"]["diff"]
    run_pending_commands()
    job = CoordinatorJob.objects.get(pk=job.pk)
    assert job.concurrency == 4 and job.configuration["extra"] == "yes"
    hidden = put_xml(oozie, f"job/{job.id}", b"", action="update", dryrun="true", showdiff="false")
    assert hidden.json() == {"update": {"diff": ""}}


def test_oozie_update_refusals(ann: User, bob: User, tmp_path: Path) -> None:
    """E1023 for what may not change, E0700 for a bad body or definition, E0300 for a body that is not XML, E0509 for others."""
    job = job_with_app(ann, tmp_path / "app")
    oozie = Oozie(ann)
    before = CoordinatorJob.objects.get(pk=job.pk).definition
    (tmp_path / "app" / "coordinator.xml").write_text(coordinator().replace('name="iu"', 'name="renamed"'))
    status, code, message = error_of(put_xml(oozie, f"job/{job.id}", b"", action="update"))
    assert (status, code) == (400, "E1023") and "Coord name can't be changed" in message
    (tmp_path / "app" / "coordinator.xml").write_text("<coordinator-app")
    assert error_of(put_xml(oozie, f"job/{job.id}", b"", action="update"))[:2] == (400, "E0700")
    (tmp_path / "app" / "coordinator.xml").write_text(coordinator(concurrency=2))
    assert error_of(put_xml(oozie, f"job/{job.id}", b"<configuration>", action="update"))[:2] == (400, "E0700")
    assert error_of(put_xml(oozie, f"job/{job.id}", b"a=b", content_type="text/plain", action="update"))[:2] == (400, "E0300")
    assert error_of(put_xml(oozie, f"job/{job.id}", b"", action="update", dryrun="maybe"))[:2] == (400, "E0303")
    assert error_of(put_xml(Oozie(bob), f"job/{job.id}", b"", action="update"))[:2] == (403, "E0509")
    CoordinatorJob.objects.filter(pk=job.pk).update(status=JobStatus.SUCCEEDED)
    status, code, message = error_of(put_xml(oozie, f"job/{job.id}", b"", action="update"))
    assert (status, code) == (400, "E1023") and "finished processing" in message
    assert CoordinatorJob.objects.get(pk=job.pk).definition == before


# --- native API ------------------------------------------------------------------------------


def test_native_ignore(ann: User, bob: User, tmp_path: Path) -> None:
    """POST /api/v1/coordinator-jobs/<id>/ignore/: 202 with the actions; no scope: the job; refusals 400/403."""
    job = job_with_app(ann, tmp_path / "app")
    url = f"/api/v1/coordinator-jobs/{job.id}/ignore/"
    response = api(ann).post(url, {"scope": "1-2", "type": "action"}, format="json")
    assert response.status_code == 202, response.content
    assert [a["number"] for a in response.json()["actions"]] == [1, 2]
    refused = api(ann).post(url, {"scope": "3"}, format="json")
    assert refused.status_code == 400 and "action number(s) [3]" in refused.json()["detail"]
    assert api(ann).post(url, {"scope": "1", "type": "week"}, format="json").status_code == 400
    assert api(bob).post(url, {"scope": "1"}, format="json").status_code == 403
    assert api(ann).post(url, {}, format="json").status_code == 400  # the job is RUNNING
    run_pending_commands()
    assert (statuses(job)[1], statuses(job)[2], statuses(job)[3]) == ("IGNORED", "IGNORED", "SUCCEEDED")
    CoordinatorJob.objects.filter(pk=job.pk).update(status=JobStatus.FAILED)
    response = api(ann).post(url, {}, format="json")
    assert response.status_code == 202 and response.json()["id"] == job.id
    run_pending_commands()
    assert CoordinatorJob.objects.get(pk=job.pk).status == JobStatus.IGNORED


def test_native_update(ann: User, bob: User, tmp_path: Path) -> None:
    """POST /api/v1/coordinator-jobs/<id>/update/: 200 with the diff (dryrun), 202 when queued; bad input 400, others 403."""
    job = job_with_app(ann, tmp_path / "app")
    (tmp_path / "app" / "coordinator.xml").write_text(coordinator(colour="blue"))
    url = f"/api/v1/coordinator-jobs/{job.id}/update/"
    dry = api(ann).post(url, {"dryrun": True}, format="json")
    assert dry.status_code == 200 and dry.json()["queued"] is False
    assert "+    <configuration><property><name>colour</name><value>blue</value>" in dry.json()["diff"]
    assert "red" in CoordinatorJob.objects.get(pk=job.pk).definition
    assert api(bob).post(url, {"dryrun": True}, format="json").status_code == 403
    missing = api(ann).post(url, {"configuration": {"start": window()["start"]}}, format="json")
    assert missing.status_code == 400 and "end" in missing.json()["detail"]
    assert api(ann).post(url, {"configuration": ["not", "a", "mapping"]}, format="json").status_code == 400
    queued = api(ann).post(url, {"configuration": {**window(), "note": "x"}}, format="json")
    assert queued.status_code == 202 and queued.json()["queued"] is True
    run_pending_commands()
    job = CoordinatorJob.objects.get(pk=job.pk)
    assert "blue" in job.definition and job.configuration["note"] == "x"


# --- CLI -------------------------------------------------------------------------------------


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("job", *args, stdout=out)
    return out.getvalue()


def test_cli_ignore_and_update(ann: User, tmp_path: Path) -> None:
    """`job -ignore ID -action 1`, `job -update ID [-config F] -dryrun`: as oozie job prints them; errors one line."""
    job = job_with_app(ann, tmp_path / "app")
    text = run("-ignore", job.id, "-action", "1", "-user", "ann")
    assert f"{job.id}@1" in text and "1 action(s)" in text
    with pytest.raises(CommandError, match=r"action number\(s\) \[3\]"):
        run("-ignore", job.id, "-action", "3", "-user", "ann")
    with pytest.raises(CommandError, match="not both"):
        run("-ignore", job.id, "-action", "1", "-date", "2026-01-01T00:00Z", "-user", "ann")
    run_pending_commands()
    assert statuses(job)[1] == ActionStatus.IGNORED

    (tmp_path / "app" / "coordinator.xml").write_text(coordinator(concurrency=6))
    properties = tmp_path / "job.properties"
    properties.write_text("".join(f"{k}={v}\n" for k, v in {**window(), "label": "cli", APP_PATH: "app"}.items()))
    text = run("-update", job.id, "-config", str(properties), "-dryrun", "-user", "ann")
    assert "+    <concurrency>6</concurrency>" in text and "+    <name>label</name>" in text
    assert text.rstrip().endswith("update: dry run, nothing changed")
    assert CoordinatorJob.objects.get(pk=job.pk).concurrency == 1
    assert "update: " in run("-update", job.id, "-user", "ann")
    run_pending_commands()
    assert CoordinatorJob.objects.get(pk=job.pk).concurrency == 6
    with pytest.raises(CommandError, match="-dryrun goes with"):
        run("-kill", job.id, "-dryrun")
    with pytest.raises(CommandError, match="Bundle ignore is not supported"):
        run("-ignore", "0000001-260101000000000-B", "-user", "ann")
