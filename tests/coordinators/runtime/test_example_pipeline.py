"""The shipped example pipeline runs: 24 hourly actions produce a day that the daily action aggregates."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from django.utils import timezone

from coordinators.choices import JobStatus
from coordinators.models import CoordinatorJob
from coordinators.services import submit_coordinator
from datasets.timeline import format_datetime
from oozie.definitions import parse_properties
from tests.support.processes import ROOT, WorkerProcess, wait_until
from workflows.models import WorkflowJob

pytestmark = pytest.mark.integration

FAST = {
    "STATUS_SERVICE_SECONDS": "1",
    "COORD_INPUT_CHECK_SECONDS": "1",
    "COORD_INPUT_CHECK_MAX_SECONDS": "2",
    "COMMAND_SWEEP_SECONDS": "1",
    "COMMAND_RING_STALE_SECONDS": "2",
}
PIPELINE = ROOT / "examples" / "pipeline"


def test_hourly_producer_feeds_the_daily_consumer(
    live_workers: Callable[..., WorkerProcess], live_beat: Callable[..., WorkerProcess], tmp_path: Path, celery_to_test_redis: str
) -> None:
    """examples/pipeline as shipped: raw files in, 24 hourly instances, one daily summary of them."""
    day = (timezone.now() - timedelta(days=3)).replace(hour=0, minute=0, second=0, microsecond=0)
    for hour in range(24):
        raw = tmp_path / "raw" / (day + timedelta(hours=hour)).strftime("%Y/%m/%d/%H")
        raw.mkdir(parents=True)
        (raw / "_SUCCESS").write_text("")
    owner = User.objects.create_user("ann")
    jobs = []
    with override_settings(COMMAND_RING_STALE_SECONDS=2):
        for name, start, end in (
            ("hourly", day, day + timedelta(days=1)),
            ("daily", day + timedelta(days=1), day + timedelta(days=1, minutes=1)),
        ):
            properties = parse_properties((PIPELINE / f"{name}.properties").read_text())
            properties.update(start=format_datetime(start), end=format_datetime(end), dataRoot=str(tmp_path))
            xml = (PIPELINE / name / "coordinator.xml").read_text()
            jobs.append(submit_coordinator(xml, properties, owner=owner, app_dir=str(PIPELINE / name)))
    live_workers(name="w1", concurrency=2, **FAST)
    live_beat(**FAST)

    def finished() -> bool:
        return all(CoordinatorJob.objects.get(pk=job.pk).status == JobStatus.SUCCEEDED for job in jobs)

    wait_until(finished, 150, "both example coordinators to succeed", interval=0.5)
    summary = json.loads((tmp_path / "daily" / day.strftime("%Y/%m/%d") / "summary.json").read_text())
    assert len(summary["parts"]) == 24
    assert all("missing" not in part for part in summary["parts"])
    assert summary["parts"][0]["nominal_time"].startswith(day.strftime("%Y-%m-%dT00:00"))
    # The daily action ran its workflow application: fork, join, decision, fs cleanup.
    out = tmp_path / "daily" / day.strftime("%Y/%m/%d")
    assert len((out / "parts.txt").read_text().splitlines()) == 24 and not (out / "_staging").exists()
    action = jobs[1].actions.get(number=1)
    run = WorkflowJob.objects.get(pk=action.external_id)
    assert run.status == "SUCCEEDED" and run.app_name == "pipeline-daily-wf"
    assert dict(run.nodes.values_list("name", "transition")) == {
        ":start:": "both", "both": "summary,listing", "summary": "joined", "listing": "joined",
        "joined": "written", "written": "cleanup", "cleanup": "end", "end": "",
    }
