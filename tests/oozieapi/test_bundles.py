"""Oozie Web Services API for bundles: what an Oozie client sends and reads (BundleJobBean JSON, bundle verbs, error codes)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from bundles.choices import BundleStatus as B
from bundles.models import BundleJob
from coordinators.choices import JobStatus as J
from coordinators.models import CoordinatorJob
from tests.bundles.api.factories import bundle_app, finish, running_bundle, stored_bundle
from tests.bundles.factories import bundle_xml, window, write_coordinator
from tests.oozieapi.client import Oozie, error_of
from tests.support.bundles import settle
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)

RFC822 = re.compile(r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d GMT$")
PATH = "oozie.bundle.application.path"
MISSING = "0000099-260101000000000-B"


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Commands run in process, doorbells go to the private Redis."""


def rows() -> tuple[int, int, int]:
    """What a refusal must not write: bundles, coordinator jobs, commands."""
    return BundleJob.objects.count(), CoordinatorJob.objects.count(), Command.objects.count()


@pytest.mark.parametrize(("action", "status"), [(None, B.PREP), ("start", B.RUNNING)])
def test_submit_a_bundle_from_its_path_property(ann: User, tmp_path: Path, action: str | None, status: str) -> None:
    """POST jobs with oozie.bundle.application.path: 201 {"id": ...-B}; action=start runs it, without it stays PREP."""
    xml = bundle_app(tmp_path)
    response = Oozie(ann).submit({PATH: f"file://{xml}", "user.name": "ann", **window()}, action=action)
    assert response.status_code == 201, response.headers.get("oozie-error-message")
    bundle_id = response.json()["id"]
    assert bundle_id.endswith("-B") and list(response.json()) == ["id"]
    settle()
    bundle = BundleJob.objects.get(pk=bundle_id)
    assert (bundle.owner, bundle.status, bundle.app_path) == (ann, status, f"file://{xml}")
    assert CoordinatorJob.objects.filter(bundle_id=bundle_id).count() == (2 if action else 0)


def test_submitting_the_same_external_id_again_answers_the_same_bundle(ann: User, tmp_path: Path) -> None:
    """oozie.bundle.external.id makes a retried POST answer the first bundle's id (201, as Oozie clients expect), files changed or not."""
    xml = bundle_app(tmp_path)
    properties = {PATH: str(xml), "oozie.bundle.external.id": "nightly-1", **window()}
    first = Oozie(ann).submit(properties)
    xml.unlink()  # the retry comes after the application was moved away
    again = Oozie(ann, use_token=True).submit(properties)
    assert (first.status_code, again.status_code) == (201, 201)
    assert first.json()["id"] == again.json()["id"] and BundleJob.objects.count() == 1
    assert error_of(Oozie(ann).submit({**properties, "oozie.bundle.external.id": "nightly-2"}))[:2] == (400, "E0504")


def test_dryrun_plans_without_storing(ann: User, tmp_path: Path) -> None:
    """POST jobs?action=dryrun: 200 {"id": <the bundle XML, then the readable plan>, "coordinators": [...]}; nothing stored.

    Oozie's CLI prints the `id` as a bundle's when it holds `<bundle-app`.
    """
    before = rows()
    xml = bundle_app(tmp_path)
    response = Oozie(ann).submit({PATH: str(xml), **window()}, action="dryrun")
    assert response.status_code == 200, response.headers.get("oozie-error-message")
    body = response.json()
    assert body["id"].startswith(xml.read_text().rstrip() + "\nbundle b1") and "coordinator daily" in body["id"]
    assert [c["name"] for c in body["coordinators"]] == ["daily", "hourly"] and body["coordinators"][0]["actions"]
    assert rows() == before


def bad_coordinator(root: Path) -> Path:
    xml = bundle_app(root)
    (root / "daily" / "coordinator.xml").write_text("<coordinator-app")
    return xml


def duplicate(root: Path) -> Path:
    path = write_coordinator(root, "daily")
    (root / "bundle.xml").write_text(bundle_xml([("daily", path), ("daily", path)]))
    return root / "bundle.xml"


