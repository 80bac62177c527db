"""Killing a range of a coordinator's actions in every interface: Oozie's API (the request Oozie's client sends), the native API and the CLI."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from coordinators.choices import ActionStatus, JobStatus
from coordinators.models import CoordinatorJob
from coordinators.services import submit_coordinator
from datasets.timeline import format_datetime
from statusservice.tasks import input_checks
from tests.coordinators.api.factories import api
from tests.oozieapi.client import Oozie, error_of
from tests.support.coordinator_apps import coordinator_xml
from tests.support.engine import run_pending_commands
from workflows import runner
from workflows.choices import NodeStatus
from workflows.models import WorkflowNode
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)
A, J = ActionStatus, JobStatus


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Commands run in process, doorbells go to the private Redis."""


def launched(owner: User) -> CoordinatorJob:
    """Four due actions, concurrency 1: @1 ran (SUCCEEDED, by a worker's hand), @2 SUBMITTED in its slot, @3-@4 READY."""
    job = submit_coordinator(coordinator_xml("examples.noop", actions=4, concurrency=1), {}, owner=owner)
    run_pending_commands()
    input_checks()
    run_pending_commands()
    node = WorkflowNode.objects.get(workflow_id=job.actions.get(number=1).external_id)
    assert runner.run_node(node.id, node.attempt, "w1@host") == NodeStatus.OK
    run_pending_commands()
    assert statuses(job) == {1: A.SUCCEEDED, 2: A.SUBMITTED, 3: A.READY, 4: A.READY}
    return CoordinatorJob.objects.get(pk=job.pk)


def statuses(job: CoordinatorJob) -> dict[int, str]:
    return dict(job.actions.values_list("number", "status"))


def unchanged(job: CoordinatorJob) -> tuple[dict[int, str], str, int]:
    """What a refusal must leave as it was: the actions, the job's status, the queue."""
    return statuses(job), CoordinatorJob.objects.get(pk=job.pk).status, Command.objects.count()


# --- Oozie's API -----------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_oozie_kill_of_actions(ann: User, version: str) -> None:
    """PUT ?action=kill&type=action&scope=1-3: 200 {"actions": [...]} with the live ones; then KILLED, @4 takes the freed
    slot, the job RUNNINGWITHERROR."""
    job = launched(ann)
    response = Oozie(ann, version=version).put(f"job/{job.id}", action="kill", type="action", scope="1-3")
    assert response.status_code == 200, response.headers.get("oozie-error-message")
    body = response.json()
    assert [(a["actionNumber"], a["id"], a["status"]) for a in body["actions"]] == [
        (2, f"{job.id}@2", "SUBMITTED"), (3, f"{job.id}@3", "READY"),
    ]
    run_pending_commands()
    after = statuses(job)
    assert (after[1], after[2], after[3], after[4]) == (A.SUCCEEDED, A.KILLED, A.KILLED, A.SUBMITTED)
    assert CoordinatorJob.objects.get(pk=job.pk).status == J.RUNNINGWITHERROR
    info = Oozie(ann).get(f"job/{job.id}", show="info", len="50", filter="status=KILLED").json()
    assert [a["actionNumber"] for a in info["actions"]] == [2, 3]


def test_oozie_kill_of_actions_by_date(ann: User) -> None:
    """type=date&scope=A::B names the live actions whose nominal time falls in the range."""
    job = launched(ann)
    third, fourth = (format_datetime(job.actions.get(number=n).nominal_time) for n in (3, 4))
    response = Oozie(ann).put(f"job/{job.id}", action="kill", type="date", scope=f"{third}::{fourth}")
    assert response.status_code == 200, response.headers.get("oozie-error-message")
    assert [a["actionNumber"] for a in response.json()["actions"]] == [3, 4]
    run_pending_commands()
    assert (statuses(job)[2], statuses(job)[3], statuses(job)[4]) == (A.SUBMITTED, A.KILLED, A.KILLED)
    assert CoordinatorJob.objects.get(pk=job.pk).status == J.RUNNINGWITHERROR


