"""Batches with real workers, beat and Redis, files in a temporary directory (SQLite here, PostgreSQL in CI)."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from django.contrib.auth.models import User

from batches.choices import BatchStatus as B
from batches.choices import JobStatus as J
from batches.config import ingest_settings
from batches.models import Batch, BatchJob, MintedIdentifier
from batches.services import batch_verb, hold_collection, job_verb, release_collection
from batches.stages import free_bytes
from tests.batches.tasks import switch
from tests.support.batches import Ingest
from tests.support.processes import WorkerProcess, wait_until

pytestmark = pytest.mark.integration
Start = Callable[..., WorkerProcess]


def worker_env(ingest: Ingest, **extra: str) -> dict[str, str]:
    """What workers need to share the test's settings."""
    return {
        "EXTRA_TASK_MODULES": "examples.tasks,tests.batches.tasks",
        "BATCH_WORK_ROOT": str(ingest.work),
        "BATCH_PAYLOAD_ROOTS": f"file://{ingest.deposit.root},slowfile://",
        "BATCH_PAYLOAD_PROTOCOLS": "file,memory,slowfile",
        "BATCH_SLOTS": "4",
        "BATCH_DISPATCH_SECONDS": "1",
        "BATCH_RESERVE_BYTES": "0",
        "COMMAND_SWEEP_SECONDS": "1",
        "COMMAND_RING_STALE_SECONDS": "2",
        "COMMAND_LEASE_SECONDS": "3",
        "STATUS_SERVICE_SECONDS": "1",
        **extra,
    }


@pytest.fixture
def webhook() -> Iterator[list[dict[str, Any]]]:
    """A local HTTP server taking report webhooks; the list of what it received (with the Idempotency-Key)."""
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            received.append({"key": self.headers.get("Idempotency-Key"), "body": body})
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return None

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    received.append({"url": f"http://127.0.0.1:{server.server_address[1]}/reports"})
    yield received
    server.shutdown()


def batch_status(batch: Batch) -> str:
    return str(Batch.objects.get(pk=batch.pk).status)


def test_a_hundred_objects_with_three_wrong_digests_end_in_a_report_naming_them(
    ingest: Ingest, live_workers: Start, live_beat: Start, webhook: list[dict[str, Any]], settings: Any,
) -> None:
    """97 completed, 3 failed, one report stored and sent once, naming the three."""
    url = webhook.pop(0)["url"]
    ingest.profile.webhook_url, ingest.profile.notify_emails = url, ""
    ingest.profile.save()
    live_workers(name="w1", **worker_env(ingest))
    live_workers(name="w2", **worker_env(ingest))
    live_beat(**worker_env(ingest))
    batch = ingest.submit(ingest.deposit.objects(100, wrong={13, 50, 88}))
    wait_until(lambda: batch_status(batch) in (B.COMPLETED, B.FAILED), 180, "the batch's report")
    jobs = {job.number: job for job in BatchJob.objects.filter(batch=batch)}
    failed = sorted(n for n, job in jobs.items() if job.status == J.FAILED)
    assert failed == [13, 50, 88] and sum(job.status == J.COMPLETED for job in jobs.values()) == 97
    assert all("digest" in jobs[n].error for n in failed)
    report = Batch.objects.get(pk=batch.pk).reports.get()
    assert sorted(report.body["failed_jobs"]) == sorted(jobs[n].pk for n in failed)
    assert all(f"obj{n:03d}" in report.text for n in failed)
    wait_until(lambda: len(webhook) >= 1, 30, "the report's webhook")
    time.sleep(1.5)
    assert len(webhook) == 1 and webhook[0]["key"] == f"batch-{batch.pk}-report-1"
    assert webhook[0]["body"]["counts"]["failed"] == 3
    assert Batch.objects.get(pk=batch.pk).status == B.FAILED


def test_collection_hold_and_release(ingest: Ingest, live_workers: Start, live_beat: Start) -> None:
    admin = User.objects.create_superuser("ops", "ops@example.com", "pw")
    hold_collection("demo", actor=admin, reason="maintenance")
    live_workers(name="w1", **worker_env(ingest))
    live_beat(**worker_env(ingest))
    batch = ingest.submit(ingest.deposit.objects(3))
    wait_until(lambda: batch_status(batch) == B.HELD, 30, "the batch held")
    time.sleep(1.0)
    assert BatchJob.objects.count() == 0
    release_collection("demo", actor=admin)
    wait_until(lambda: batch_status(batch) == B.COMPLETED, 60, "the batch completed after release")


def test_provisioning_holds_jobs_while_space_is_short_and_lets_them_go_when_it_frees(
    ingest: Ingest, live_workers: Start, live_beat: Start,
) -> None:
    config = ingest_settings()
    config.reserve_bytes, config.provision_sleep_seconds = free_bytes() * 4, 1
    config.save()
    live_workers(name="w1", **worker_env(ingest))
    live_beat(**worker_env(ingest))
    batch = ingest.submit(ingest.deposit.objects(4))

    def waiting() -> bool:
        jobs = list(BatchJob.objects.filter(batch=batch))
        return len(jobs) == 4 and all(job.status == J.PROVISIONING for job in jobs)

    wait_until(waiting, 30, "every job waiting in provisioning")
    time.sleep(3)  # several provisioning cycles: they stay, none fails, none downloads
    jobs = list(BatchJob.objects.filter(batch=batch))
    assert {job.status for job in jobs} == {J.PROVISIONING}
    assert all(next(e for e in job.history if e.get("waits"))["tries"] >= 2 for job in jobs)
    config.reserve_bytes = 0
    config.save()
    wait_until(lambda: batch_status(batch) == B.COMPLETED, 60, "the batch completed once space freed")


