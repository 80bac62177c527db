"""`manage.py batch VERB`: submit (trusted), info, report, and the verbs on collections, batches and jobs; user errors are one line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from batches.choices import BatchStatus as B
from batches.choices import JobStatus as J
from batches.models import Batch, BatchJob, BatchReport, Collection
from tests.support.batches import Ingest, batch_with_held_jobs, failed_batch, held_batch, settle
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)


def run(*args: str, user: str | None = "ann") -> str:
    out = io.StringIO()
    call_command("batch", *args, *(["-user", user] if user else []), stdout=out)
    return out.getvalue()


def refused(*args: str, user: str | None = "ann") -> str:
    with pytest.raises(CommandError) as caught:
        run(*args, user=user)
    message = str(caught.value)
    assert "\n" not in message
    return message


def stored() -> tuple[int, int, int]:
    return Batch.objects.count(), BatchJob.objects.count(), Command.objects.count()


def test_submit_is_trusted_and_stores_what_it_is_given(ingest: Ingest, tmp_path: Path) -> None:
    """submit reads a manifest outside BATCH_PAYLOAD_ROOTS (a plain path too); its options are stored; it runs."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    url = ingest.deposit.objects(2)
    moved = outside / "batch.checkm"
    moved.write_text(Path(url.removeprefix("file://")).read_text())
    out = run("submit", "--profile", "demo", "--type", "manifest-of-manifests", "--payload", str(moved),
              "--submitter", "Alexandria", "--priority", "2", "--mode", "update", "--what", "Scrolls",
              "--who", "Callimachus", "--when", "-250", "--where", "ark:/1/x", "--acl", "ops", "--external-id", "s-1")
    batch = Batch.objects.get()
    assert out.strip() == f"batch: {batch.pk}"
    assert (batch.payload_url, batch.trusted, batch.owner.username, batch.submitter) == (
        f"file://{moved}", True, "ann", "Alexandria")
    assert (batch.priority, batch.submission_mode, batch.erc_what, batch.erc_who, batch.erc_when, batch.erc_where) == (
        2, "update", "Scrolls", "Callimachus", "-250", "ark:/1/x")
    assert (batch.acl, batch.external_id) == ("ops", "s-1")
    again = run("submit", "--profile", "demo", "--type", "file", "--payload", str(moved), "--external-id", "s-1")
    assert again.strip() == f"batch: {batch.pk} (submitted before with this external id)"
    assert Batch.objects.count() == 1
    settle()
    batch.refresh_from_db()
    assert batch.status == B.COMPLETED and set(batch.jobs.values_list("priority", flat=True)) == {2}


@pytest.mark.parametrize(
    ("args", "named"),
    [
        pytest.param(("--profile", "nope", "--type", "file", "--payload", "memory://x"), "no profile 'nope'", id="unknown-profile"),
        pytest.param(("--profile", "demo", "--type", "folder", "--payload", "memory://x"), "invalid choice", id="bad-type"),
        pytest.param(("--profile", "demo", "--type", "file", "--payload", "memory://x", "--priority", "100"),
                     "use 0 (first) to 99 (last)", id="priority-too-high"),
        pytest.param(("--profile", "demo", "--type", "file", "--payload", "ftp://host/x"), "protocol 'ftp'", id="bad-protocol"),
        pytest.param(("--profile", "demo", "--type", "manifest-of-manifests", "--payload", "@corrupt"), "corrupt manifest",
                     id="corrupt-manifest"),
        pytest.param(("--profile", "demo", "--type", "manifest-of-manifests", "--payload", "/no/such/file.checkm"),
                     "cannot read the manifest", id="missing-manifest"),
        pytest.param(("--profile", "demo", "--type", "file"), "--payload", id="missing-payload"),
    ],
)
def test_bad_submissions_are_one_line_errors_and_store_nothing(ingest: Ingest, args: tuple[str, ...], named: str) -> None:
    """Each refusal is one line naming the problem (exit 1); nothing is stored."""
    corrupt = ingest.deposit.file("corrupt.checkm", b"#%checkm_0.7\nrubbish\n")
    before = stored()
    message = refused("submit", *[corrupt if arg == "@corrupt" else arg for arg in args])
    assert named in message
    assert stored() == before


