"""Runs survive their workers: real workers, beat and Redis, workers SIGKILLed mid-task.

An action's run holds a lease in the database while a worker runs it; when the worker dies
the lease lapses and the recovery service launches the node again on another worker within
lease + sweep, whatever Redis remembers.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from django.contrib.auth.models import User
from django.db import connection
from django.test import override_settings

from coordinators.choices import ActionStatus
from coordinators.models import CoordinatorAction
from coordinators.services import submit_coordinator
from project.celery import app
from tests.support.celery_app import point_celery_at
from tests.support.coordinator_apps import coordinator_xml, prop
from tests.support.processes import (
    WorkerProcess,
    child_env,
    running_workers,
    start_beat,
    start_redis,
    start_worker,
    wait_until,
)
from workflows.choices import NodeStatus
from workflows.models import WorkflowNode

pytestmark = pytest.mark.integration

LEASE, SWEEP = 3, 1
FAST = {
    "STATUS_SERVICE_SECONDS": "1",
    "COORD_INPUT_TICK_SECONDS": "1",
    "COMMAND_SWEEP_SECONDS": str(SWEEP),
    "COMMAND_RING_STALE_SECONDS": "2",
    "COORD_MATERIALIZATION_LOOKAHEAD_SECONDS": "0",
    "WORKFLOW_LEASE_SECONDS": str(LEASE),
}
Start = Callable[..., WorkerProcess]


def node_of(action: CoordinatorAction) -> WorkflowNode | None:
    action.refresh_from_db()
    return WorkflowNode.objects.filter(workflow_id=action.external_id).first() if action.external_id else None


def running_on(action: CoordinatorAction, worker: str) -> bool:
    node = node_of(action)
    return node is not None and node.status == NodeStatus.RUNNING and node.worker.startswith(f"{worker}@")


def test_a_run_whose_worker_is_killed_runs_again_elsewhere(
    live_workers: Start, live_beat: Start, tmp_path: Path, celery_to_test_redis: str
) -> None:
    """SIGKILL of the whole worker mid-task (and Redis flushed): the node runs again on another worker and SUCCEEDS."""
    log = tmp_path / "ran.jsonl"
    owner = User.objects.create_user("lost")
    with override_settings(COMMAND_RING_STALE_SECONDS=2):
        job = submit_coordinator(
            coordinator_xml("examples.record", properties=prop("log", f"file://{log}") + prop("seconds", "6")),
            {}, owner=owner,
        )
    first = live_workers(name="doomed", **FAST)
    live_beat(**FAST)
    wait_until(lambda: job.actions.filter(number=1).exists(), 30, "the action to be created")
    action = job.actions.get(number=1)
    wait_until(lambda: running_on(action, "doomed"), 60, "the task to run on the first worker")
    assert action.status == ActionStatus.RUNNING
    first.signal_group(signal.SIGKILL)  # the machine dies: worker, pool and its heartbeat thread
    first.process.wait(timeout=10)
    killed_at = time.monotonic()
    redis.Redis.from_url(celery_to_test_redis).flushall()  # and Redis forgot the task ever existed
    live_workers(name="rescuer", **FAST)
    wait_until(lambda: running_on(action, "rescuer"), LEASE + SWEEP + 15, "the node to run again on the rescuer")
    relaunched_after = time.monotonic() - killed_at
    wait_until(lambda: CoordinatorAction.objects.get(pk=action.pk).status == ActionStatus.SUCCEEDED, 60,
               "the action to succeed")
    node = node_of(action)
    assert node is not None and node.attempt == 2 and node.status == NodeStatus.OK
    assert node.history[0]["outcome"] == "LOST" and "doomed@" in node.history[0]["error"]
    assert [json.loads(line)["nominal_time"] for line in log.read_text().splitlines()] == [
        action.nominal_time.isoformat()
    ], "the killed run never finished; the second one did, once"
    # Within lease + sweep (+ the rescuer's start-up and a beat's slack).
    assert relaunched_after < LEASE + SWEEP + 12, relaunched_after


def test_a_task_that_finishes_while_redis_is_down_succeeds(
    transactional_db: None, tmp_path: Path, _child_sessions_end_before_teardown: None
) -> None:
    """Redis dies while the task runs: the worker records SUCCEEDED in the database anyway, the action with it;
    once Redis is back (empty) the action is still SUCCEEDED, run once, and the worker and beat are still up."""
    server = start_redis()
    old = (app.conf.broker_url, app.conf.result_backend)
    point_celery_at(app, server.url, server.url)
    log = tmp_path / "ran.jsonl"
    try:
        env = child_env(connection.settings_dict, server.url, FAST)
        with running_workers([start_worker(env, name="steady", queues=("commands", "services", "actions", "default"),
                                           logdir=tmp_path)]) as (worker,), \
                running_workers([start_beat(env, logdir=tmp_path)]) as (beat,):
            owner = User.objects.create_user("outage")
            with override_settings(COMMAND_RING_STALE_SECONDS=2):
                job = submit_coordinator(
                    coordinator_xml("examples.record", properties=prop("log", f"file://{log}") + prop("seconds", "4")),
                    {}, owner=owner,
                )
            wait_until(lambda: job.actions.filter(number=1).exists(), 30, "the action to be created")
            action = job.actions.get(number=1)
            wait_until(lambda: running_on(action, "steady"), 60, "the task to run")
            server.kill()  # Redis is gone while the task runs and finishes
            wait_until(lambda: (node_of(action) or WorkflowNode()).status == NodeStatus.OK, 30,
                       "the worker to record the outcome without Redis")
            # The run's end settles the action in the same transaction (ADR 0027): no Redis needed for it.
            assert CoordinatorAction.objects.get(pk=action.pk).status == ActionStatus.SUCCEEDED
            time.sleep(3)
            server.start()  # back, and empty
            wait_until(lambda: CoordinatorAction.objects.get(pk=action.pk).status == ActionStatus.SUCCEEDED, 60,
                       "the action to succeed once Redis is back")
            action.refresh_from_db()
            node = node_of(action)
            assert node is not None and node.attempt == 1 and action.error_message == ""
            assert len(log.read_text().splitlines()) == 1
            assert worker.process.poll() is None and beat.process.poll() is None, "worker and beat outlived Redis"
    finally:
        point_celery_at(app, *old)
        server.stop()
