"""Killing a range of actions with a real worker, beat and Redis: the running task is revoked, the freed slot is used."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from coordinators.choices import ActionStatus, JobStatus
from coordinators.models import CoordinatorJob
from coordinators.services import kill_actions, submit_coordinator
from tests.coordinators.runtime.test_end_to_end_controls import (
    FAST,
    coordinator,
    minute,
    prop,
    status_of,
)
from tests.support.processes import WorkerProcess, wait_until
from workflows.models import WorkflowNode

pytestmark = pytest.mark.integration

Start = Callable[..., WorkerProcess]


def test_killing_running_actions_revokes_their_tasks_and_frees_their_slots(
    live_workers: Start, live_beat: Start, tmp_path: Path, celery_to_test_redis: str
) -> None:
    """-kill ID -action 1 while @1 runs (concurrency 1): @1 and its run KILLED, its task never finishes, @2 starts in
    the freed slot and the job is RUNNINGWITHERROR; killing @2 too ends the job KILLED."""
    log = tmp_path / "ran.jsonl"
    owner = User.objects.create_user("kac")
    with override_settings(COMMAND_RING_STALE_SECONDS=2):
        job = submit_coordinator(
            coordinator("examples.record", minute(-2), minute(0), controls="<concurrency>1</concurrency>",
                        properties=prop("log", f"file://{log}") + prop("seconds", "30")),
            {}, owner=owner,
        )
    live_workers(name="w1", concurrency=2, **FAST)
    live_beat(**FAST)
    wait_until(lambda: job.actions.filter(number=1, status=ActionStatus.RUNNING).exists(), 60, "@1 to run")
    assert job.actions.get(number=2).status in (ActionStatus.WAITING, ActionStatus.READY)
    with override_settings(COMMAND_RING_STALE_SECONDS=2):
        assert [a.number for a in kill_actions(job.id, actor=owner, kill_type="action", scope="1")] == [1]
    wait_until(lambda: job.actions.filter(number=2, status=ActionStatus.RUNNING).exists(), 60, "@2 to run in the freed slot")
    first = job.actions.get(number=1)
    assert first.status == ActionStatus.KILLED and first.ended_at is not None
    node = WorkflowNode.objects.select_related("workflow").get(workflow_id=first.external_id)
    assert node.status == "KILLED" and node.workflow.status == "KILLED"
    wait_until(lambda: status_of(job) == JobStatus.RUNNINGWITHERROR, 30, "the job to be RUNNINGWITHERROR")
    with override_settings(COMMAND_RING_STALE_SECONDS=2):
        kill_actions(job.id, actor=owner, kill_type="action", scope="1-2")
    wait_until(lambda: status_of(job) == JobStatus.KILLED, 30, "the job to end KILLED (all its actions are)")
    assert set(CoordinatorJob.objects.get(pk=job.pk).actions.values_list("status", flat=True)) == {ActionStatus.KILLED}
    time.sleep(3)
    assert not log.exists(), "the killed tasks must not have finished their work"