@pytest.mark.parametrize(
    ("case", "code", "named"),
    [
        pytest.param("unreadable", "E0504", "absent.xml", id="missing-bundle-application"),
        pytest.param("outside", "E1301", "application roots", id="outside-the-application-roots"),
        pytest.param("malformed", "E0700", "bundle.xml", id="malformed-bundle-xml"),
        pytest.param("schema", "E0701", "bundle", id="bundle-schema-error"),
        pytest.param("coordinator", "E1310", "coordinator 'daily'", id="a-coordinator-refused"),
        pytest.param("duplicate", "E1304", "daily", id="duplicate-coordinator-names"),
        pytest.param("unresolved", "E1004", "nowhere", id="unresolved-variable"),
        pytest.param("two-paths", "E0302", "Multiple app paths", id="coordinator-and-bundle-paths"),
        pytest.param("workflow", "E0710", "hdfs", id="workflow-path"),
        pytest.param("bad-action", "E0303", "kill", id="bad-action"),
    ],
)
def test_submission_refusals(ann: User, tmp_path: Path, case: str, code: str, named: str) -> None:
    """Each refusal carries Oozie's code and a message naming the problem (HTTP 400); nothing is stored."""
    good = str(bundle_app(tmp_path / "good"))
    (tmp_path / "malformed.xml").write_text("<bundle-app")
    (tmp_path / "schema.xml").write_text('<bundle-app name="x" xmlns="uri:oozie:bundle:0.2"><nope/></bundle-app>')
    (tmp_path / "unresolved.xml").write_text(Path(good).read_text().replace('name="b1"', 'name="${nowhere}"'))
    properties: dict[str, str] = {
        "unreadable": {PATH: str(tmp_path / "absent.xml")},
        "outside": {PATH: "/etc/hostname"},
        "malformed": {PATH: str(tmp_path / "malformed.xml")},
        "schema": {PATH: str(tmp_path / "schema.xml")},
        "coordinator": {PATH: str(bad_coordinator(tmp_path / "bad"))},
        "duplicate": {PATH: str(duplicate(tmp_path / "dup"))},
        "unresolved": {PATH: str(tmp_path / "unresolved.xml")},
        "two-paths": {PATH: good, "oozie.coord.application.path": good},
        "workflow": {"oozie.wf.application.path": "hdfs://nn/wf"},
        "bad-action": {PATH: good},
    }[case]
    before = rows()
    response = Oozie(ann).submit({**window(), **properties}, action="kill" if case == "bad-action" else None)
    status, got, message = error_of(response)
    assert (status, got) == (400, code), message
    assert message.startswith(f"{code}: ") and named in message
    assert rows() == before


def test_jobs_list_of_bundles(ann: User, bob: User) -> None:
    """GET jobs?jobtype=bundle&filter=...&offset=&len=: bundlejobs, total, 1-based offset, newest first; Oozie's filter names."""
    for n in range(1, 8):
        BundleJob.objects.create(
            id=f"{n:07d}-260101000000000-B", app_name=f"nightly-{n % 2}", definition="<bundle-app/>", owner=ann if n < 6 else bob,
            status="SUSPENDED" if n % 3 == 0 else "RUNNING", acl="ops",
        )
    oozie = Oozie(bob)
    page = oozie.get("jobs", jobtype="bundle", offset=2, len=3).json()
    assert (page["total"], page["offset"], page["len"]) == (7, 2, 3)
    assert [job["bundleJobId"][:7] for job in page["bundlejobs"]] == ["0000006", "0000005", "0000004"]
    first = page["bundlejobs"][0]
    assert (first["bundleJobName"], first["user"], first["status"], first["acl"], first["group"]) == ("nightly-0", "bob", "SUSPENDED", "ops", "ops")
    assert first["conf"] is None and first["bundleCoordJobs"] == [] and RFC822.match(first["createdTime"])

    def total(text: str) -> int:
        return int(oozie.get("jobs", jobtype="bundle", filter=text).json()["total"])

    assert total("status=SUSPENDED") == 2
    assert total("status=SUSPENDED;status=RUNNING;user=ann") == 5
    assert total("name=nightly-1") == 4
    assert total("text=0000003-260101000000000-B") == 1 and total("text=ann") == 5
    assert total("id=0000001-260101000000000-B;id=0000002-260101000000000-B") == 2
    assert total("startCreatedTime=-1d;endCreatedTime=2999-01-01T00:00Z;sortby=lastModifiedTime") == 7
    assert total("status=IGNORED") == 0 and total("status=PREMATER") == 0  # Oozie's Job.Status values: accepted (ADR 0013)
    for bad in ("status=NOPE", "colour=red", "startCreatedTime=yesterday"):
        assert error_of(oozie.get("jobs", jobtype="bundle", filter=bad))[:2] == (400, "E0420"), bad
    assert oozie.get("jobs", jobtype="coord").json()["total"] == 0  # bundles are not coordinators


