"""Native bundle API: submit, dry-run, list, detail with coordinators and progress, verbs, and the errors users cause."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from bundles.choices import BundleStatus as B
from bundles.models import BundleAction, BundleJob
from coordinators.choices import JobStatus as J
from coordinators.models import CoordinatorJob
from tests.bundles.api.factories import bundle_app, finish, running_bundle, stored_bundle
from tests.bundles.factories import bundle_xml, window, write_coordinator
from tests.coordinators.api.factories import api
from tests.support.bundles import settle
from xcommands.models import Command

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]

BUNDLES = "/api/v1/bundle-jobs/"


def rows() -> tuple[int, int, int]:
    """What a submission writes: bundles, coordinator jobs, commands."""
    return BundleJob.objects.count(), CoordinatorJob.objects.count(), Command.objects.count()


def post(owner: User, body: dict[str, Any], url: str = BUNDLES) -> Any:
    return api(owner).post(url, body, format="json")


def test_submit_inline_xml_then_it_runs(ann: User, tmp_path: Path) -> None:
    """POST with the XML inline stores the bundle owned by the caller (PREP, pending); once started, its coordinators run."""
    xml = bundle_app(tmp_path).read_text()
    response = post(ann, {"definition": xml, "properties": {**window(), "oozie.job.acl": "ops"}})
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["id"].endswith("-B") and created["user"] == "ann" and created["acl"] == "ops"
    assert (created["status"], created["pending"], created["coordinators"]) == ("PREP", True, [])
    assert created["configuration"]["user.name"] == "ann" and created["definition"] == xml
    settle()
    detail = api(ann).get(created["url"]).json()
    assert detail["status"] == "RUNNING" and detail["started_at"]
    assert [c["name"] for c in detail["coordinators"]] == ["daily", "hourly"]
    daily = detail["coordinators"][0]
    job = CoordinatorJob.objects.get(pk=daily["coordinator"])
    assert job.bundle_id == created["id"] and daily["status"] == job.status == J.RUNNING
    assert (daily["critical"], daily["pending"], daily["error_message"]) == (False, 0, "")
    assert daily["coordinator_url"].endswith(f"/api/v1/coordinator-jobs/{job.id}/")
    counts = daily["progress"]["actions"]
    assert sum(counts.values()) == job.actions.count() >= 3
    last = job.actions.order_by("-number").first()
    assert last is not None and daily["progress"]["last_nominal_time"].startswith(last.nominal_time.strftime("%Y-%m-%dT%H:%M"))
    coordinator = api(ann).get(daily["coordinator_url"]).json()
    assert coordinator["bundle_id"] == created["id"]


def test_submit_by_application_path_with_properties_text(ann: User, tmp_path: Path) -> None:
    """app_path (oozie.bundle.application.path: bundle.xml or its directory) and .properties text; start=false stays PREP until start."""
    bundle_app(tmp_path)
    text = "\n".join(f"{name}={value}" for name, value in window().items())
    response = post(ann, {"app_path": f"file://{tmp_path}", "configuration": text, "start": False})
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["app_path"] == f"file://{tmp_path}" and created["pending"] is False
    settle()
    assert BundleJob.objects.get(pk=created["id"]).status == B.PREP
    started = api(ann).post(f"{BUNDLES}{created['id']}/start/")
    assert started.status_code == 202, started.content
    settle()
    assert BundleJob.objects.get(pk=created["id"]).status == B.RUNNING
    assert api(ann).post(f"{BUNDLES}{created['id']}/start/").status_code == 409  # started already


def test_the_same_external_id_answers_the_first_bundle(ann: User, bob: User, tmp_path: Path) -> None:
    """A retried submission (same external_id, or oozie.bundle.external.id) answers 200 with the first bundle; nothing new stored."""
    xml = bundle_app(tmp_path).read_text()
    first = post(ann, {"definition": xml, "properties": window(), "external_id": "nightly-2026-11-23"})
    assert first.status_code == 201, first.content
    assert first.json()["external_id"] == "nightly-2026-11-23"
    before = rows()
    (tmp_path / "bundle.xml").unlink()  # a retry is answered even after the application was moved away
    again = post(ann, {"app_path": str(tmp_path), "properties": {**window(), "oozie.bundle.external.id": "nightly-2026-11-23"}})
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    assert rows() == before
    other = post(bob, {"definition": xml, "properties": window(), "external_id": "nightly-2026-11-23"})
    assert other.status_code == 201 and other.json()["id"] != first.json()["id"]  # external ids are per owner
    assert post(ann, {"definition": xml, "properties": window(), "external_id": "x" * 256}).status_code == 400


def test_dryrun_shows_each_coordinator_and_stores_nothing(ann: User, tmp_path: Path) -> None:
    """POST dryrun/: name, kick-off time, each coordinator with its configuration and first actions (disabled: none)."""
    paths = [(name, write_coordinator(tmp_path, name)) for name in ("daily", "hourly")]
    xml = bundle_xml(paths, critical=("daily",), disabled=("hourly",), kick_off="2026-01-01T00:00Z")
    before = rows()
    response = post(ann, {"definition": xml, "properties": window(), "max_actions": 2}, url=f"{BUNDLES}dryrun/")
    assert response.status_code == 200, response.content
    result = response.json()
    assert result["name"] == "b1" and result["kick_off_time"].startswith("2026-01-01T00:00")
    daily, hourly = result["coordinators"]
    assert (daily["name"], daily["critical"], daily["enabled"], len(daily["actions"])) == ("daily", True, True, 2)
    assert daily["configuration"]["user.name"] == "ann" and daily["app_path"] == f"file://{tmp_path}/daily"
    assert (hourly["enabled"], hourly["actions"]) == (False, [])
    assert rows() == before
    assert post(ann, {"definition": xml, "properties": window(), "max_actions": 0}, url=f"{BUNDLES}dryrun/").status_code == 400


def duplicate_names(tmp_path: Path) -> str:
    path = write_coordinator(tmp_path, "daily")
    return bundle_xml([("daily", path), ("daily", path)])


@pytest.mark.parametrize(
    ("case", "status", "named"),
    [
        pytest.param("malformed-xml", 400, "bundle.xml", id="malformed-xml"),
        pytest.param("not-a-bundle", 400, "is not supported", id="not-a-bundle"),
        pytest.param("unresolved-variable", 400, "unresolved", id="unresolved-variable"),
        pytest.param("bad-coordinator", 400, "coordinator 'daily'", id="one-bad-coordinator"),
        pytest.param("duplicate-names", 400, "used twice", id="duplicate-coordinator-names"),
        pytest.param("no-definition", 400, "oozie.bundle.application.path", id="no-definition"),
        pytest.param("outside-roots", 400, "application roots", id="app-path-outside-the-roots"),
        pytest.param("missing-app", 400, "cannot read", id="missing-bundle-application"),
        pytest.param("someone-else", 403, "does not match", id="user-name-of-someone-else"),
        pytest.param("nul-name", 400, "property name", id="nul-in-a-property-name"),
        pytest.param("long-name", 400, "bad property name", id="property-name-too-long"),
        pytest.param("not-an-object", 400, "properties", id="properties-not-an-object"),
    ],
)
def test_refused_submissions_name_the_problem_and_store_nothing(
    ann: User, tmp_path: Path, case: str, status: int, named: str,
) -> None:
    """Bad XML, unresolved variables, a bad coordinator, someone else's user.name, hostile properties: 4xx naming it, no rows."""
    good = bundle_app(tmp_path)
    bodies: dict[str, dict[str, Any]] = {
        "malformed-xml": {"definition": "<bundle-app", "properties": window()},
        "not-a-bundle": {"definition": "<workflow-app xmlns='uri:oozie:workflow:0.5' name='w'/>", "properties": window()},
        "unresolved-variable": {"definition": good.read_text().replace('name="b1"', 'name="${nowhere}"'), "properties": window()},
        "bad-coordinator": {"definition": good.read_text(), "properties": {"start": "2026-01-01T00:00Z"}},
        "duplicate-names": {"definition": duplicate_names(tmp_path / "dup"), "properties": window()},
        "no-definition": {"properties": window()},
        "outside-roots": {"app_path": "/etc", "properties": window()},
        "missing-app": {"app_path": str(tmp_path / "absent"), "properties": window()},
        "someone-else": {"definition": good.read_text(), "properties": {**window(), "user.name": "bob"}},
        "nul-name": {"definition": good.read_text(), "properties": {"a\x00b": "1"}},
        "long-name": {"definition": good.read_text(), "properties": {"n" * 300: "1"}},
        "not-an-object": {"definition": good.read_text(), "properties": ["start"]},
    }
    before = rows()
    response = post(ann, bodies[case])
    assert response.status_code == status, response.content
    assert named in response.content.decode()
    assert rows() == before


