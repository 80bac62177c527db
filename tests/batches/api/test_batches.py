"""Native batch API: submit, list (counts per page in one query), detail with reports, report formats, batch verbs, and the errors users cause."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from batches.choices import BatchStatus as B
from batches.choices import JobStatus as J
from batches.models import Batch, BatchJob, BatchReport, Collection, Profile
from tests.coordinators.api.factories import api
from tests.support.batches import Ingest, failed_batch, held_batch, settle
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)

BATCHES = "/api/v1/batches/"


def stored() -> tuple[int, int, int]:
    """What a submission writes: batches, jobs, commands."""
    return Batch.objects.count(), BatchJob.objects.count(), Command.objects.count()


def submit(account: User, body: dict[str, Any]) -> Any:
    return api(account).post(BATCHES, body, format="json")


def test_submit_answers_the_pending_batch_which_then_runs_to_its_report(ingest: Ingest, ann: User) -> None:
    """POST stores the batch PENDING owned by the caller (submitter: their name); settled, the detail shows counts, operation and report."""
    url = ingest.deposit.objects(3, wrong={2})
    response = submit(ann, {"profile": "demo", "type": "manifest-of-manifests", "payload_url": url})
    assert response.status_code == 201, response.content
    created = response.json()
    assert (created["status"], created["user"], created["submitter"], created["profile"], created["collection"]) == (
        "pending", "ann", "ann", "demo", "demo")
    assert (created["jobs"], created["progress"], created["reports"], created["operation"]) == (
        {}, {"total": 0, "ended": 0}, [], None)
    assert created["id_text"] == f"bid{created['id']:07d}" and created["manifest"].startswith("#%checkm_0.7")
    assert created["url"].endswith(f"{BATCHES}{created['id']}/") and created["trusted"] is False
    settle()
    detail = api(ann).get(created["url"]).json()
    assert detail["status"] == "failed" and detail["finished_at"]
    assert detail["jobs"] == {"completed": 2, "failed": 1} and detail["progress"] == {"total": 3, "ended": 3}
    assert detail["operation"] == Batch.objects.get(pk=created["id"]).operation_id is not None
    (report,) = detail["reports"]
    assert (report["number"], report["kind"]) == (1, "initial")
    assert report["counts"] == {"jobs": 3, "completed": 2, "failed": 1, "deleted": 0, "unresolved": 1}
    jobs = api(ann).get(detail["jobs_url"]).json()["results"]
    assert [job["number"] for job in jobs] == [1, 2, 3] and {job["batch"] for job in jobs} == {created["id"]}


def test_a_report_reads_as_json_text_and_csv(ingest: Ingest, ann: User) -> None:
    """GET reports/N/ answers the JSON body; ?format=text and ?format=csv (or Accept) the stored text and CSV, byte for byte."""
    batch = failed_batch(ingest)
    stored_report = BatchReport.objects.get(batch=batch)
    summary = api(ann).get(f"{BATCHES}{batch.pk}/").json()["reports"][0]
    as_json = api(ann).get(summary["url"])
    assert as_json.status_code == 200 and as_json["Content-Type"].startswith("application/json")
    body = as_json.json()
    assert (body["batch"], body["number"], body["kind"]) == (batch.pk, 1, "initial")
    assert body["body"]["failed_jobs"] == stored_report.body["failed_jobs"] and body["counts"]["failed"] == 1
    text = api(ann).get(summary["text_url"])
    assert text.status_code == 200 and text["Content-Type"].startswith("text/plain")
    assert text.content.decode() == stored_report.text and "obj002" in text.content.decode()
    as_csv = api(ann).get(summary["csv_url"])
    assert as_csv.status_code == 200 and as_csv["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(as_csv.content.decode())))
    assert rows[0][:2] == ["outcome", "job"] and sorted(row[0] for row in rows[1:]) == ["completed", "completed", "failed"]
    negotiated = api(ann).get(summary["url"], HTTP_ACCEPT="text/csv")
    assert negotiated.content.decode() == stored_report.csv
    assert api(ann).get(f"{BATCHES}{batch.pk}/reports/2/").status_code == 404
    assert api(ann).get(f"{summary['url']}?format=xml").status_code == 404
    missing = api(ann).get(f"{BATCHES}{batch.pk}/reports/9/?format=text")
    assert missing.status_code == 404 and missing.content.decode() == f"detail: batch {batch.pk} has no report '9'\n"


def test_the_submission_is_stored_as_given(ingest: Ingest, ann: User) -> None:
    """Submitter, mode, priority, ERC fields, ACL and external id are stored and shown; the jobs take the batch's priority."""
    body = {
        "profile": "demo", "type": "manifest-of-manifests", "payload_url": ingest.deposit.objects(2),
        "submitter": "Library of Alexandria", "submission_mode": "update", "priority": 0, "acl": "ops, dave",
        "erc_what": "Scrolls", "erc_who": "Callimachus", "erc_when": "-250", "erc_where": "ark:/13030/x",
        "external_id": "shipment-7",
    }
    response = submit(ann, body)
    assert response.status_code == 201, response.content
    created = response.json()
    for name, value in body.items():
        if name not in ("profile",):
            assert created[name] == value, name
    settle()
    assert set(BatchJob.objects.filter(batch_id=created["id"]).values_list("priority", flat=True)) == {0}