def test_bundle_info_in_oozie_json(ann: User, tmp_path: Path) -> None:
    """show=info: BundleJobBean's JsonTags, RFC 822 times, each coordinator in the coordinator JSON (with bundleId)."""
    bundle = running_bundle(ann, tmp_path, acl="ops")
    info = Oozie(ann, use_token=True).get(f"job/{bundle.id}").json()
    assert (info["bundleJobId"], info["bundleJobName"], info["user"], info["status"], info["acl"], info["group"]) == (
        bundle.id, "b1", "ann", "RUNNING", "ops", "ops",
    )
    assert info["bundleJobPath"] == str(tmp_path / "bundle.xml") and info["bundleExternalId"] is None
    assert (info["timeUnit"], info["timeOut"], info["kickoffTime"], info["pauseTime"], info["endTime"]) == ("NONE", 0, None, None, None)
    assert RFC822.match(info["createdTime"]) and RFC822.match(info["startTime"])
    assert info["conf"].startswith("<?xml") and "<name>oozie.job.acl</name>" in info["conf"]
    assert info["toString"] == f"Bundle id[{bundle.id}] status[RUNNING]"
    coordinators = info["bundleCoordJobs"]
    assert [c["coordJobName"] for c in coordinators] == ["daily", "hourly"]
    assert {c["bundleId"] for c in coordinators} == {bundle.id} and {c["status"] for c in coordinators} == {"RUNNING"}
    daily = coordinators[0]
    assert daily["toString"] == f"Coordinator application id[{daily['coordJobId']}] status[RUNNING]"
    coordinator = Oozie(ann).get(f"job/{daily['coordJobId']}").json()
    assert coordinator["bundleId"] == bundle.id
    local = Oozie(ann, version="v1").get(f"job/{bundle.id}", timezone="America/New_York").json()
    assert local["createdTime"].endswith(("EST", "EDT")) and local["bundleCoordJobs"][0]["startTime"].endswith(("EST", "EDT"))


def test_bundle_info_costs_the_same_queries_for_more_coordinators(ann: User, django_assert_num_queries: Any) -> None:
    """Token, bundle, coordinators with their owners: 3 queries for 6 coordinators (no N+1)."""
    bundle = stored_bundle(ann, 6, 2)
    oozie = Oozie(ann, use_token=True)
    with django_assert_num_queries(3):
        info = oozie.get(f"job/{bundle.id}").json()
    assert len(info["bundleCoordJobs"]) == 6


def test_definition_status_and_log(ann: User, tmp_path: Path) -> None:
    """show=definition the XML; show=status; show=log the commands run on the bundle; unknown show E0303; unknown ids E0604."""
    bundle = running_bundle(ann, tmp_path)
    oozie = Oozie(ann)
    definition = oozie.get(f"job/{bundle.id}", show="definition")
    assert definition.headers["Content-Type"] == "application/xml;charset=UTF-8"
    assert definition.content.decode() == bundle.definition
    assert oozie.get(f"job/{bundle.id}", show="status").json() == {"status": "RUNNING"}
    log = oozie.get(f"job/{bundle.id}", show="log").content.decode()
    assert "BundleStartXCommand" in log and f"JOB[{bundle.id}]" in log and "USER[ann]" in log and "APP[b1]" in log
    assert oozie.get(f"job/{bundle.id}", show="errorlog").content.decode() == ""
    assert error_of(oozie.get(f"job/{bundle.id}", show="graph"))[:2] == (400, "E0303")
    assert error_of(oozie.get(f"job/{MISSING}")) == (400, "E0604", f"E0604: Job does not exist [{MISSING}]")
    assert error_of(oozie.put(f"job/{MISSING}", action="kill"))[:2] == (400, "E0604")


