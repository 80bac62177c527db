"""Status history and waiting reasons: every status change of a job or action is recorded, shown and served."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from coordinators.choices import ActionStatus, IllegalTransition, JobStatus
from coordinators.commands.actions import CoordActionStatusXCommand
from coordinators.models import CoordinatorAction, CoordinatorJob, StatusChange
from coordinators.services import control, submit_coordinator
from datasets.timeline import format_datetime
from statusservice import coordinators as services
from tests.coordinators.api.factories import api, user
from tests.support.engine import run_pending_commands
from xcommands.queue import enqueue

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Every test here runs commands in process."""


def hour(offset: int) -> str:
    return format_datetime((timezone.now() + timedelta(hours=offset)).replace(minute=0, second=0, microsecond=0))


def submit(owner: User, data: Path, *, timeout: int = -1, hours: int = 1) -> CoordinatorJob:
    """An hourly job from the current hour, one data-in of the same hour (missing until written), checked once."""
    xml = f"""<coordinator-app name="hist" frequency="${{coord:hours(1)}}" start="{hour(0)}" end="{hour(hours)}" timezone="UTC"
        xmlns="uri:oozie:coordinator:0.5">
      <controls><timeout>{timeout}</timeout></controls>
      <datasets><dataset name="raw" frequency="${{coord:hours(1)}}" initial-instance="2020-01-01T00:00Z" timezone="UTC">
        <uri-template>file://{data}/raw/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}</uri-template></dataset></datasets>
      <input-events><data-in name="in" dataset="raw"><instance>${{coord:current(0)}}</instance></data-in></input-events>
      <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
    </coordinator-app>"""
    job = submit_coordinator(xml, {}, owner=owner)
    run_pending_commands()
    check()
    return job


def check() -> None:
    """One input-check tick for every waiting action."""
    CoordinatorAction.objects.filter(status=ActionStatus.WAITING).update(next_check_at=timezone.now())
    services.input_checks(timezone.now())
    run_pending_commands()


def write(data: Path, action: CoordinatorAction) -> None:
    folder = Path(action.missing_dependencies[0][0].removeprefix("file://"))
    folder.mkdir(parents=True)
    (folder / "_SUCCESS").write_text("")


def changes(object_id: str) -> list[tuple[str, str, str]]:
    return [(c.from_status, c.to_status, c.by) for c in StatusChange.objects.filter(object_id=object_id).order_by("at", "id")]


def test_a_run_records_every_step_by_the_command_that_took_it(tmp_path: Path) -> None:
    """WAITING -> READY -> SUBMITTED -> RUNNING -> SUCCEEDED, each by its command; the job's own history is separate."""
    job = submit(user("ann"), tmp_path)
    action = job.actions.get(number=1)
    assert changes(action.id) == []  # still waiting: nothing changed yet
    write(tmp_path, action)
    check()
    action.refresh_from_db()
    enqueue(CoordActionStatusXCommand(job_id=job.id, number=1, status=ActionStatus.SUCCEEDED,
                                      workflow_id=action.external_id))
    run_pending_commands()
    # The due start (ADR 0026) checks and starts due actions of jobs whose key is idle: it names itself.
    check_cmd, status_cmd = "coordinators.due-start (service)", "coordinators.CoordActionStatusXCommand"
    assert changes(action.id) == [
        ("WAITING", "READY", check_cmd), ("READY", "SUBMITTED", check_cmd),
        ("SUBMITTED", "RUNNING", status_cmd), ("RUNNING", "SUCCEEDED", status_cmd),
    ]
    job_changes = StatusChange.objects.filter(object_id=job.id)
    assert {c.kind for c in job_changes} == {StatusChange.Kind.JOB}
    assert [(c.from_status, c.to_status, c.by) for c in job_changes.order_by("at", "id")] == [
        ("PREP", "RUNNING", "coordinators.CoordStartXCommand (ann)"),  # submitted and started by ann
        ("RUNNING", "SUCCEEDED", status_cmd),  # a worker's report: nobody asked
    ]
    assert StatusChange.objects.filter(job_id=job.id, kind=StatusChange.Kind.ACTION).count() == 4