@pytest.mark.parametrize(
    ("params", "code", "words"),
    [
        pytest.param({"type": "week", "scope": "1"}, "E0302", "type=week: a coordinator kill takes type=action or type=date",
                     id="bad-type"),
        pytest.param({"type": "action"}, "E0305", "Missing parameter [scope]", id="no-scope"),
        pytest.param({"type": "action", "scope": " "}, "E0305", "Missing parameter [scope]", id="blank-scope"),
        pytest.param({"scope": "1-3"}, "E0305", "Missing parameter [type]", id="no-type"),
        pytest.param({"type": "action", "scope": "1-x"}, "E0302", "expected a number or a range", id="bad-numbers"),
        pytest.param({"type": "date", "scope": "yesterday"}, "E0302", "-date 'yesterday'", id="bad-date"),
        pytest.param({"type": "action", "scope": "1"}, "E1020", "no action of", id="nothing-live"),
    ],
)
def test_oozie_kill_refusals_change_nothing(ann: User, params: dict[str, str], code: str, words: str) -> None:
    """A bad type or scope, or a scope with nothing live: 400 with Oozie's headers; nothing is queued or changed."""
    job = launched(ann)
    before = unchanged(job)
    status, got, message = error_of(Oozie(ann).put(f"job/{job.id}", action="kill", **params))
    assert (status, got) == (400, code) and words in message, message
    assert unchanged(job) == before


def test_oozie_kill_of_actions_of_a_finished_job_or_by_another_user(ann: User, bob: User) -> None:
    """E1020 for a finished job (as Oozie's CoordActionsKillXCommand), E0509 for another user, E0604 for no job."""
    job = launched(ann)
    before = unchanged(job)
    assert error_of(Oozie(bob).put(f"job/{job.id}", action="kill", type="action", scope="2"))[:2] == (403, "E0509")
    assert unchanged(job) == before
    CoordinatorJob.objects.filter(pk=job.pk).update(status=J.SUCCEEDED)
    before = unchanged(job)
    status, code, message = error_of(Oozie(ann).put(f"job/{job.id}", action="kill", type="action", scope="2"))
    assert (status, code) == (400, "E1020") and "is SUCCEEDED: its actions cannot be killed" in message
    assert message.startswith("E1020: Could not kill coord job, this job either finished successfully")
    assert unchanged(job) == before
    missing = Oozie(ann).put("job/0000999-260101000000000-C", action="kill", type="action", scope="1")
    assert error_of(missing)[:2] == (400, "E0604")


def test_oozie_kill_without_scope_kills_the_job(ann: User) -> None:
    """PUT ?action=kill alone: the whole job, as before (200, empty body); every live action KILLED."""
    job = launched(ann)
    response = Oozie(ann).put(f"job/{job.id}", action="kill")
    assert (response.status_code, response.content) == (200, b"")
    run_pending_commands()
    assert CoordinatorJob.objects.get(pk=job.pk).status == J.KILLED
    assert set(statuses(job).values()) == {A.SUCCEEDED, A.KILLED}


# --- native API ------------------------------------------------------------------------------


