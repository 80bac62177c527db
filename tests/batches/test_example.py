"""The shipped example ingest (examples/ingest/) loads, submits and runs to a report with exactly one failure."""

from __future__ import annotations

import hashlib
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

import examples.tasks  # noqa: F401 - registers examples.ingest_store (workers import it through CELERY_IMPORTS)
from batches.choices import BatchStatus as B
from batches.choices import JobStatus as J
from batches.definitions import parse_manifest
from batches.models import Batch, BatchJob, Collection, InventoryFile, InventoryObject, Profile
from batches.services import submit_batch
from tests.support.batches import Ingest, settle
from tests.support.processes import ROOT

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLE = ROOT / "examples" / "ingest"
BATCH_URL = f"file://{EXAMPLE}/batch.checkm"
LETTERS = ("letter-001", "letter-002", "letter-003")


@pytest.fixture
def example(ingest: Ingest, settings: Any) -> Ingest:
    """The `ingest` fixture with examples/ under the payload roots (as the default settings have it) and profile.json loaded."""
    settings.BATCH_PAYLOAD_ROOTS = [*settings.BATCH_PAYLOAD_ROOTS, f"file://{ROOT / 'examples'}"]
    call_command("loaddata", str(EXAMPLE / "profile.json"), stdout=StringIO())
    return ingest


def run(ingest: Ingest, *, trusted: bool) -> tuple[Batch, dict[str, BatchJob]]:
    """Submit batch.checkm to profile `example` and run every command; the batch and its jobs by local id."""
    batch, created = submit_batch(owner=ingest.owner, profile="example", payload_url=BATCH_URL,
                                  type="manifest-of-manifests", trusted=trusted)
    assert created and batch.status == B.PENDING
    settle()
    batch.refresh_from_db()
    return batch, {job.local_ids[0]: job for job in BatchJob.objects.filter(batch=batch)}


def test_the_manifests_are_what_the_readme_says() -> None:
    """Three objects by relative URL; every md5 matches its file except letter-002's transcript.csv."""
    batch = parse_manifest((EXAMPLE / "batch.checkm").read_text(), base_url=BATCH_URL, kind="manifest-of-manifests")
    assert [spec.local_ids for spec in batch.objects] == [(name,) for name in LETTERS]
    wrong = []
    for spec in batch.objects:
        assert spec.manifest_url == f"file://{EXAMPLE}/{spec.local_ids[0]}/manifest.checkm"
        manifest = parse_manifest(Path(spec.manifest_url.removeprefix("file://")).read_text(),
                                  base_url=spec.manifest_url, kind="object-manifest")
        for file in manifest.objects[0].files:
            content = Path(file.url.removeprefix("file://")).read_bytes()
            assert file.size == len(content) and file.digest is not None and file.digest.algorithm == "md5"
            if hashlib.md5(content).hexdigest() != file.digest.value:  # noqa: S324 - the manifests carry md5
                wrong.append(f"{spec.local_ids[0]}/{file.name}")
    assert wrong == ["letter-002/transcript.csv"]


def test_the_example_runs_to_a_report_naming_the_one_bad_digest(example: Ingest) -> None:
    """As the CLI submits it: two letters completed and recorded, letter-002 failed downloading, the report names it."""
    batch, jobs = run(example, trusted=True)
    assert batch.status == B.FAILED and set(jobs) == set(LETTERS)
    assert {name: job.status for name, job in jobs.items()} == {
        "letter-001": J.COMPLETED, "letter-002": J.FAILED, "letter-003": J.COMPLETED,
    }
    bad = jobs["letter-002"]
    assert bad.last_successful_status == J.PROVISIONING  # failed in downloading: resumable there once fixed
    assert "transcript.csv: md5 digest 313bb7c9cfe62ec29828858df01e036b does not match" in bad.error
    assert not bad.primary_id and ["letter-002"] not in [
        row.local_ids for row in InventoryObject.objects.all()]
    good = jobs["letter-001"]
    assert good.primary_id.startswith("ark:/99999/fk4") and good.minted and good.last_successful_status == J.NOTIFY
    assert any("examples.ingest_store returned" in entry.get("note", "") for entry in good.history)
    recorded = {(row.object.local_ids[0], row.name, row.digest_value) for row in InventoryFile.objects.select_related("object")}
    assert recorded == {
        ("letter-001", "letter.txt", "3e7f37fa13bd3158f7a5df0e14038a7d"),
        ("letter-001", "transcript.csv", "04d048114297ab544a6dd9fc8a721433"),
        ("letter-003", "letter.txt", "f60078ec8a85dbb0e4e70cb385175b70"),
    }
    assert InventoryObject.objects.get(local_ids=["letter-003"]).title == "Letter to Ada Lovelace"
    report = batch.reports.get()
    assert report.body["counts"] == {"jobs": 3, "completed": 2, "failed": 1, "deleted": 0, "unresolved": 1}
    assert [row["local_ids"] for row in report.body["failed"]] == [["letter-002"]]
    failed_lines = report.text.split("Failed (1):", 1)[1].strip().splitlines()
    assert len(failed_lines) == 1 and "letter-002" in failed_lines[0] and "digest" in failed_lines[0]
    assert "Report: 2 of 3 object(s) completed, 1 failed" in report.text
    assert [line.split(",")[0] for line in report.csv.splitlines()[1:]] == ["completed", "completed", "failed"]


def test_an_api_user_may_submit_it_under_the_default_roots(example: Ingest) -> None:
    """Untrusted (API) submissions read under BATCH_PAYLOAD_ROOTS, which include examples/: the same outcome."""
    batch, jobs = run(example, trusted=False)
    assert batch.status == B.FAILED and [name for name, job in sorted(jobs.items()) if job.status == J.FAILED] == ["letter-002"]


def test_loading_the_profile_again_changes_nothing_else(example: Ingest) -> None:
    """profile.json names rows by name (natural keys): loading it twice keeps one of each and the test's own rows."""
    call_command("loaddata", str(EXAMPLE / "profile.json"), stdout=StringIO())
    assert sorted(Collection.objects.values_list("name", flat=True)) == ["demo", "example"]
    assert sorted(Profile.objects.values_list("name", "collection__name", "task")) == [
        ("demo", "demo", "tests.batches.flaky"), ("example", "example", "examples.ingest_store"),
    ]


def test_the_readme_commands_run_it(example: Ingest) -> None:
    """`batch submit --profile example --type manifest-of-manifests --payload examples/ingest/batch.checkm`, then `batch report`."""
    out = StringIO()
    call_command("batch", "submit", "--profile", "example", "--type", "manifest-of-manifests",
                 "--payload", str(EXAMPLE / "batch.checkm"), "-user", example.owner.username, stdout=out)
    batch = Batch.objects.get(profile__name="example")
    assert out.getvalue().strip() == f"batch: {batch.pk}" and batch.payload_url == BATCH_URL
    settle()
    report = StringIO()
    call_command("batch", "report", str(batch.pk), "-user", example.owner.username, stdout=report)
    assert "Report: 2 of 3 object(s) completed, 1 failed" in report.getvalue()
    assert "letter-002: transcript.csv: md5 digest" in report.getvalue()
    info = StringIO()
    call_command("batch", "info", str(batch.pk), "--jobs", "-user", example.owner.username, stdout=info)
    error = BatchJob.objects.get(batch=batch, status=J.FAILED).error
    assert len(error) > 80 and " ".join(error.split()) in info.getvalue()  # the error in full, not cut