def test_list_filters_order_and_pages(ann: User, bob: User) -> None:
    """Newest first; status (comma-separated), user, name, name_contains, created_after; limit/offset; bad values 400."""
    for n in range(6):
        BundleJob.objects.create(
            id=f"{n:07d}-260101000000000-B", app_name=f"nightly-{n % 2}", definition="<bundle-app/>",
            owner=ann if n < 4 else bob, status=("RUNNING", "SUSPENDED", "KILLED")[n % 3],
        )
    client = api(bob)
    page = client.get(BUNDLES, {"limit": 2, "offset": 1}).json()
    assert page["count"] == 6 and [b["id"][:7] for b in page["results"]] == ["0000004", "0000003"]
    assert "definition" not in page["results"][0] and "coordinators" not in page["results"][0]

    def ids(**params: Any) -> list[str]:
        return [b["id"][:7] for b in client.get(BUNDLES, params).json()["results"]]

    assert ids(status="running,killed") == ["0000005", "0000003", "0000002", "0000000"]
    assert ids(user="bob") == ["0000005", "0000004"]
    assert ids(name="nightly-1", user="ann") == ["0000003", "0000001"]
    assert ids(name_contains="NIGHTLY") == ids()
    assert ids(created_after="2999-01-01T00:00Z") == []
    for bad in ({"status": "EXPLODED"}, {"created_after": "yesterday"}, {"limit": "0"}, {"offset": "-1"}):
        assert client.get(BUNDLES, bad).status_code == 400, bad


