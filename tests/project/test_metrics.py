"""/metrics: figures read from the database at scrape time, in Prometheus' format, for token holders and API users."""

from __future__ import annotations

import base64
from datetime import datetime, timedelta
from itertools import count
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from django.utils import timezone
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families

from batches.models import Batch, BatchJob, Collection, Profile
from bundles.models import BundleJob
from coordinators.models import CoordinatorAction, CoordinatorJob
from monitoring import ENDED_ACTIONS_CACHE_KEY, ENDED_WORKFLOWS_CACHE_KEY
from tests.coordinators.api.factories import bulk_jobs, token, user
from workflows.models import WorkflowJob, WorkflowNode
from xcommands.models import Command

pytestmark = pytest.mark.django_db

PROBE = "tests.MetricsProbeXCommand"  # a class name no real command has: its series come only from these rows
METRICS_TOKEN = "scrape-token-4f1c2a"
_seq = count(1)


@pytest.fixture(autouse=True)
def _token(settings: Any) -> None:
    settings.METRICS_TOKEN = METRICS_TOKEN
    settings.METRICS_WINDOW_SECONDS = 300
    settings.METRICS_COMMAND_SAMPLE = 2000
    settings.METRICS_ENDED_ACTIONS_SECONDS = 0  # count ended actions at every scrape (one test turns reuse on)


def scrape(accept: str = "") -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """GET /metrics with the token; every sample as {(name, sorted labels): value}."""
    headers = {"Authorization": f"Bearer {METRICS_TOKEN}"}
    if accept:
        headers["Accept"] = accept
    response = Client().get("/metrics", headers=headers)
    assert response.status_code == 200, response.content
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def command(status: str, *, key: str | None = None, enqueued: datetime | None = None, started: datetime | None = None,
            finished: datetime | None = None, worker: str = "", lease_expires: datetime | None = None,
            name: str = PROBE) -> Command:
    """One command row in the given state (a key of its own unless named)."""
    now = timezone.now()
    n = next(_seq)
    history = [{"attempt": 1, "phase": "execute", "outcome": status, "at": finished.isoformat(), "worker": worker}] if finished and worker else []
    return Command.objects.create(
        key=key or f"metrics-key-{n}", seq=n, name=name, status=status, not_before=now,
        enqueued_at=enqueued or now, started_at=started, finished_at=finished, history=history,
        lease_owner=worker if lease_expires else "", lease_expires_at=lease_expires,
    )