def test_put_suspend_resume_kill(ann: User, tmp_path: Path) -> None:
    """PUT ?action=suspend|resume|kill: 200, empty body; the bundle and its coordinators follow."""
    bundle = running_bundle(ann, tmp_path)
    oozie = Oozie(ann)
    for verb, status, coordinators in (("suspend", B.SUSPENDED, J.SUSPENDED), ("resume", B.RUNNING, J.RUNNING),
                                       ("kill", B.KILLED, J.KILLED)):
        response = oozie.put(f"job/{bundle.id}", action=verb)
        assert response.status_code == 200 and response.content == b"", verb
        settle()
        assert BundleJob.objects.get(pk=bundle.id).status == status
        assert set(CoordinatorJob.objects.filter(bundle_id=bundle.id).values_list("status", flat=True)) == {coordinators}


def test_put_start_of_a_prep_bundle(ann: User, tmp_path: Path) -> None:
    """PUT ?action=start starts a bundle submitted without action=start."""
    submitted = Oozie(ann).submit({PATH: str(bundle_app(tmp_path)), **window()})
    bundle_id = submitted.json()["id"]
    assert Oozie(ann).put(f"job/{bundle_id}", action="start").status_code == 200
    settle()
    assert BundleJob.objects.get(pk=bundle_id).status == B.RUNNING
    assert Oozie(ann).put(f"job/{bundle_id}", action="start").status_code == 200  # Oozie skips it: 200 (ADR 0013)
    assert BundleJob.objects.get(pk=bundle_id).status == B.RUNNING


def test_verb_refusals_carry_the_bundle_codes(ann: User, tmp_path: Path) -> None:
    """Resume of a running bundle, suspend and kill of a killed one: 200 doing nothing, as Oozie (ADR 0013); E1313 its change, E0305/E0303 parameters."""
    bundle = running_bundle(ann, tmp_path)
    oozie = Oozie(ann)
    assert error_of(oozie.put(f"job/{bundle.id}"))[:2] == (400, "E0305")
    assert error_of(oozie.put(f"job/{bundle.id}", action="explode"))[:2] == (400, "E0303")
    assert error_of(oozie.put(f"job/{bundle.id}", action="dryrun"))[:2] == (400, "E0303")
    assert error_of(oozie.put(f"job/{bundle.id}", action="ignore")) == (400, "E0302", "E0302: Invalid parameter [Bundle Ignore Not supported]")
    assert oozie.put(f"job/{bundle.id}", action="resume").status_code == 200
    assert oozie.put(f"job/{bundle.id}", action="kill").status_code == 200
    settle()
    commands = Command.objects.count()
    assert oozie.put(f"job/{bundle.id}", action="suspend").status_code == 200
    assert oozie.put(f"job/{bundle.id}", action="kill").status_code == 200
    assert Command.objects.count() == commands and BundleJob.objects.get(pk=bundle.id).status == B.KILLED
    assert error_of(oozie.put(f"job/{bundle.id}", action="change", value="pausetime="))[:2] == (400, "E1313")
    assert error_of(oozie.put(f"job/{bundle.id}", action="bundle-rerun", **{"coord-scope": "daily"}))[:2] == (400, "E1100")