@pytest.mark.parametrize("coordinators", [pytest.param(1, id="1-coordinator"), pytest.param(8, id="8-coordinators")])
def test_detail_reads_every_coordinators_progress_in_fixed_queries(
    ann: User, coordinators: int, django_assert_num_queries: Any,
) -> None:
    """Token, bundle, its coordinators, their progress: 4 queries for 1 coordinator or 8 (no N+1)."""
    bundle = stored_bundle(ann, coordinators, 10)
    client = api(ann)
    with django_assert_num_queries(4):
        response = client.get(f"{BUNDLES}{bundle.id}/")
    detail = response.json()
    assert len(detail["coordinators"]) == coordinators
    first = detail["coordinators"][0]["progress"]
    assert first["actions"] == {"SUCCEEDED": 5, "WAITING": 5} and first["last_nominal_time"] == "2026-01-01T10:00:00Z"


def test_list_queries_do_not_grow_with_the_page(ann: User, django_assert_num_queries: Any) -> None:
    """Token, count, page: 3 queries."""
    for n in range(30):
        BundleJob.objects.create(id=f"{n:07d}-260101000000000-B", app_name="b", definition="<x/>", owner=ann)
    client = api(ann)
    with django_assert_num_queries(3):
        assert len(client.get(BUNDLES, {"limit": 25}).json()["results"]) == 25