def test_scrapes_need_the_token_or_api_credentials(db: None) -> None:
    """No credentials, a wrong token, a bad password: 401 with a Bearer challenge; the token or an API user: 200."""
    ann = user("ann")
    inactive = user("gone")
    inactive.is_active = False
    inactive.save()
    client = Client()
    refused = [
        client.get("/metrics"),
        client.get("/metrics", headers={"Authorization": "Bearer not-the-token"}),
        client.get("/metrics", headers={"Authorization": "Basic " + base64.b64encode(b"ann:wrong").decode()}),
        client.get("/metrics", headers={"Authorization": f"Token {token(inactive)}"}),
    ]
    for response in refused:
        assert response.status_code == 401
        assert response["WWW-Authenticate"].startswith("Bearer")
        assert b"scheduler_" not in response.content
    allowed = [
        client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}),
        client.get("/metrics", headers={"Authorization": f"Token {token(ann)}"}),
        client.get("/metrics", headers={"Authorization": "Basic " + base64.b64encode(b"ann:ann-password-123").decode()}),
    ]
    for response in allowed:
        assert response.status_code == 200
        assert response["Content-Type"].startswith("text/plain")
        assert b"scheduler_commands_queued" in response.content
    assert client.post("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}).status_code == 405


def test_an_empty_token_setting_accepts_no_bearer(settings: Any, db: None) -> None:
    """METRICS_TOKEN unset: `Bearer ` with nothing (or anything) is not a pass."""
    settings.METRICS_TOKEN = ""
    for header in ("Bearer ", "Bearer", "Bearer x"):
        assert Client().get("/metrics", headers={"Authorization": header}).status_code == 401


def test_queued_running_and_parked_commands_per_class_follow_the_rows() -> None:
    """Each class's queued (PENDING), running (leased) and parked counts, and its oldest waiting age, are the rows'."""
    before = scrape()
    assert value(before, "scheduler_commands_queued", command=PROBE) is None  # no row, no series
    assert value(before, "scheduler_commands_queued", command="coordinators.CoordMaterializeXCommand") == 0
    now = timezone.now()
    command("PENDING", enqueued=now - timedelta(seconds=120))
    command("PENDING")
    waiting = command("PENDING")
    command("RUNNING", started=now, worker="w@host:1", lease_expires=now + timedelta(seconds=60))
    command("ROLLING_BACK", started=now, worker="w@host:1", lease_expires=now + timedelta(seconds=60))
    command("PARKED", started=now)
    command("SUCCEEDED", started=now, finished=now)
    after = scrape()
    assert value(after, "scheduler_commands_queued", command=PROBE) == 3
    assert value(after, "scheduler_commands_running", command=PROBE) == 2
    assert value(after, "scheduler_commands_parked", command=PROBE) == 1
    assert 119 <= (value(after, "scheduler_commands_oldest_queued_age_seconds", command=PROBE) or 0) < 180

    Command.objects.filter(pk=waiting.pk).update(status="CANCELLED")
    assert value(scrape(), "scheduler_commands_queued", command=PROBE) == 2


def test_wait_and_run_histograms_cover_the_commands_finished_in_the_window(settings: Any) -> None:
    """Wait = first start - enqueue, run = end - first start; only commands finished in the window count."""
    now = timezone.now()
    # waits 2 s and 20 s; runs 0.3 s and 4 s
    command("SUCCEEDED", enqueued=now - timedelta(seconds=30), started=now - timedelta(seconds=28),
            finished=now - timedelta(seconds=27.7))
    command("FAILED", enqueued=now - timedelta(seconds=60), started=now - timedelta(seconds=40),
            finished=now - timedelta(seconds=36))
    # finished before the window: not counted
    command("SUCCEEDED", enqueued=now - timedelta(hours=2), started=now - timedelta(hours=2),
            finished=now - timedelta(seconds=400))
    samples = scrape()
    wait = {labels: v for (name, labels), v in samples.items() if name == "scheduler_command_wait_seconds_bucket"}
    assert wait[(("command", PROBE), ("le", "1.0"))] == 0
    assert wait[(("command", PROBE), ("le", "2.5"))] == 1
    assert wait[(("command", PROBE), ("le", "30.0"))] == 2
    assert wait[(("command", PROBE), ("le", "+Inf"))] == 2
    assert value(samples, "scheduler_command_wait_seconds_gcount", command=PROBE) == 2
    assert value(samples, "scheduler_command_wait_seconds_gsum", command=PROBE) == pytest.approx(22, abs=0.01)
    assert value(samples, "scheduler_command_run_seconds_bucket", command=PROBE, le="0.5") == 1
    assert value(samples, "scheduler_command_run_seconds_bucket", command=PROBE, le="5.0") == 2
    assert value(samples, "scheduler_command_run_seconds_gsum", command=PROBE) == pytest.approx(4.3, abs=0.01)
    assert value(samples, "scheduler_commands_finished_in_window", command=PROBE, status="SUCCEEDED") == 1
    assert value(samples, "scheduler_commands_finished_in_window", command=PROBE, status="FAILED") == 1
    assert value(samples, "scheduler_metrics_window_seconds") == 300

    settings.METRICS_WINDOW_SECONDS = 600  # the older one now falls in the window
    assert value(scrape(), "scheduler_command_wait_seconds_gcount", command=PROBE) == 3


def test_the_histograms_read_only_the_most_recent_commands(settings: Any) -> None:
    """METRICS_COMMAND_SAMPLE bounds the scan: commands enqueued before the last N are not read."""
    now = timezone.now()
    for _ in range(3):
        command("SUCCEEDED", enqueued=now - timedelta(seconds=5), started=now - timedelta(seconds=4), finished=now)
    for _ in range(4):
        command("PENDING", name="tests.OtherProbeXCommand")
    settings.METRICS_COMMAND_SAMPLE = 5  # the 4 pending ones and the newest finished one
    assert value(scrape(), "scheduler_command_wait_seconds_gcount", command=PROBE) == 1
    settings.METRICS_COMMAND_SAMPLE = 7
    assert value(scrape(), "scheduler_command_wait_seconds_gcount", command=PROBE) == 3


def test_jobs_actions_bundles_batches_and_runs_by_status_follow_the_rows() -> None:
    """Every status of each entity is a series (zeros included); counts move when rows change."""
    before = scrape()
    for entity, statuses in {
        "scheduler_coordinator_jobs": ("PREP", "RUNNING", "IGNORED"),
        "scheduler_coordinator_actions": ("WAITING", "SUCCEEDED", "IGNORED"),
        "scheduler_bundle_jobs": ("PREP", "DONEWITHERROR"),
        "scheduler_workflow_jobs": ("PREP", "SUCCEEDED"),
        "scheduler_batches": ("pending", "completed"),
        "scheduler_batch_jobs": ("pending", "downloading"),
    }.items():
        for status in statuses:
            assert value(before, entity, status=status) == 0, (entity, status)

    owner = user("ann")
    running, killed = bulk_jobs(owner, 2, status="RUNNING")
    CoordinatorJob.objects.filter(pk=killed).update(status="KILLED")
    now = timezone.now()
    for n, status in enumerate(["RUNNING", "RUNNING", "SUCCEEDED"], start=1):
        CoordinatorAction.objects.create(id=f"{running}@{n}", job_id=running, number=n, nominal_time=now + timedelta(hours=n), status=status)
    BundleJob.objects.create(id="0000001-260101000000000-B", app_name="b", definition="<bundle-app/>", owner=owner, status="RUNNING")
    collection = Collection.objects.create(name="metrics")
    profile = Profile.objects.create(name="metrics", collection=collection, task="examples.noop")
    batch = Batch.objects.create(profile=profile, collection=collection, owner=owner, submitter="ann", type="file",
                                 payload_url="memory://x", status="processing")
    BatchJob.objects.create(batch=batch, number=1, object_key="obj-1", payload_url="memory://x", payload_type="file",
                            working_dir="/tmp/x", status="downloading")
    WorkflowJob.objects.create(id="0000001-260101000000000-W", app_name="w", app_path="task:examples.noop",
                               created_at=now, status="RUNNING")

    after = scrape()
    assert value(after, "scheduler_coordinator_jobs", status="RUNNING") == 1
    assert value(after, "scheduler_coordinator_jobs", status="KILLED") == 1
    assert value(after, "scheduler_coordinator_actions", status="RUNNING") == 2
    assert value(after, "scheduler_coordinator_actions", status="SUCCEEDED") == 1
    assert value(after, "scheduler_bundle_jobs", status="RUNNING") == 1
    assert value(after, "scheduler_batches", status="processing") == 1
    assert value(after, "scheduler_batch_jobs", status="downloading") == 1
    assert value(after, "scheduler_workflow_jobs", status="RUNNING") == 1

    CoordinatorAction.objects.filter(job_id=running, status="RUNNING").update(status="KILLED")
    moved = scrape()
    assert value(moved, "scheduler_coordinator_actions", status="RUNNING") == 0
    assert value(moved, "scheduler_coordinator_actions", status="KILLED") == 2


def test_ended_action_counts_are_reused_while_live_ones_are_fresh(settings: Any) -> None:
    """With METRICS_ENDED_ACTIONS_SECONDS, ended counts (a full scan) come from the cache; pending and running never do."""
    settings.METRICS_ENDED_ACTIONS_SECONDS = 60
    cache.delete(ENDED_ACTIONS_CACHE_KEY)
    [job] = bulk_jobs(user("ann"), 1)
    now = timezone.now()
    CoordinatorAction.objects.create(id=f"{job}@1", job_id=job, number=1, nominal_time=now, status="SUCCEEDED")
    assert value(scrape(), "scheduler_coordinator_actions", status="SUCCEEDED") == 1
    CoordinatorAction.objects.create(id=f"{job}@2", job_id=job, number=2, nominal_time=now, status="SUCCEEDED")
    CoordinatorAction.objects.create(id=f"{job}@3", job_id=job, number=3, nominal_time=now, status="RUNNING")
    samples = scrape()
    assert value(samples, "scheduler_coordinator_actions", status="SUCCEEDED") == 1  # reused
    assert value(samples, "scheduler_coordinator_actions", status="RUNNING") == 1  # fresh
    cache.delete(ENDED_ACTIONS_CACHE_KEY)  # what the expiry does
    assert value(scrape(), "scheduler_coordinator_actions", status="SUCCEEDED") == 2
    cache.delete(ENDED_ACTIONS_CACHE_KEY)


def test_ended_workflow_counts_are_reused_while_live_ones_are_fresh(settings: Any) -> None:
    """Ended runs (one per action: millions) are counted by one GROUP BY reused a while; PREP/RUNNING/SUSPENDED never are."""
    settings.METRICS_ENDED_ACTIONS_SECONDS = 60
    cache.delete(ENDED_WORKFLOWS_CACHE_KEY)
    now = timezone.now()

    def run(n: int, status: str) -> None:
        WorkflowJob.objects.create(id=f"{n:07d}-260101000000000-W", app_name="w", app_path="task:examples.noop",
                                   created_at=now, status=status)

    run(1, "SUCCEEDED")
    assert value(scrape(), "scheduler_workflow_jobs", status="SUCCEEDED") == 1
    run(2, "SUCCEEDED")
    run(3, "RUNNING")
    samples = scrape()
    assert value(samples, "scheduler_workflow_jobs", status="SUCCEEDED") == 1  # reused
    assert value(samples, "scheduler_workflow_jobs", status="RUNNING") == 1  # fresh
    cache.delete(ENDED_WORKFLOWS_CACHE_KEY)  # what the expiry does
    assert value(scrape(), "scheduler_workflow_jobs", status="SUCCEEDED") == 2
    settings.METRICS_ENDED_ACTIONS_SECONDS = 0  # 0: counted at every scrape
    run(4, "FAILED")
    assert value(scrape(), "scheduler_workflow_jobs", status="FAILED") == 1
    cache.delete(ENDED_WORKFLOWS_CACHE_KEY)


def test_due_actions_are_waiting_or_ready_ones_whose_nominal_time_passed() -> None:
    """Past nominal time and WAITING/READY counts; future ones and started ones do not; the oldest's age is shown."""
    owner = user("ann")
    [job] = bulk_jobs(owner, 1)
    now = timezone.now()
    rows = [
        (1, now - timedelta(minutes=30), "WAITING"),
        (2, now - timedelta(minutes=10), "WAITING"),
        (3, now - timedelta(minutes=5), "READY"),
        (4, now + timedelta(minutes=5), "WAITING"),  # not due yet
        (5, now - timedelta(hours=3), "RUNNING"),  # started
        (6, now - timedelta(hours=4), "SUCCEEDED"),
    ]
    assert value(scrape(), "scheduler_coordinator_actions_due_oldest_age_seconds") == 0
    for number, nominal, status in rows:
        CoordinatorAction.objects.create(id=f"{job}@{number}", job_id=job, number=number, nominal_time=nominal, status=status)
    samples = scrape()
    assert value(samples, "scheduler_coordinator_actions_due", status="WAITING") == 2
    assert value(samples, "scheduler_coordinator_actions_due", status="READY") == 1
    assert 1800 <= (value(samples, "scheduler_coordinator_actions_due_oldest_age_seconds") or 0) < 1900

    CoordinatorAction.objects.filter(number=1).update(status="SUBMITTED")
    samples = scrape()
    assert value(samples, "scheduler_coordinator_actions_due", status="WAITING") == 1
    assert 600 <= (value(samples, "scheduler_coordinator_actions_due_oldest_age_seconds") or 0) < 700


def test_workers_are_seen_through_their_leases_and_their_last_commands(settings: Any) -> None:
    """Last seen: a held command lease (renewed = now + lease), a running node's lease, else its last command's end."""
    settings.COMMAND_LEASE_SECONDS = 60
    settings.WORKFLOW_LEASE_SECONDS = 90
    now = timezone.now()
    command("RUNNING", started=now, worker="alpha:11", lease_expires=now + timedelta(seconds=50))  # beat 10 s ago
    command("SUCCEEDED", started=now - timedelta(seconds=40), finished=now - timedelta(seconds=30), worker="beta:22")
    command("SUCCEEDED", started=now - timedelta(seconds=80), finished=now - timedelta(seconds=70), worker="beta:22")
    workflow = WorkflowJob.objects.create(id="0000002-260101000000000-W", app_name="w", app_path="task:examples.noop",
                                          created_at=now, status="RUNNING")
    WorkflowNode.objects.create(id=f"{workflow.id}@task", workflow=workflow, name="task", task_name="examples.noop",
                                queue="actions", status="RUNNING", worker="gamma@host:33",
                                lease_expires_at=now + timedelta(seconds=85))  # beat 5 s ago
    samples = scrape()
    seen = {dict(labels)["worker"]: v for (name, labels), v in samples.items() if name == "scheduler_worker_last_seen_seconds"}
    assert seen["alpha:11"] == pytest.approx((now - timedelta(seconds=10)).timestamp(), abs=1)
    assert seen["beta:22"] == pytest.approx((now - timedelta(seconds=30)).timestamp(), abs=1)
    assert seen["gamma@host:33"] == pytest.approx((now - timedelta(seconds=5)).timestamp(), abs=1)


def test_prometheus_asking_for_openmetrics_gets_gauge_histograms() -> None:
    """With `Accept: application/openmetrics-text` the window histograms are typed gaugehistogram."""
    now = timezone.now()
    command("SUCCEEDED", enqueued=now - timedelta(seconds=3), started=now - timedelta(seconds=2), finished=now)
    response = Client().get("/metrics", headers={
        "Authorization": f"Bearer {METRICS_TOKEN}", "Accept": "application/openmetrics-text; version=1.0.0",
    })
    assert response["Content-Type"].startswith("application/openmetrics-text")
    types = {family.name: family.type for family in openmetrics_families(response.content.decode())}
    assert types["scheduler_command_wait_seconds"] == "gaugehistogram"
    assert types["scheduler_coordinator_actions"] == "gauge"