def test_resume_of_a_processing_failure_restarts_at_processing_then_update_reporting(
    ingest: Ingest, live_workers: Start, live_beat: Start,
) -> None:
    """No re-download, no second identifier; the admin's update report says the job completed since."""
    ingest.work.mkdir(parents=True, exist_ok=True)
    switch("fail-processing").touch()
    live_workers(name="w1", **worker_env(ingest))
    live_beat(**worker_env(ingest))
    batch = ingest.submit(ingest.deposit.objects(2))
    wait_until(lambda: batch_status(batch) == B.FAILED, 60, "the batch failed")
    jobs = list(BatchJob.objects.filter(batch=batch).order_by("number"))
    assert {job.status for job in jobs} == {J.FAILED} and {job.last_successful_status for job in jobs} == {J.DOWNLOADING}
    minted = set(MintedIdentifier.objects.values_list("identifier", flat=True))
    assert minted == {job.primary_id for job in jobs}
    switch("fail-processing").unlink()
    job_verb(jobs[0].pk, "resume", actor=ingest.owner)
    wait_until(lambda: BatchJob.objects.get(pk=jobs[0].pk).status == J.COMPLETED, 60, "the resumed job")
    resumed = BatchJob.objects.get(pk=jobs[0].pk)
    ran = [e["stage"] for e in resumed.history if "started" in e]
    assert ran.count(J.DOWNLOADING) == 1 and ran.count(J.PROCESSING) == 2
    assert set(MintedIdentifier.objects.values_list("identifier", flat=True)) == minted
    batch_verb(batch.pk, "update-report", actor=ingest.owner)
    wait_until(lambda: Batch.objects.get(pk=batch.pk).reports.count() == 2, 30, "the update report")
    update = Batch.objects.get(pk=batch.pk).reports.order_by("number").last()
    assert update is not None and update.body["completed_since_last_report"] == 1
    assert [row["job"] for row in update.body["unresolved"]] == [jobs[1].pk]
    assert batch_status(batch) == B.FAILED


def test_a_worker_killed_mid_download_resumes_without_fetching_again_what_arrived(
    ingest: Ingest, live_workers: Start, live_beat: Start, settings: Any,
) -> None:
    """SIGKILL of the worker downloading: after its lease, another worker finishes the job; whole files are not fetched twice."""
    settings.BATCH_PAYLOAD_PROTOCOLS = ["file", "memory", "slowfile"]
    settings.BATCH_PAYLOAD_ROOTS = [*settings.BATCH_PAYLOAD_ROOTS, "slowfile://"]
    ingest.work.mkdir(parents=True, exist_ok=True)
    (ingest.work / "slow-read-seconds").write_text("0.15")
    env = worker_env(ingest, BATCH_DOWNLOAD_PARALLELISM="1")
    url = ingest.deposit.objects(1, files=8)
    for path in (ingest.deposit.root).glob("obj001.checkm"):
        path.write_text(path.read_text().replace("file://", "slowfile://"))
    doomed = live_workers(name="doomed", **env)
    live_beat(**env)
    batch = ingest.submit(url)

    def some_downloaded() -> bool:
        job = BatchJob.objects.filter(batch=batch).first()
        return job is not None and job.status == J.DOWNLOADING and 2 <= sum(bool(f.get("done")) for f in job.files) < 8

    wait_until(some_downloaded, 60, "a download under way with some files whole")
    doomed.signal_group(signal.SIGKILL)
    arrived = {f["name"] for f in BatchJob.objects.get(batch=batch).files if f.get("done")}
    live_workers(name="rescuer", **env)
    wait_until(lambda: batch_status(batch) == B.COMPLETED, 90, "the batch completed on the rescuer")
    opens = (ingest.work / "slow-opens.log").read_text().split()
    fetched = {name: sum(1 for line in opens if line.endswith("/" + name)) for name in (f"file{i}.txt" for i in range(8))}
    assert all(fetched[name] == 1 for name in arrived), (arrived, fetched)
    job = BatchJob.objects.get(batch=batch)
    assert job.status == J.COMPLETED and len(job.files) == 8


def test_jobs_are_taken_by_priority(ingest: Ingest, live_workers: Start, live_beat: Start) -> None:
    """One slot: once both batches are runnable, the better batch's stages run before the other's, but for at most one."""
    admin = User.objects.create_superuser("ops", "ops@example.com", "pw")
    env = worker_env(ingest, BATCH_SLOTS="1")
    hold_collection("demo", actor=admin)
    low = ingest.submit(ingest.deposit.objects(6, prefix="low"), priority=9)
    high = ingest.submit(ingest.deposit.objects(6, prefix="high"), priority=1)
    live_workers(name="w1", **env)
    live_beat(**env)
    wait_until(lambda: batch_status(low) == B.HELD and batch_status(high) == B.HELD, 30, "both held")
    release_collection("demo", actor=admin)
    wait_until(lambda: batch_status(low) == B.COMPLETED and batch_status(high) == B.COMPLETED, 120, "both completed")
    starts: list[tuple[str, int]] = []
    for job in BatchJob.objects.filter(batch__in=[low, high]):
        starts += [(entry["started"], job.priority) for entry in job.history if "started" in entry]
    order = [priority for _, priority in sorted(starts)]
    first_high = order.index(1)
    last_high = len(order) - 1 - order[::-1].index(1)
    interleaved = order[first_high:last_high + 1].count(9)
    assert interleaved <= 1, order