def test_native_kill_of_actions(ann: User, bob: User) -> None:
    """POST /api/v1/coordinator-jobs/<id>/kill/ {"type", "scope"}: 202 with the live actions; refusals 400/403/409, nothing changes."""
    job = launched(ann)
    url = f"/api/v1/coordinator-jobs/{job.id}/kill/"
    before = unchanged(job)
    for body, status in (
        ({"type": "action"}, 400), ({"scope": ""}, 400), ({"type": "week", "scope": "1"}, 400),
        ({"type": "action", "scope": "2-"}, 400), ({"type": "action", "scope": "1"}, 409),
    ):
        refused = api(ann).post(url, body, format="json")
        assert refused.status_code == status, (body, refused.content)
    assert api(bob).post(url, {"type": "action", "scope": "2"}, format="json").status_code == 403
    assert unchanged(job) == before
    response = api(ann).post(url, {"type": "action", "scope": "1-3"}, format="json")
    assert response.status_code == 202, response.content
    assert [(a["number"], a["status"]) for a in response.json()["actions"]] == [(2, "SUBMITTED"), (3, "READY")]
    run_pending_commands()
    assert (statuses(job)[2], statuses(job)[3], statuses(job)[4]) == (A.KILLED, A.KILLED, A.SUBMITTED)
    third = format_datetime(job.actions.get(number=4).nominal_time)
    by_date = api(ann).post(url, {"scope": f"{third}::{third}"}, format="json")  # type defaults to action
    assert by_date.status_code == 400 and "expected a number" in by_date.json()["detail"]
    dated = api(ann).post(url, {"type": "date", "scope": third}, format="json")
    assert dated.status_code == 202 and [a["number"] for a in dated.json()["actions"]] == [4]
    run_pending_commands()
    assert CoordinatorJob.objects.get(pk=job.pk).status == J.DONEWITHERROR  # nothing left to run
    finished = api(ann).post(url, {"type": "action", "scope": "4"}, format="json")
    assert finished.status_code == 409 and "DONEWITHERROR" in finished.json()["detail"]


def test_native_kill_without_a_body_kills_the_job(ann: User) -> None:
    """No body (or `{}`): the job, 202 with it, as before."""
    job = launched(ann)
    response = api(ann).post(f"/api/v1/coordinator-jobs/{job.id}/kill/")
    assert response.status_code == 202 and response.json()["id"] == job.id
    run_pending_commands()
    assert CoordinatorJob.objects.get(pk=job.pk).status == J.KILLED


# --- CLI -------------------------------------------------------------------------------------


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("job", *args, stdout=out)
    return out.getvalue()


def test_cli_kill_of_actions(ann: User, bob: User) -> None:
    """`job -kill ID -action 2-3` / `-date A`: the actions listed as -ignore lists them; errors are one line, nothing changes."""
    job = launched(ann)
    before = unchanged(job)
    for args, message in (
        (("-action", "2", "-date", "2026-01-01T00:00Z"), "not both"),
        (("-action", " "), "-action is empty"),
        (("-action", "x"), "expected a number"),
        (("-action", "1"), "no action of"),
        (("-action", "2", "-user", "bob"), "may not"),
    ):
        with pytest.raises(CommandError, match=message):
            run("-kill", job.id, *args, *(() if "-user" in args else ("-user", "ann")))
    with pytest.raises(CommandError, match="only for a coordinator job, not a bundle"):
        run("-kill", "0000001-260101000000000-B", "-action", "1", "-user", "ann")
    with pytest.raises(CommandError, match="no coordinator job"):
        run("-kill", "0000999-260101000000000-C", "-action", "1", "-user", "ann")
    assert unchanged(job) == before
    text = run("-kill", job.id, "-action", "1-3", "-user", "ann")
    lines = text.splitlines()
    assert lines[2].split() == [f"{job.id}@2", "SUBMITTED", format_datetime(job.actions.get(number=2).nominal_time)]
    assert lines[3].split()[0] == f"{job.id}@3" and len(lines) == 5
    assert lines[-1] == f"kill: 2 action(s) of {job.id} queued (they become KILLED)"
    run_pending_commands()
    assert (statuses(job)[1], statuses(job)[2], statuses(job)[3]) == (A.SUCCEEDED, A.KILLED, A.KILLED)
    fourth = format_datetime(job.actions.get(number=4).nominal_time)
    assert f"{job.id}@4" in run("-kill", job.id, "-date", fourth, "-user", "ann")
    run_pending_commands()
    assert statuses(job)[4] == A.KILLED


def test_cli_kill_without_scope_kills_the_job(ann: User) -> None:
    """`job -kill ID`: the whole job, as before."""
    job = launched(ann)
    assert run("-kill", job.id, "-user", "ann").strip() == f"kill: {job.id} queued"
    run_pending_commands()
    assert CoordinatorJob.objects.get(pk=job.pk).status == J.KILLED