def test_the_same_external_id_answers_the_first_batch(ingest: Ingest, ann: User, bob: User) -> None:
    """A retried submission (same user, same external_id) answers 200 with the first batch and stores nothing; ids are per user."""
    body = {"profile": "demo", "type": "manifest-of-manifests", "payload_url": ingest.deposit.objects(1),
            "external_id": "nightly-1"}
    first = submit(ann, body)
    assert first.status_code == 201, first.content
    before = stored()
    again = submit(ann, {**body, "payload_url": ingest.deposit.objects(2, prefix="other")})
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    assert stored() == before
    other = submit(bob, body)
    assert other.status_code == 201 and other.json()["id"] != first.json()["id"]


def corrupt_manifest(ingest: Ingest) -> str:
    return ingest.deposit.file("corrupt.checkm", b"#%checkm_0.7\nnot a manifest at all\n")


def outside_listing(ingest: Ingest, tmp_path: Any) -> str:
    """A manifest of manifests under the roots listing an object manifest outside them."""
    outside = tmp_path / "elsewhere.checkm"
    outside.write_text("#%checkm_0.7\n")
    text = ("#%checkm_0.7\n#%profile | http://uc3.cdlib.org/registry/ingest/manifest/mrt-batch-manifest\n"
            f"#%fields | nfo:fileUrl | mrt:localIdentifier\nfile://{outside} | x1\n#%eof\n")
    return ingest.deposit.file("lists-outside.checkm", text.encode())


