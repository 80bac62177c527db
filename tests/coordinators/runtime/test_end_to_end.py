"""Coordinators end to end: a real worker, beat and Redis; inputs are files in a temporary directory."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from django.utils import timezone

from coordinators.choices import ActionStatus, JobStatus
from coordinators.models import CoordinatorJob
from coordinators.services import submit_coordinator
from datasets.timeline import format_datetime
from tests.support.processes import WorkerProcess, wait_until

pytestmark = pytest.mark.integration

FAST = {
    "STATUS_SERVICE_SECONDS": "1",
    "COORD_INPUT_CHECK_SECONDS": "1",
    "COORD_INPUT_CHECK_MAX_SECONDS": "2",
    "COMMAND_SWEEP_SECONDS": "1",
    "COMMAND_RING_STALE_SECONDS": "2",
}


def definition(data: Path, out: Path, start: str, end: str, task: str = "examples.produce") -> str:
    return f"""<coordinator-app name="e2e" frequency="${{coord:minutes(1)}}" start="{start}" end="{end}" timezone="UTC"
        xmlns="uri:oozie:coordinator:0.4">
      <controls><concurrency>2</concurrency></controls>
      <datasets>
        <dataset name="raw" frequency="${{coord:minutes(1)}}" initial-instance="2020-01-01T00:00Z" timezone="UTC">
          <uri-template>file://{data}/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}${{MINUTE}}</uri-template></dataset>
        <dataset name="done" frequency="${{coord:minutes(1)}}" initial-instance="2020-01-01T00:00Z" timezone="UTC">
          <uri-template>file://{out}/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}${{MINUTE}}</uri-template></dataset>
      </datasets>
      <input-events><data-in name="in" dataset="raw"><instance>${{coord:current(0)}}</instance></data-in></input-events>
      <output-events><data-out name="out" dataset="done"><instance>${{coord:current(0)}}</instance></data-out></output-events>
      <action><workflow><app-path>task:{task}</app-path><configuration>
        <property><name>input</name><value>${{coord:dataIn('in')}}</value></property>
        <property><name>output</name><value>${{coord:dataOut('out')}}</value></property>
      </configuration></workflow></action>
    </coordinator-app>"""


def minute(offset: int) -> str:
    return format_datetime((timezone.now() + timedelta(minutes=offset)).replace(second=0, microsecond=0))


def test_actions_wait_for_done_flags_then_run_the_task(
    live_workers: Callable[..., WorkerProcess], live_beat: Callable[..., WorkerProcess], tmp_path: Path, celery_to_test_redis: str
) -> None:
    """Actions stay WAITING until their _SUCCESS flags appear, then run the task with the resolved configuration; the job SUCCEEDS."""
    data, out = tmp_path / "data", tmp_path / "out"
    owner = User.objects.create_user("ann")
    with override_settings(COMMAND_RING_STALE_SECONDS=2):
        job = submit_coordinator(definition(data, out, minute(-3), minute(-1)), {}, owner=owner)
    live_workers(name="w1", **FAST)
    live_beat(**FAST)
    wait_until(lambda: CoordinatorJob.objects.get(pk=job.pk).actions.count() == 2, 60, "2 actions")
    time.sleep(3)  # several input checks pass: nothing is there yet
    assert set(job.actions.values_list("status", flat=True)) == {ActionStatus.WAITING}
    first, second = job.actions.order_by("number")
    (data / first.data_in["in"][0].rsplit("/", 1)[-1]).mkdir(parents=True)
    (data / first.data_in["in"][0].rsplit("/", 1)[-1] / "_SUCCESS").write_text("")
    wait_until(lambda: job.actions.get(number=1).status == ActionStatus.SUCCEEDED, 60, "action 1 to succeed")
    assert job.actions.get(number=2).status == ActionStatus.WAITING
    written = out / first.data_out["out"][0].rsplit("/", 1)[-1] / "data.json"
    assert written.exists() and first.data_in["in"][0] in written.read_text()
    (data / second.data_in["in"][0].rsplit("/", 1)[-1]).mkdir(parents=True)
    (data / second.data_in["in"][0].rsplit("/", 1)[-1] / "_SUCCESS").write_text("")
    wait_until(lambda: CoordinatorJob.objects.get(pk=job.pk).status == JobStatus.SUCCEEDED, 60, "the job to succeed")


def test_a_failing_task_fails_its_action_and_the_job(
    live_workers: Callable[..., WorkerProcess], live_beat: Callable[..., WorkerProcess], tmp_path: Path, celery_to_test_redis: str
) -> None:
    """A task that raises makes its action FAILED (through the errback) and the job FAILED."""
    data, out = tmp_path / "data", tmp_path / "out"
    owner = User.objects.create_user("bob")
    start = minute(-2)
    instance = (timezone.now() + timedelta(minutes=-2)).strftime("%Y%m%d%H%M")
    (data / instance).mkdir(parents=True)
    (data / instance / "_SUCCESS").write_text("")
    with override_settings(COMMAND_RING_STALE_SECONDS=2):
        job = submit_coordinator(definition(data, out, start, minute(-1), task="examples.fail"), {}, owner=owner)
    live_workers(name="w1", **FAST)
    live_beat(**FAST)
    wait_until(lambda: CoordinatorJob.objects.get(pk=job.pk).status == JobStatus.FAILED, 60, "the job to fail")
    action = job.actions.get(number=1)
    assert action.status == ActionStatus.FAILED
    assert "example failure" in action.error_message
