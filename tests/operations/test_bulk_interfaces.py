"""Bulk verbs through every interface: the native API, Oozie's `PUT /jobs`, the admin, `manage.py jobs`; and /operations/.

Commands run in process (`run_all`), so each test sees the answer before any job ran, then
the outcome once they have.
"""

from __future__ import annotations

import base64
import io
from typing import Any
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client, override_settings

from bundles.choices import BundleStatus
from bundles.models import BundleJob
from coordinators.choices import JobStatus
from coordinators.models import CoordinatorJob
from operations.bulk import start_bulk
from operations.choices import OperationStatus
from operations.models import Operation
from tests.coordinators.api.factories import api, bulk_jobs, user
from tests.support.bundles import settle
from tests.support.engine import run_all
from xcommands.models import Command

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]

BULK = "/api/v1/coordinator-jobs/bulk/"


def statuses(ids: list[str]) -> set[str]:
    return set(CoordinatorJob.objects.filter(pk__in=ids).values_list("status", flat=True))


def oozie(account: str) -> Client:
    client = Client()
    client.defaults["HTTP_AUTHORIZATION"] = "Basic " + base64.b64encode(f"{account}:{account}-password-123".encode()).decode()
    return client


# ---- native API -------------------------------------------------------------------------------


def test_native_bulk_answers_at_once_with_the_operation_and_its_progress_then_the_failures() -> None:
    """202 with the operation before any job ran; afterwards /operations/{id}/ shows counts, who failed why and what was skipped."""
    ann, bob = user("ann"), user("bob")
    mine = bulk_jobs(ann, 3)
    CoordinatorJob.objects.filter(pk=mine[0]).update(status=JobStatus.SUCCEEDED)
    theirs = CoordinatorJob.objects.create(
        **{f.attname: getattr(CoordinatorJob.objects.get(pk=mine[1]), f.attname) for f in CoordinatorJob._meta.concrete_fields
           if f.attname not in ("id", "owner_id")}, id="0009999-260101000000000-C", owner=bob,
    )
    response = api(ann).post(f"{BULK}?status=RUNNING,SUCCEEDED", {"action": "kill"}, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["type"] == "bulk-kill" and body["status"] == "RUNNING" and body["target"] == "coordinators:*"
    assert body["progress"]["total"] == 4 and body["progress"]["done"] == 0
    assert response["Location"] == f"/api/v1/operations/{body['id']}/"
    assert statuses(mine[1:]) == {JobStatus.RUNNING}  # nothing ran yet: the answer came first

    run_all()
    detail = api(ann).get(f"/api/v1/operations/{body['id']}/").json()
    assert detail["status"] == OperationStatus.FAILED
    assert detail["progress"]["counts"] == {"SUCCEEDED": 3, "FAILED": 1}
    reasons = {row["partition"]: row["error"] for row in detail["progress"]["failed"]}
    assert set(reasons) == {theirs.pk} and "may not modify" in reasons[theirs.pk]
    skipped = {row["partition"]: row["reason"] for row in detail["progress"]["skipped"]}
    assert set(skipped) == {mine[0]} and "SUCCEEDED" in skipped[mine[0]]  # an ended job: skipped, as Oozie does
    assert statuses(mine[1:]) == {JobStatus.KILLED} and statuses([theirs.pk]) == {JobStatus.RUNNING}


def test_native_bulk_over_a_thousand_jobs_answers_at_once() -> None:
    """1,200 selected jobs: one 202 with the operation (1,200 jobs waiting); the work happens afterwards."""
    ann = user("ann")
    ids = bulk_jobs(ann, 1200)
    response = api(ann).post(f"{BULK}?user=ann", {"action": "suspend"}, format="json")
    assert response.status_code == 202
    body = response.json()
    assert body["target"] == "coordinators:ann" and body["progress"] == {
        "total": 1200, "done": 0, "counts": {"ABSENT": 1200}, "failed": [], "skipped": [],
    }
    run_all(rounds=200)
    operation = Operation.objects.get(pk=body["id"])
    assert operation.status == OperationStatus.SUCCEEDED and statuses(ids) == {JobStatus.SUSPENDED}


def test_native_bulk_with_ids_acts_on_those_only() -> None:
    ann = user("ann")
    ids = bulk_jobs(ann, 3)
    response = api(ann).post(BULK, {"action": "suspend", "ids": ids[:2]}, format="json")
    assert response.status_code == 202 and response.json()["progress"]["total"] == 2
    run_all()
    assert statuses(ids[:2]) == {JobStatus.SUSPENDED} and statuses(ids[2:]) == {JobStatus.RUNNING}


@pytest.mark.parametrize(
    ("query", "body", "status", "message"),
    [
        pytest.param("", {"action": "kill"}, 400, "never selects every job", id="no-selection"),
        pytest.param("?name=nothing-like-this", {"action": "kill"}, 400, "select no coordinator job", id="empty"),
        pytest.param("?status=RUNNING", {"action": "explode"}, 400, "not a valid choice", id="bad-verb"),
        pytest.param("?status=BOGUS", {"action": "kill"}, 400, "BOGUS", id="bad-filter"),
        pytest.param("", {"action": "kill", "ids": ["0000001-x-C", "nope-C"]}, 400, "nope-C", id="unknown-id"),
        pytest.param("", {"action": "kill", "ids": []}, 400, "ids", id="empty-ids"),
    ],
)
def test_bad_bulk_requests_are_refused_and_start_nothing(query: str, body: dict[str, Any], status: int, message: str) -> None:
    ann = user("ann")
    bulk_jobs(ann, 1)
    response = api(ann).post(f"{BULK}{query}", body, format="json")
    assert response.status_code == status and message in response.content.decode()
    assert not Operation.objects.exists()


def test_bulk_over_the_limit_is_refused(settings: Any) -> None:
    settings.BULK_MAX_JOBS = 2
    ann = user("ann")
    bulk_jobs(ann, 3)
    response = api(ann).post(f"{BULK}?user=ann", {"action": "kill"}, format="json")
    assert response.status_code == 400 and "more than 2" in response.json()["detail"]
    assert not Operation.objects.exists()


def test_an_incompatible_bulk_verb_on_the_same_scope_is_409_naming_the_running_one() -> None:
    ann = user("ann")
    bulk_jobs(ann, 2)
    first = api(ann).post(f"{BULK}?user=ann", {"action": "kill"}, format="json").json()
    response = api(ann).post(f"{BULK}?user=ann", {"action": "resume"}, format="json")
    assert response.status_code == 409 and f"operation {first['id']} (bulk-kill" in response.json()["detail"]
    assert api(ann).post(f"{BULK}?user=ann", {"action": "suspend"}, format="json").status_code == 202
    assert Operation.objects.count() == 2


def test_bundle_bulk_kills_the_selected_bundles(make_bundle: Any) -> None:
    ann = User.objects.get_or_create(username="ann")[0]
    first, second = make_bundle(owner=ann), make_bundle(owner=ann)
    settle()
    response = api(user("ops", staff=True)).post("/api/v1/bundle-jobs/bulk/", {"action": "kill", "ids": [first.pk]}, format="json")
    assert response.status_code == 202 and response.json()["type"] == "bulk-kill"
    settle()
    assert BundleJob.objects.get(pk=first.pk).status == BundleStatus.KILLED
    assert BundleJob.objects.get(pk=second.pk).status == BundleStatus.RUNNING


def test_operations_api_lists_own_operations_admins_all_and_cancels() -> None:
    ann, bob, ops = user("ann"), user("bob"), user("ops", staff=True)
    ids = bulk_jobs(ann, 2)
    mine = start_bulk("coordinator", "suspend", ids, user=ann, owner="ann")
    listing = api(ann).get("/api/v1/operations/?status=RUNNING").json()
    assert [row["id"] for row in listing["results"]] == [mine.pk]
    assert api(bob).get("/api/v1/operations/").json()["count"] == 0
    assert api(bob).get(f"/api/v1/operations/{mine.pk}/").status_code == 404
    assert api(ops).get("/api/v1/operations/").json()["count"] == 1
    assert api(None).get("/api/v1/operations/").status_code in (401, 403)

    cancelled = api(ann).post(f"/api/v1/operations/{mine.pk}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "CANCELLED"
    assert cancelled.json()["progress"]["counts"] == {"CANCELLED": 2}
    again = api(ann).post(f"/api/v1/operations/{mine.pk}/cancel/")
    assert again.status_code == 409 and "only a running one" in again.json()["detail"]
    run_all()
    assert statuses(ids) == {JobStatus.RUNNING}  # cancelled before they ran: nothing suspended


# ---- Oozie API --------------------------------------------------------------------------------


@override_settings(OOZIE_BULK_WAIT_SECONDS=0)
def test_oozie_bulk_put_acts_on_the_page_and_answers_it_as_oozie_does() -> None:
    """`PUT /jobs?action=kill&jobtype=coordinator&filter=user=ann&offset=2&len=2`: two jobs, Oozie's page answer."""
    ann = user("ann")
    ids = bulk_jobs(ann, 5)  # newest first in Oozie's order: ids[4], ids[3], ...
    query = urlencode({"action": "kill", "jobtype": "coordinator", "filter": "user=ann", "offset": 2, "len": 2})
    response = oozie("ann").put(f"/oozie/v2/jobs?{query}")
    assert response.status_code == 200, response.headers.get("oozie-error-message")
    body = response.json()
    assert (body["total"], body["offset"], body["len"]) == (5, 2, 2)
    assert [job["coordJobId"] for job in body["coordinatorjobs"]] == [ids[3], ids[2]] == body["ids"]
    run_all()
    assert statuses([ids[3], ids[2]]) == {JobStatus.KILLED}
    assert statuses([ids[0], ids[1], ids[4]]) == {JobStatus.RUNNING}
    assert Operation.objects.get(pk=body["operation"]).status == OperationStatus.SUCCEEDED


@pytest.mark.parametrize(
    ("query", "code"),
    [
        pytest.param({"action": "kill", "jobtype": "coordinator"}, "E0305", id="filter-required"),
        pytest.param({"action": "explode", "jobtype": "coordinator", "filter": ""}, "E0301", id="bad-action"),
        pytest.param({"jobtype": "coordinator", "filter": ""}, "E0305", id="no-action"),
        pytest.param({"action": "kill", "jobtype": "bogus", "filter": ""}, "E0303", id="bad-jobtype"),
        pytest.param({"action": "kill", "jobtype": "coordinator", "filter": "colour=red"}, "E0420", id="bad-filter"),
        pytest.param({"action": "kill", "jobtype": "coordinator", "filter": "", "len": "-1"}, "E0303", id="bad-len"),
    ],
)
def test_oozie_bulk_put_refuses_bad_requests(query: dict[str, str], code: str) -> None:
    user("ann")
    response = oozie("ann").put(f"/oozie/v2/jobs?{urlencode(query)}")
    assert response.status_code == 400 and response["oozie-error-code"] == code
    assert not Operation.objects.exists()


@override_settings(OOZIE_BULK_WAIT_SECONDS=0)
def test_oozie_bulk_put_conflict_is_409_and_an_empty_selection_is_an_empty_page() -> None:
    ann = user("ann")
    bulk_jobs(ann, 1)
    running = start_bulk("coordinator", "kill", list(CoordinatorJob.objects.values_list("pk", flat=True)), user=ann, owner="ann")
    response = oozie("ann").put("/oozie/v2/jobs?" + urlencode({"action": "resume", "jobtype": "coord", "filter": "user=ann"}))
    assert response.status_code == 409 and response["oozie-error-code"] == "E0607"
    assert f"operation {running.pk}" in response["oozie-error-message"]
    empty = oozie("ann").put("/oozie/v2/jobs?" + urlencode({"action": "kill", "jobtype": "bundle", "filter": "name=none"}))
    assert empty.status_code == 200 and empty.json() == {"total": 0, "offset": 1, "len": 50, "bundlejobs": [], "ids": []}
    assert Operation.objects.count() == 1


# ---- admin ------------------------------------------------------------------------------------


def test_admin_runs_large_selections_as_one_operation_and_small_ones_as_before(client: Client, settings: Any) -> None:
    settings.BULK_ADMIN_THRESHOLD = 3
    operator = User.objects.create_superuser("operator", "operator@example.com", "pw")
    client.force_login(operator)
    ids = bulk_jobs(operator, 5)
    page = client.post("/admin/coordinators/coordinatorjob/", {"action": "suspend_jobs", "_selected_action": ids},
                       follow=True).content.decode()
    operation = Operation.objects.get()
    assert f"operation {operation.pk}</a>" in page and f"/admin/operations/operation/{operation.pk}/change/" in page
    assert operation.type == "bulk-suspend" and operation.target == "coordinators:operator"
    run_all()
    assert statuses(ids) == {JobStatus.SUSPENDED}
    operation_page = client.get(f"/admin/operations/operation/{operation.pk}/change/").content.decode()
    assert "5 of 5" in operation_page

    page = client.post("/admin/coordinators/coordinatorjob/", {"action": "resume_jobs", "_selected_action": ids[:2]},
                       follow=True).content.decode()
    assert "Resume queued for 2 job(s)" in page and Operation.objects.count() == 1


# ---- CLI --------------------------------------------------------------------------------------


def test_cli_lists_with_oozie_filters() -> None:
    ann = user("ann")
    ids = bulk_jobs(ann, 3)
    out = io.StringIO()
    call_command("jobs", "-jobtype", "coordinator", "-filter", "user=ann", "-len", "2", "-user", "ann", stdout=out)
    text = out.getvalue()
    assert ids[2] in text and ids[1] in text and ids[0] not in text and "coordinator jobs 1-2 of 3" in text


def test_cli_bulk_verb_needs_a_filter_and_starts_the_operation() -> None:
    ann = user("ann")
    ids = bulk_jobs(ann, 3)
    with pytest.raises(CommandError, match="needs -filter"):
        call_command("jobs", "-kill", "-user", "ann")
    with pytest.raises(CommandError, match="E0420"):
        call_command("jobs", "-kill", "-filter", "colour=red", "-user", "ann")
    assert not Operation.objects.exists()
    out = io.StringIO()
    call_command("jobs", "-suspend", "-filter", "user=ann", "-user", "ann", "-nowait", stdout=out)
    operation = Operation.objects.get()
    assert f"operation {operation.pk}: suspend of 3 coordinator job(s) started" in out.getvalue()
    run_all()
    assert statuses(ids) == {JobStatus.SUSPENDED}
    with pytest.raises(CommandError, match="still runs after 0.2 s"):
        call_command("jobs", "-resume", "-filter", "user=ann", "-user", "ann", "-timeout", "0.2", stdout=io.StringIO())


def test_flower_shows_each_job_command_by_name_with_its_key_and_operation() -> None:
    """Each selected job is an `operations.OperationJobXCommand` on that job's key, naming the operation and its type."""
    ann = user("ann")
    ids = bulk_jobs(ann, 2)
    operation = start_bulk("coordinator", "kill", ids, user=ann, owner="ann")
    rows = Command.objects.filter(name="operations.OperationJobXCommand").order_by("key")
    shown = [row.display_kwargs() for row in rows]
    assert [s["key"] for s in shown] == sorted(ids)
    assert all(s["params"]["operation_id"] == operation.pk and s["params"]["kind"] == "bulk-kill" for s in shown)
    assert sorted(p for s in shown for p in s["params"]["partitions"]) == sorted(ids)