def test_put_change(ann: User, tmp_path: Path) -> None:
    """PUT ?action=change&value=pausetime=...;endtime=...: 200; bad values E1317 naming them; a missing value E0305."""
    bundle = running_bundle(ann, tmp_path)
    oozie = Oozie(ann)
    assert oozie.put(f"job/{bundle.id}", action="change", value="pausetime=2099-01-01T00:00Z").status_code == 200
    settle()
    changed = BundleJob.objects.get(pk=bundle.id)
    assert changed.pause_time is not None and changed.pause_time.year == 2099
    assert set(CoordinatorJob.objects.filter(bundle_id=bundle.id).values_list("pause_time", flat=True)) == {changed.pause_time}
    assert error_of(oozie.put(f"job/{bundle.id}", action="change"))[:2] == (400, "E0305")
    for bad, named in (("concurrency=3", "can only change"), ("pausetime=2001-01-01T00:00Z", "past"),
                       ("endtime=soon", "endtime"), ("endtime=99999-01-01T00:00Z", "endtime")):
        status, code, message = error_of(oozie.put(f"job/{bundle.id}", action="change", value=bad))
        assert (status, code) == (400, "E1317") and message.startswith(f"E1317: Invalid bundle job change value {bad}") and named in message


def test_put_bundle_rerun_as_the_java_client_sends_it(ann: User, tmp_path: Path) -> None:
    """`action=bundle-rerun&coord-scope=daily&refresh=false&nocleanup=false` with an XML content type: 200 with the actions queued."""
    bundle = running_bundle(ann, tmp_path)
    oozie = Oozie(ann)
    finish(bundle, "daily")
    query = "action=bundle-rerun&coord-scope=daily&refresh=false&nocleanup=false"
    response = oozie.client.put(f"/oozie/v2/job/{bundle.id}?{query}", content_type="application/xml;charset=UTF-8", headers=oozie.headers)
    assert response.status_code == 200, response.headers.get("oozie-error-message")
    actions = response.json()["actions"]
    assert list(actions) == ["daily"] and all(a["coordJobId"] == actions["daily"][0]["coordJobId"] for a in actions["daily"])
    assert RFC822.match(actions["daily"][0]["nominalTime"])
    refusals = [
        ({}, "coord-scope"),
        ({"coord-scope": "weekly"}, "weekly"),
        ({"coord-scope": "hourly"}, "hourly"),  # its actions have not finished
        ({"date-scope": "2001-01-01T00:00Z"}, "no finished action"),
    ]
    for params, named in refusals:
        status, code, message = error_of(oozie.put(f"job/{bundle.id}", action="rerun", **params))
        assert (status, code) == (400, "E1018") and named in message, params
    assert error_of(oozie.put(f"job/{bundle.id}", action="bundle-rerun", **{"coord-scope": "daily", "refresh": "maybe"}))[:2] == (400, "E0303")


def test_other_users_are_refused_with_e0509(ann: User, bob: User, tmp_path: Path) -> None:
    """bob may read ann's bundle but not act on it: 403 E0509 naming him and the bundle; nothing queued."""
    bundle = running_bundle(ann, tmp_path)
    oozie = Oozie(bob)
    assert oozie.get(f"job/{bundle.id}").status_code == 200
    before = Command.objects.count()
    for action, params in (("suspend", {}), ("kill", {}), ("start", {}), ("change", {"value": "pausetime="}),
                           ("bundle-rerun", {"coord-scope": "daily"})):
        assert error_of(oozie.put(f"job/{bundle.id}", action=action, **params)) == (
            403, "E0509", f"E0509: User [bob] not authorized for Coord job [{bundle.id}]",
        ), action
    assert Command.objects.count() == before


def test_restricted_reads_hide_bundles_from_others(ann: User, bob: User, carol: User, tmp_path: Path, settings: Any) -> None:
    """With COORD_RESTRICT_READS, bob neither lists nor reads ann's bundle (E0509); carol (group ops in the ACL) does."""
    settings.COORD_RESTRICT_READS = True
    bundle = running_bundle(ann, tmp_path, acl="ops")
    assert Oozie(bob).get("jobs", jobtype="bundle").json()["total"] == 0
    assert error_of(Oozie(bob).get(f"job/{bundle.id}"))[:2] == (403, "E0509")
    assert Oozie(carol).get("jobs", jobtype="bundle").json()["total"] == 1
    assert Oozie(carol).get(f"job/{bundle.id}", show="status").json() == {"status": "RUNNING"}