def test_verbs_suspend_resume_change_kill(ann: User, tmp_path: Path) -> None:
    """202 with the bundle; each verb reaches the coordinators; refusals: 409 for the status, 400 for a bad value."""
    bundle = running_bundle(ann, tmp_path)
    client = api(ann)
    url = f"{BUNDLES}{bundle.id}"
    response = client.post(f"{url}/suspend/")
    assert response.status_code == 202 and response.json()["id"] == bundle.id
    settle()
    assert BundleJob.objects.get(pk=bundle.id).status == B.SUSPENDED
    assert set(CoordinatorJob.objects.filter(bundle_id=bundle.id).values_list("status", flat=True)) == {J.SUSPENDED}
    assert client.post(f"{url}/suspend/").status_code == 409
    assert client.post(f"{url}/resume/").status_code == 202
    settle()
    assert BundleJob.objects.get(pk=bundle.id).status == B.RUNNING
    end = CoordinatorJob.objects.filter(bundle_id=bundle.id).first()
    assert end is not None
    new_end = end.end_time.strftime("%Y-%m-%dT%H:%MZ")
    assert client.post(f"{url}/change/", {"endtime": new_end}, format="json").status_code == 202
    for bad in ({"value": "concurrency=3"}, {"value": "pausetime=2001-01-01T00:00Z"}, {"endtime": "tomorrow"},
                {"value": "endtime=x", "endtime": "y"}, {}):
        assert client.post(f"{url}/change/", bad, format="json").status_code == 400, bad
    assert client.post(f"{url}/kill/").status_code == 202
    settle()
    assert BundleJob.objects.get(pk=bundle.id).status == B.KILLED
    assert set(CoordinatorJob.objects.filter(bundle_id=bundle.id).values_list("status", flat=True)) == {J.KILLED}
    for verb in ("kill", "suspend", "resume"):
        assert client.post(f"{url}/{verb}/").status_code == 409, verb
    assert client.post(f"{url}/change/", {"value": f"endtime={new_end}"}, format="json").status_code == 409
    assert client.post(f"{BUNDLES}0000000-000000000000000-B/kill/").status_code == 404


def test_rerun_answers_the_actions_queued_by_coordinator(ann: User, tmp_path: Path) -> None:
    """rerun {"coordinators": "daily"}: 202 with daily's finished actions; nothing named, unknown names, unfinished actions: 400."""
    bundle = running_bundle(ann, tmp_path)
    client = api(ann)
    url = f"{BUNDLES}{bundle.id}/rerun/"
    assert client.post(url, {"coordinators": "daily"}, format="json").status_code == 400  # daily's actions are not finished
    finish(bundle, "daily")
    daily = BundleAction.objects.get(bundle=bundle, coord_name="daily").coord_job_id
    before = Command.objects.count()
    response = client.post(url, {"coordinators": "daily", "refresh": True, "nocleanup": True}, format="json")
    assert response.status_code == 202, response.content
    actions = response.json()["actions"]
    assert list(actions) == ["daily"] and actions["daily"] and all(a["job"] == daily for a in actions["daily"])
    assert Command.objects.count() == before + 1
    for bad in ({}, {"coordinators": "", "dates": ""}, {"coordinators": "weekly"}, {"dates": "2001-01-01T00:00Z"},
                {"coordinators": "daily", "refresh": "maybe"}):
        assert client.post(url, bad, format="json").status_code == 400, bad


def test_not_found_and_the_api_root(ann: User) -> None:
    """Unknown ids are 404 naming them; the API root links the collection."""
    response = api(ann).get(f"{BUNDLES}0000000-000000000000000-B/")
    assert response.status_code == 404
    assert api(ann).get("/api/v1/").json()["bundle-jobs"].endswith(BUNDLES)
    assert api(None).get(BUNDLES).status_code in (401, 403)
