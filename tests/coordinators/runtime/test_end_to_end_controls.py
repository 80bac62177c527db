"""Coordinator controls end to end: a real worker, beat and Redis; execution order, timeout, kill, suspend, rerun."""

from __future__ import annotations

import json
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
from coordinators.services import control, rerun_job, start_job, submit_coordinator
from datasets.timeline import format_datetime
from tests.support.processes import WorkerProcess, wait_until
from workflows.models import WorkflowNode

pytestmark = pytest.mark.integration

FAST = {
    "STATUS_SERVICE_SECONDS": "1",
    "COORD_INPUT_TICK_SECONDS": "1",
    "COORD_INPUT_CHECK_SECONDS": "1",
    "COORD_INPUT_CHECK_MAX_SECONDS": "2",
    "COMMAND_SWEEP_SECONDS": "1",
    "COMMAND_RING_STALE_SECONDS": "2",
    "COORD_MATERIALIZATION_LOOKAHEAD_SECONDS": "0",
}

Start = Callable[..., WorkerProcess]


def minute(offset: int) -> str:
    return format_datetime((timezone.now() + timedelta(minutes=offset)).replace(second=0, microsecond=0))


def coordinator(task: str, start: str, end: str, *, controls: str = "", properties: str = "", inputs: Path | None = None) -> str:
    data = (
        f"""<datasets><dataset name="raw" frequency="${{coord:minutes(1)}}" initial-instance="2020-01-01T00:00Z" timezone="UTC">
              <uri-template>file://{inputs}/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}${{MINUTE}}</uri-template></dataset></datasets>
            <input-events><data-in name="in" dataset="raw"><instance>${{coord:current(0)}}</instance></data-in></input-events>"""
        if inputs is not None else ""
    )
    configuration = f"<configuration>{properties}</configuration>" if properties else ""
    return f"""<coordinator-app name="controls" frequency="${{coord:minutes(1)}}" start="{start}" end="{end}" timezone="UTC"
        xmlns="uri:oozie:coordinator:0.4">
      <controls>{controls}</controls>{data}
      <action><workflow><app-path>task:{task}</app-path>{configuration}</workflow></action>
    </coordinator-app>"""


def prop(name: str, value: str) -> str:
    return f"<property><name>{name}</name><value>{value}</value></property>"


def status_of(job: CoordinatorJob) -> str:
    return CoordinatorJob.objects.get(pk=job.pk).status


@pytest.mark.parametrize(
    ("execution", "ran", "skipped"),
    [
        pytest.param("FIFO", [1, 2, 3, 4], [], id="fifo-oldest-first"),
        pytest.param("LIFO", [4, 3, 2, 1], [], id="lifo-newest-first"),
        pytest.param("LAST_ONLY", [4], [1, 2, 3], id="last-only-runs-the-current-one"),
    ],
)
def test_execution_order_on_a_backlog_with_concurrency_one(
    live_workers: Start, live_beat: Start, tmp_path: Path, celery_to_test_redis: str,
    execution: str, ran: list[int], skipped: list[int],
) -> None:
    """Four past actions, concurrency 1: they run one at a time in the policy's order (spec 6.3); the job SUCCEEDS."""
    log = tmp_path / "ran.jsonl"
    owner = User.objects.create_user("ord")
    with override_settings(COMMAND_RING_STALE_SECONDS=2):
        job = submit_coordinator(
            coordinator("examples.record", minute(-4), minute(0),
                        controls=f"<concurrency>1</concurrency><execution>{execution}</execution>",
                        properties=prop("log", f"file://{log}") + prop("seconds", "0.3")),
            {}, owner=owner,
        )
    live_workers(name="w1", concurrency=2, **FAST)
    live_beat(**FAST)
    wait_until(lambda: status_of(job) == JobStatus.SUCCEEDED, 90, f"the {execution} job to succeed")
    nominal = {format_datetime(a.nominal_time): a.number for a in job.actions.all()}
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [nominal[line["nominal_time"].replace(":00+00:00", "Z")] for line in lines] == ran
    for earlier, later in zip(lines, lines[1:], strict=False):
        assert earlier["ended"] <= later["started"], "concurrency 1: no overlap"
    assert sorted(job.actions.filter(status=ActionStatus.SKIPPED).values_list("number", flat=True)) == skipped