def test_a_kill_records_each_action_and_the_job_with_a_reason(tmp_path: Path) -> None:
    """Actions killed in bulk are recorded one by one, with the job's kill as their reason."""
    owner = user("ann")
    job = submit(owner, tmp_path)
    control(job.id, "kill", actor=owner)
    run_pending_commands()
    action = job.actions.get(number=1)
    killed = StatusChange.objects.get(object_id=action.id)
    assert (killed.from_status, killed.to_status) == ("WAITING", "KILLED")
    assert killed.reason == f"coordinator job {job.id} killed"
    assert killed.by == "coordinators.CoordKillXCommand (ann)"  # the command, and who asked for it
    job_kill = StatusChange.objects.get(object_id=job.id, to_status=JobStatus.KILLED)
    assert (job_kill.kind, job_kill.from_status, job_kill.by) == ("job", "RUNNING", "coordinators.CoordKillXCommand (ann)")


def test_a_timeout_says_why(tmp_path: Path) -> None:
    """TIMEDOUT is recorded with the action's error message as its reason."""
    job = submit(user("ann"), tmp_path, timeout=0)
    check()
    action = job.actions.get(number=1)
    assert action.status == ActionStatus.TIMEDOUT
    change = StatusChange.objects.get(object_id=action.id)
    assert change.to_status == ActionStatus.TIMEDOUT and "1 input" in change.reason


def test_an_action_failed_at_creation_is_recorded_with_its_reason() -> None:
    """Actions inserted in bulk (FAILED at creation: a reversed range) still get their WAITING -> FAILED change."""
    def ago(n: int) -> str:
        return format_datetime((timezone.now() - timedelta(minutes=n)).replace(second=0, microsecond=0))

    xml = f"""<coordinator-app name="reversed" frequency="${{coord:minutes(1)}}" start="{ago(3)}" end="{ago(0)}"
        timezone="UTC" xmlns="uri:oozie:coordinator:0.4">
      <datasets><dataset name="d" frequency="${{coord:minutes(1)}}" initial-instance="2000-01-01T00:00Z" timezone="UTC">
        <uri-template>file:///never/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}${{MINUTE}}</uri-template></dataset></datasets>
      <input-events><data-in name="i" dataset="d"><start-instance>${{coord:absolute('{ago(1)}')}}</start-instance>
        <end-instance>${{coord:current(0)}}</end-instance></data-in></input-events>
      <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
    </coordinator-app>"""
    job = submit_coordinator(xml, {}, owner=user("ann"))
    run_pending_commands()
    first = job.actions.get(number=1)
    assert first.status == ActionStatus.FAILED
    change = StatusChange.objects.get(object_id=first.id)
    assert (change.from_status, change.to_status) == ("WAITING", "FAILED")
    assert change.reason == first.error_message != "" and change.by == "coordinators.CoordMaterializeXCommand"


def test_an_illegal_transition_records_nothing(tmp_path: Path) -> None:
    """A refused change is neither applied nor recorded."""
    job = submit(user("ann"), tmp_path)
    action = job.actions.get(number=1)
    with pytest.raises(IllegalTransition):
        action.transition_to(ActionStatus.SUCCEEDED)
    action.save()
    assert StatusChange.objects.count() == 1  # the job's start only


def test_waiting_says_how_many_which_and_when(tmp_path: Path) -> None:
    """A WAITING action: one input missing, its URI and flag, the next check; other statuses have no waiting."""
    job = submit(user("ann"), tmp_path, timeout=180)
    action = job.actions.get(number=1)
    info = action.waiting()
    assert info is not None
    assert info["missing"] == 1 and info["first_missing"] == action.missing_dependencies[0][0]
    assert info["done_flag"] == "_SUCCESS"
    assert info["next_check_at"] == action.next_check_at and info["timeout_at"] == action.timeout_at
    text = action.waiting_text()
    assert text.startswith(f"1 missing, first {info['first_missing']} (_SUCCESS); next check ") and "times out" in text
    write(tmp_path, action)
    check()
    action.refresh_from_db()
    assert action.waiting() is None and action.waiting_text() == ""