def test_the_user_is_the_login_name_unless_given(ingest: Ingest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without -user the login name acts; an unknown user is a clear error and nothing is stored."""
    before = stored()
    assert "no user 'ghost'" in refused("submit", "--profile", "demo", "--type", "file", "--payload", "memory://x",
                                        user="ghost")
    monkeypatch.setattr("getpass.getuser", lambda: "nobody-here")
    assert "no user 'nobody-here'" in refused("hold", "demo", user=None)
    assert stored() == before
    monkeypatch.setattr("getpass.getuser", lambda: "ann")
    url = ingest.deposit.objects(1)
    assert run("submit", "--profile", "demo", "--type", "manifest-of-manifests", "--payload", url, user=None).startswith(
        "batch: ")
    assert Batch.objects.get().owner.username == "ann"


def test_info_shows_the_batch_its_counts_and_its_jobs(ingest: Ingest) -> None:
    """info: the submission, status and job counts; --jobs one line per job (id, number, status, priority, ids, error)."""
    batch = failed_batch(ingest)
    info = run("info", str(batch.pk))
    assert f"Batch ID    : {batch.pk} (bid{batch.pk:07d})" in info and "Status      : failed" in info
    assert "Jobs        : 3 (completed 2, failed 1)" in info and "Reports     : 1 (latest initial" in info
    assert "Priority    : - (profile: 5)" in info and "No" not in info  # no job table without --jobs
    assert run("info", f"bid{batch.pk:07d}") == info
    listing = run("info", str(batch.pk), "--jobs")
    jobs = {job.number: job for job in batch.jobs.all()}
    line = next(line for line in listing.splitlines() if line.startswith(str(jobs[2].pk)))
    assert line.split()[:5] == [str(jobs[2].pk), "2", "failed", "5", "obj002"] and "digest" in line
    failed_only = run("info", str(batch.pk), "--jobs", "--status", "failed")
    assert str(jobs[2].pk) in failed_only and f"\n{jobs[1].pk} " not in failed_only
    assert "--status 'running'" in refused("info", str(batch.pk), "--jobs", "--status", "running")
    assert "no batch 999999" in refused("info", "999999")
    assert "not a batch id" in refused("info", "bid-seven")


def test_report_prints_a_stored_report(ingest: Ingest) -> None:
    """report: the latest (or numbered) report as text (default), JSON or CSV, as stored."""
    batch = failed_batch(ingest)
    report = BatchReport.objects.get(batch=batch)
    assert run("report", str(batch.pk)).rstrip("\n") == report.text.rstrip("\n")
    assert json.loads(run("report", str(batch.pk), "1", "--format", "json")) == report.body
    assert run("report", str(batch.pk), "--format", "csv").rstrip("\n") == report.csv.rstrip("\n")
    assert "has no report 2" in refused("report", str(batch.pk), "2")
    fresh = ingest.submit(ingest.deposit.objects(1, prefix="fresh"))
    assert "has no report yet" in refused("report", str(fresh.pk))


def test_hold_and_release_collections_are_for_job_admins(ingest: Ingest, admin: User) -> None:
    """hold/release by the owner is refused (nothing changes); by a job admin, held then released with its held batches."""
    assert "job admins only" in refused("hold", "demo", "--reason", "disk swap")
    assert not Collection.objects.get(name="demo").held
    assert run("hold", "demo", "--reason", "disk swap", user="root").strip() == "hold: collection demo held"
    collection = Collection.objects.get(name="demo")
    assert (collection.held, collection.held_reason, collection.held_by) == (True, "disk swap", admin)
    batch = held_batch(ingest)
    assert "job admins only" in refused("release", "demo")
    assert "no collection 'nope'" in refused("hold", "nope", user="root")
    out = run("release", "demo", user="root")
    assert "1 held batch(es) and 0 held job(s) queued" in out
    settle()
    assert Batch.objects.get(pk=batch.pk).status == B.COMPLETED
    assert "exactly one" in refused("release", "demo", "--batch", str(batch.pk))
    assert "exactly one" in refused("release")


def test_release_a_held_batch_and_a_held_job(ingest: Ingest) -> None:
    """release --batch of a batch still held by its collection is refused; once lifted, release --batch and --job run them."""
    batch = held_batch(ingest)
    assert "still held" in refused("release", "--batch", str(batch.pk))
    Collection.objects.filter(name="demo").update(held=False)
    assert run("release", "--batch", str(batch.pk)).strip() == f"release: batch {batch.pk} queued"
    settle()
    assert Batch.objects.get(pk=batch.pk).status == B.COMPLETED
    other = batch_with_held_jobs(ingest)
    job = other.jobs.get(number=1)
    Collection.objects.filter(name="demo").update(held=False)
    assert run("release", "--job", f"jid{job.pk:07d}").strip() == f"release: job {job.pk} queued"
    settle()
    assert BatchJob.objects.get(pk=job.pk).status == J.COMPLETED


def test_resume_and_requeue_many_jobs_report_each_refusal(ingest: Ingest) -> None:
    """resume/requeue queue every job they may; unknown ids and jobs in the wrong state are named in one error line."""
    batch = failed_batch(ingest, count=3, wrong=frozenset({1, 2}))
    one, two, three = (batch.jobs.get(number=n) for n in (1, 2, 3))
    message = refused("requeue", str(one.pk), str(three.pk), "999999")
    assert f"job {three.pk}: " in message and "only a failed job" in message and "job 999999: no such job" in message
    settle()
    assert BatchJob.objects.get(pk=one.pk).retry_count == 1
    out = run("resume", str(one.pk), str(two.pk))
    assert out.splitlines() == [f"resume: job {one.pk} queued", f"resume: job {two.pk} queued"]
    settle()
    assert [BatchJob.objects.get(pk=pk).retry_count for pk in (one.pk, two.pk)] == [2, 1]


def test_delete_needs_yes_when_the_depositor_is_not_told(ingest: Ingest) -> None:
    """delete --batch without --yes is refused telling to pass --yes (nothing queued); with --yes it is deleted."""
    batch = failed_batch(ingest)
    commands = Command.objects.count()
    message = refused("delete", "--batch", str(batch.pk))
    assert "pass --yes" in message and "never told" in message
    assert Command.objects.count() == commands
    assert "exactly one" in refused("delete", "--yes")
    held = batch_with_held_jobs(ingest)
    job = held.jobs.get(number=1)
    assert "pass --yes" in refused("delete", "--job", str(job.pk))
    assert run("delete", "--job", str(job.pk), "--yes").strip() == f"delete: job {job.pk} queued"
    assert run("delete", "--batch", str(batch.pk), "--yes").strip() == f"delete: batch {batch.pk} queued"
    settle()
    assert Batch.objects.get(pk=batch.pk).status == B.DELETED and BatchJob.objects.get(pk=job.pk).status == J.DELETED


def test_priority_and_update_report(ingest: Ingest) -> None:
    """priority JOB N changes it (0 to 99 only); update-report reports a failed batch again, and is refused otherwise."""
    batch = failed_batch(ingest)
    job = batch.jobs.get(number=2)
    assert run("priority", str(job.pk), "0").strip() == f"priority: job {job.pk} -> 0 queued"
    assert "use 0 (first) to 99 (last)" in refused("priority", str(job.pk), "-3")
    assert "no job 999999" in refused("priority", "999999", "1")
    assert run("update-report", str(batch.pk)).strip() == f"update-report: batch {batch.pk} queued"
    settle()
    assert BatchJob.objects.get(pk=job.pk).priority == 0 and batch.reports.count() == 2
    Batch.objects.filter(pk=batch.pk).update(status=B.COMPLETED)
    assert "update-report needs failed" in refused("update-report", str(batch.pk))


def test_others_are_refused(ingest: Ingest, bob: User) -> None:
    """bob may not act on ann's batch or jobs: one line naming him; nothing queued."""
    batch = failed_batch(ingest)
    job = batch.jobs.get(number=2)
    commands = Command.objects.count()
    for args in (("update-report", str(batch.pk)), ("priority", str(job.pk), "1"), ("resume", str(job.pk)),
                 ("delete", "--batch", str(batch.pk), "--yes")):
        assert "'bob' may not" in refused(*args, user="bob"), args
    assert Command.objects.count() == commands