BAD: dict[str, tuple[dict[str, Any], str]] = {
    "unknown-profile": ({"profile": "nope"}, "no profile 'nope'"),
    "bad-type": ({"type": "folder"}, "type"),
    "bad-mode": ({"submission_mode": "replace"}, "submission_mode"),
    "outside-roots": ({"payload_url": "file:///etc/passwd"}, "outside the payload roots"),
    "dot-dot-escape": ({"payload_url": "@deposits/../../../etc/passwd"}, "outside the payload roots"),
    "http-not-allowed": ({"payload_url": "http://example.com/batch.checkm"}, "http(s) payloads are not allowed"),
    "bad-protocol": ({"payload_url": "ftp://example.com/x"}, "protocol 'ftp' is not allowed"),
    "corrupt-manifest": ({"payload_url": "@corrupt"}, "corrupt manifest"),
    "missing-manifest": ({"payload_url": "@deposits/absent.checkm"}, "cannot read the manifest"),
    "lists-outside-roots": ({"payload_url": "@outside"}, "outside the payload roots"),
    "priority-too-high": ({"priority": 100}, "priority"),
    "priority-negative": ({"priority": -1}, "priority"),
    "priority-not-a-number": ({"priority": "first"}, "priority"),
    "newline-in-submitter": ({"submitter": "ann\nFrom: root"}, "submitter"),
    "nul-in-payload": ({"payload_url": "@deposits/a\x00b"}, "NUL"),
    "control-in-acl": ({"acl": "ops\rbob"}, "acl"),
    "external-id-too-long": ({"external_id": "x" * 201}, "external_id"),
    "missing-payload": ({"payload_url": None}, "payload_url"),
    "profile-not-a-string": ({"profile": ["demo"]}, "profile"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_submissions_are_400_and_store_nothing(ingest: Ingest, ann: User, tmp_path: Any, case: str) -> None:
    """Each refusal is a 400 naming the problem on one line; no batch, job or command is stored."""
    change, named = BAD[case]
    body: dict[str, Any] = {"profile": "demo", "type": "manifest-of-manifests", "payload_url": ingest.deposit.objects(1)}
    for name, value in change.items():
        if isinstance(value, str):
            value = value.replace("@deposits", f"file://{ingest.deposit.root}")
            value = {"@corrupt": corrupt_manifest(ingest), "@outside": outside_listing(ingest, tmp_path)}.get(value, value)
        if value is None:
            body.pop(name)
        else:
            body[name] = value
    before = stored()
    response = submit(ann, body)
    assert response.status_code == 400, response.content
    assert named in response.content.decode()
    detail = response.json().get("detail")
    if isinstance(detail, str):
        assert "\n" not in detail
    assert stored() == before


def test_a_disabled_profile_refuses_submissions(ingest: Ingest, ann: User) -> None:
    """A disabled profile: 400 naming it, nothing stored."""
    Profile.objects.filter(pk=ingest.profile.pk).update(enabled=False)
    before = stored()
    response = submit(ann, {"profile": "demo", "type": "manifest-of-manifests", "payload_url": ingest.deposit.objects(1)})
    assert response.status_code == 400 and "disabled" in response.json()["detail"]
    assert stored() == before


def test_anonymous_callers_are_refused(ingest: Ingest) -> None:
    """The API needs authentication: nothing is read or stored for an anonymous caller."""
    before = stored()
    assert api(None).get(BATCHES).status_code in (401, 403)
    response = api(None).post(BATCHES, {"profile": "demo", "type": "file", "payload_url": "memory://x"}, format="json")
    assert response.status_code in (401, 403)
    assert stored() == before


def make_batches(ingest: Ingest, count: int, **fields: Any) -> list[Batch]:
    """`count` batches stored as rows (no commands), oldest first."""
    batches = Batch.objects.bulk_create([
        Batch(profile=ingest.profile, collection=ingest.collection, owner=ingest.owner, submitter=f"dep{n % 2}",
              type="file", payload_url=f"memory://p/{n}", **fields)
        for n in range(count)
    ])
    return list(Batch.objects.order_by("id"))[-len(batches):]


def test_list_is_newest_first_with_filters(ingest: Ingest, ann: User, bob: User) -> None:
    """Newest first; status (comma-separated), profile, collection, user, submitter and dates narrow it."""
    other_collection = Collection.objects.create(name="other")
    other_profile = Profile.objects.create(name="other", collection=other_collection, task="tests.batches.flaky")
    mine = make_batches(ingest, 3)
    Batch.objects.filter(pk=mine[0].pk).update(status=B.FAILED)
    Batch.objects.filter(pk=mine[1].pk).update(status=B.HELD)
    theirs = Batch.objects.create(profile=other_profile, collection=other_collection, owner=bob, submitter="bob",
                                  type="file", payload_url="memory://q")
    Batch.objects.filter(pk=theirs.pk).update(created_at=timezone.now() + timedelta(hours=1))

    def ids(query: str = "") -> list[int]:
        response = api(ann).get(f"{BATCHES}{query}")
        assert response.status_code == 200, response.content
        return [row["id"] for row in response.json()["results"]]

    assert ids() == [theirs.pk, mine[2].pk, mine[1].pk, mine[0].pk]
    assert ids("?status=failed,held") == [mine[1].pk, mine[0].pk]
    assert ids("?status=failed&status=pending") == [theirs.pk, mine[2].pk, mine[0].pk]
    assert ids("?profile=other") == ids("?collection=other") == ids("?user=bob") == [theirs.pk]
    assert ids("?submitter=dep1") == [mine[1].pk]
    later = (timezone.now() + timedelta(minutes=30)).isoformat()
    assert ids(f"?created_after={later.replace('+', '%2B')}") == [theirs.pk]
    assert theirs.pk not in ids(f"?created_before={later.replace('+', '%2B')}")
    for bad in ("?status=running", "?created_after=yesterday", "?limit=0", "?offset=-1", "?user=" + "x" * 300):
        assert api(ann).get(f"{BATCHES}{bad}").status_code == 400, bad


def test_list_counts_every_page_in_a_fixed_number_of_queries(ingest: Ingest, ann: User) -> None:
    """Each row carries its jobs by status and progress, read with one grouped query for the whole page (no N+1)."""
    batches = make_batches(ingest, 30)
    for batch in batches[:20]:
        BatchJob.objects.bulk_create([
            BatchJob(batch=batch, number=n, status=(J.COMPLETED if n < 3 else J.FAILED), object_key=f"k{batch.pk}-{n}",
                     payload_url="memory://x", payload_type="file", working_dir="")
            for n in range(1, 5)
        ])
    client = api(ann)
    client.get(f"{BATCHES}?limit=1")  # the token's first use

    def queries(limit: int) -> tuple[list[str], Any]:
        with CaptureQueriesContext(connection) as captured:
            response = client.get(f"{BATCHES}?limit={limit}")
        assert response.status_code == 200
        return [query["sql"] for query in captured.captured_queries], response.json()

    one, _ = queries(1)
    many, body = queries(30)
    assert len(one) == len(many), "the same queries for a page of 1 or 30"
    assert len([sql for sql in many if "GROUP BY" in sql and "batches_batchjob" in sql]) == 1, many
    rows = {row["id"]: row for row in body["results"]}
    assert rows[batches[0].pk]["jobs"] == {"completed": 2, "failed": 2}
    assert rows[batches[0].pk]["progress"] == {"total": 4, "ended": 4}
    assert rows[batches[-1].pk]["jobs"] == {} and rows[batches[-1].pk]["progress"] == {"total": 0, "ended": 0}
    assert "manifest" not in rows[batches[0].pk]


def test_unknown_or_malformed_ids_are_404(ingest: Ingest, ann: User) -> None:
    """A missing batch, a non-numeric id and a number beyond 64 bits are all 404 (never a 500)."""
    for path in ("999999/", "abc/", "9" * 30 + "/", "999999/release/", "999999/reports/1/"):
        method = api(ann).post if path.endswith("release/") else api(ann).get
        assert method(f"{BATCHES}{path}").status_code == 404, path


def test_restricted_reads_hide_other_users_batches(ingest: Ingest, ann: User, bob: User, carol: User,
                                                   settings: Any) -> None:
    """With COORD_RESTRICT_READS, only those who may act (owner, ACL, admins) list and read a batch."""
    settings.COORD_RESTRICT_READS = True
    batch = make_batches(ingest, 1, acl="ops")[0]
    assert [row["id"] for row in api(bob).get(BATCHES).json()["results"]] == []
    assert api(bob).get(f"{BATCHES}{batch.pk}/").status_code == 404
    assert [row["id"] for row in api(carol).get(BATCHES).json()["results"]] == [batch.pk]
    assert api(carol).get(f"{BATCHES}{batch.pk}/").status_code == 200


def test_update_report_reports_a_failed_batch_again(ingest: Ingest, ann: User) -> None:
    """POST update-report/ on a failed batch: 202; settled, a second (update) report exists; a second request is 409."""
    batch = failed_batch(ingest)
    response = api(ann).post(f"{BATCHES}{batch.pk}/update-report/")
    assert response.status_code == 202, response.content
    assert response.json()["status"] == "failed" and response.json()["jobs"] == {"completed": 2, "failed": 1}
    settle()
    detail = api(ann).get(f"{BATCHES}{batch.pk}/").json()
    assert detail["status"] == "failed" and [r["kind"] for r in detail["reports"]] == ["initial", "update"]
    commands = Command.objects.count()
    Batch.objects.filter(pk=batch.pk).update(status=B.COMPLETED)
    conflict = api(ann).post(f"{BATCHES}{batch.pk}/update-report/")
    assert conflict.status_code == 409 and "failed" in conflict.json()["detail"]
    assert Command.objects.count() == commands


def test_delete_needs_confirmation(ingest: Ingest, ann: User) -> None:
    """Deleting a batch without confirm is 409 saying its depositor is never told, nothing queued; confirmed: 202, then deleted."""
    batch = failed_batch(ingest)
    commands = Command.objects.count()
    assert api(ann).delete(f"{BATCHES}{batch.pk}/", {"confirm": True}, format="json").status_code == 405
    refused = api(ann).post(f"{BATCHES}{batch.pk}/delete/", {}, format="json")
    assert refused.status_code == 409 and "confirm" in refused.json()["detail"]
    assert Command.objects.count() == commands
    assert api(ann).post(f"{BATCHES}{batch.pk}/delete/", {"confirm": "maybe"}, format="json").status_code == 400
    accepted = api(ann).post(f"{BATCHES}{batch.pk}/delete/", {"confirm": True}, format="json")
    assert accepted.status_code == 202, accepted.content
    settle()
    batch.refresh_from_db()
    assert batch.status == B.DELETED
    assert set(BatchJob.objects.filter(batch=batch).values_list("status", flat=True)) == {J.DELETED}
    assert api(ann).post(f"{BATCHES}{batch.pk}/delete/", {"confirm": True}, format="json").status_code == 409


def test_a_held_batch_is_released_once_its_collection_is(ingest: Ingest, ann: User) -> None:
    """release/ of a held batch is 409 while its collection is held; after the hold is lifted, 202 and it runs."""
    batch = held_batch(ingest)
    refused = api(ann).post(f"{BATCHES}{batch.pk}/release/")
    assert refused.status_code == 409 and "still held" in refused.json()["detail"]
    Collection.objects.filter(pk=ingest.collection.pk).update(held=False)
    response = api(ann).post(f"{BATCHES}{batch.pk}/release/")
    assert response.status_code == 202 and response.json()["status"] == "held"
    settle()
    batch.refresh_from_db()
    assert batch.status == B.COMPLETED
    assert api(ann).post(f"{BATCHES}{batch.pk}/release/").status_code == 409


def test_api_root_links_the_batch_collections(ingest: Ingest, ann: User) -> None:
    """The API root names the batch resources."""
    root = api(ann).get("/api/v1/").json()
    for name in ("batches", "batch-jobs", "collections", "batch-profiles"):
        assert root[name].endswith(f"/api/v1/{name}/")