def test_job_info_shows_what_each_waiting_action_waits_for(tmp_path: Path) -> None:
    """`manage.py job -info`: a line under each WAITING action."""
    job = submit(user("ann"), tmp_path)
    out = StringIO()
    call_command("job", "-info", job.id, stdout=out)
    action = job.actions.get(number=1)
    assert f"    waiting: 1 missing, first {action.missing_dependencies[0][0]} (_SUCCESS)" in out.getvalue()


# --- native API ---------------------------------------------------------------------------------


def test_the_api_serves_waiting_times_and_history(tmp_path: Path) -> None:
    """An action carries `waiting` and its times; /history/ pages its changes, the job's lists the job's only."""
    ann = user("ann")
    job = submit(ann, tmp_path)
    action = job.actions.get(number=1)
    body = api(ann).get(f"/api/v1/coordinator-actions/{action.id}/").json()
    assert body["waiting"]["missing"] == 1 and body["waiting"]["first_missing"] == action.missing_dependencies[0][0]
    assert body["created_at"] is not None and body["ready_at"] is None and body["started_at"] is None
    listed = api(ann).get(f"/api/v1/coordinator-jobs/{job.id}/actions/").json()["results"][0]
    assert listed["waiting"]["next_check_at"] is not None

    write(tmp_path, action)
    check()
    body = api(ann).get(f"/api/v1/coordinator-actions/{action.id}/").json()
    assert body["waiting"] is None and body["ready_at"] is not None and body["submitted_at"] is not None
    history = api(ann).get(f"/api/v1/coordinator-actions/{action.id}/history/").json()["results"]
    assert [(h["from_status"], h["to_status"]) for h in history] == [("WAITING", "READY"), ("READY", "SUBMITTED")]
    assert history[0]["by"] == "coordinators.due-start (service)"
    job_history = api(ann).get(f"/api/v1/coordinator-jobs/{job.id}/history/").json()["results"]
    assert [(h["object_id"], h["to_status"]) for h in job_history] == [(job.id, "RUNNING")]


def test_history_is_private_to_those_who_may_read_the_job(tmp_path: Path, settings: object) -> None:
    """With reads restricted, another user gets 404 for both histories; anonymous callers are refused."""
    settings.COORD_RESTRICT_READS = True  # type: ignore[attr-defined]
    job = submit(user("ann"), tmp_path)
    action = job.actions.get(number=1)
    bob = user("bob")
    assert api(bob).get(f"/api/v1/coordinator-actions/{action.id}/history/").status_code == 404
    assert api(bob).get(f"/api/v1/coordinator-jobs/{job.id}/history/").status_code == 404
    assert api(None).get(f"/api/v1/coordinator-jobs/{job.id}/history/").status_code in (401, 403)
    assert api(bob).get("/api/v1/coordinator-jobs/0000000-000000000000000-C/history/").status_code == 404


# --- admin --------------------------------------------------------------------------------------


def test_admin_pages_show_waiting_and_history(tmp_path: Path, client: Client) -> None:
    """The action list says what it waits for; "History" of the job and action is their status changes."""
    operator = User.objects.create_superuser("operator", "operator@example.com", "pw")
    client.force_login(operator)
    job = submit(operator, tmp_path)
    action = job.actions.get(number=1)
    listing = client.get(reverse("admin:coordinators_coordinatoraction_changelist")).content.decode()
    assert "1 missing" in listing
    page = client.get(reverse("admin:coordinators_coordinatoraction_change", args=[quote(action.id)])).content.decode()
    assert action.missing_dependencies[0][0] in page and "Status history" in page
    timeline = client.get(reverse("admin:coordinators_coordinatorjob_timeline", args=[quote(job.id)])).content.decode()
    assert f"1 missing, first {action.missing_dependencies[0][0]}" in timeline
    history = client.get(reverse("admin:coordinators_coordinatorjob_history", args=[quote(job.id)]))
    assert history.status_code == 200
    text = history.content.decode()
    assert "PREP" in text and "RUNNING" in text and "CoordStartXCommand" in text
    assert "no change history" not in text.lower()
    empty = client.get(reverse("admin:coordinators_coordinatoraction_history", args=[quote(action.id)])).content.decode()
    assert "no status change recorded" in empty
    missing = client.get(reverse("admin:coordinators_coordinatorjob_history", args=["nope"]))
    assert missing.status_code == 404