def test_timeout_zero_times_out_missing_inputs_and_the_job_is_done_with_error(
    live_workers: Start, live_beat: Start, tmp_path: Path, celery_to_test_redis: str
) -> None:
    """timeout 0: an action whose input is missing at its first check is TIMEDOUT; all TIMEDOUT -> DONEWITHERROR."""
    owner = User.objects.create_user("tmo")
    with override_settings(COMMAND_RING_STALE_SECONDS=2):
        job = submit_coordinator(
            coordinator("examples.noop", minute(-2), minute(0), controls="<timeout>0</timeout>", inputs=tmp_path / "none"),
            {}, owner=owner,
        )
    live_workers(name="w1", **FAST)
    live_beat(**FAST)
    wait_until(lambda: status_of(job) == JobStatus.DONEWITHERROR, 60, "the job to be DONEWITHERROR")
    assert set(job.actions.values_list("status", flat=True)) == {ActionStatus.TIMEDOUT}
    assert "timed out waiting for 1 input" in job.actions.first().error_message  # type: ignore[union-attr]


def test_kill_kills_running_work(live_workers: Start, live_beat: Start, tmp_path: Path, celery_to_test_redis: str) -> None:
    """Killing a job with a running action revokes its task: the action and job are KILLED, the task never finishes."""
    log = tmp_path / "ran.jsonl"
    owner = User.objects.create_user("kil")
    with override_settings(COMMAND_RING_STALE_SECONDS=2):
        job = submit_coordinator(
            coordinator("examples.record", minute(-1), minute(0),
                        properties=prop("log", f"file://{log}") + prop("seconds", "30")),
            {}, owner=owner,
        )
    live_workers(name="w1", concurrency=2, **FAST)
    live_beat(**FAST)
    wait_until(lambda: job.actions.filter(status=ActionStatus.RUNNING).exists(), 60, "the action to run")
    with override_settings(COMMAND_RING_STALE_SECONDS=2):
        control(job.id, "kill", actor=owner)
    wait_until(lambda: status_of(job) == JobStatus.KILLED, 30, "the job to be KILLED")
    action = job.actions.get(number=1)
    assert action.status == ActionStatus.KILLED and action.ended_at is not None
    node = WorkflowNode.objects.select_related("workflow").get(workflow_id=action.external_id)
    assert node.status == "KILLED" and node.workflow.status == "KILLED"
    time.sleep(3)
    assert not log.exists(), "the killed task must not have finished its work"


def test_suspended_jobs_create_nothing_and_resume_creates_what_was_missed(
    live_workers: Start, live_beat: Start, tmp_path: Path, celery_to_test_redis: str
) -> None:
    """A suspended job materializes nothing while the beat runs; after resume every missed action is created and runs."""
    owner = User.objects.create_user("sus")
    with override_settings(COMMAND_RING_STALE_SECONDS=2):
        job = submit_coordinator(coordinator("examples.noop", minute(-3), minute(0)), {}, owner=owner, start=False)
        control(job.id, "suspend", actor=owner)
    live_workers(name="w1", **FAST)
    live_beat(**FAST)
    wait_until(lambda: status_of(job) == JobStatus.PREPSUSPENDED, 30, "the job to be PREPSUSPENDED")
    time.sleep(3)  # several beats pass
    assert job.actions.count() == 0
    with override_settings(COMMAND_RING_STALE_SECONDS=2):
        control(job.id, "resume", actor=owner)
    wait_until(lambda: status_of(job) == JobStatus.PREP, 30, "the job to be PREP again")
    with override_settings(COMMAND_RING_STALE_SECONDS=2):
        start_job(job.id, actor=owner)
    wait_until(lambda: status_of(job) == JobStatus.SUCCEEDED, 60, "the missed actions to be created and run")
    assert sorted(job.actions.values_list("number", flat=True)) == [1, 2, 3]


def test_rerun_of_a_failed_action_succeeds_once_fixed(
    live_workers: Start, live_beat: Start, tmp_path: Path, celery_to_test_redis: str
) -> None:
    """A failed action, once its cause is fixed, reruns and succeeds; the job goes FAILED -> SUCCEEDED."""
    needed = tmp_path / "needed.txt"
    owner = User.objects.create_user("rer")
    with override_settings(COMMAND_RING_STALE_SECONDS=2):
        job = submit_coordinator(
            coordinator("examples.require", minute(-1), minute(0), properties=prop("path", f"file://{needed}")),
            {}, owner=owner,
        )
    live_workers(name="w1", **FAST)
    live_beat(**FAST)
    wait_until(lambda: status_of(job) == JobStatus.FAILED, 60, "the job to fail")
    assert "is not there" in job.actions.get(number=1).error_message
    needed.write_text("fixed")
    with override_settings(COMMAND_RING_STALE_SECONDS=2):
        rerun_job(job.id, actor=owner, rerun_type="action", scope="1")
    wait_until(lambda: status_of(job) == JobStatus.SUCCEEDED, 60, "the rerun to succeed")
    action = job.actions.get(number=1)
    assert action.status == ActionStatus.SUCCEEDED and action.run_count == 1 and action.error_message == ""
