"""Celery and Flower tell the truth: a failed action's task and a failed command's task end in FAILURE.

Flower's Failed view lists the `task-failed` events workers send; this test listens to the same
events on the real Redis (with a real worker), as Flower does, and checks the durable outcome
was recorded first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from celery import current_app
from django.contrib.auth.models import User

from coordinators.choices import ActionStatus
from coordinators.models import CoordinatorAction
from coordinators.services import submit_coordinator
from kernel.models import TaskTry
from tests.support.coordinator_apps import coordinator_xml
from tests.support.processes import WorkerProcess, wait_until
from workflows.choices import NodeStatus
from workflows.models import WorkflowNode
from xcommands.choices import CommandStatus
from xcommands.keyed import enqueue_job
from xcommands.models import Command

pytestmark = pytest.mark.integration

EVENTS = {"CELERY_TASK_EVENTS": "true", "STATUS_SERVICE_SECONDS": "1", "COORD_MATERIALIZATION_LOOKAHEAD_SECONDS": "0"}


@pytest.fixture
def task_events(celery_to_test_redis: str) -> Iterator[list[dict[str, Any]]]:
    """Every task event the workers send while the test runs (Flower's own source)."""
    seen: list[dict[str, Any]] = []
    stop = threading.Event()
    ready = threading.Event()

    def listen() -> None:
        with current_app.connection_for_read(celery_to_test_redis) as connection:
            receiver = current_app.events.Receiver(connection, handlers={"*": seen.append})
            with receiver.consumer_context() as (conn, _channel, _consumers):
                ready.set()
                while not stop.is_set():
                    try:
                        conn.drain_events(timeout=0.5)
                    except TimeoutError:
                        continue

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    ready.wait(10)
    yield seen
    stop.set()
    thread.join(5)


def _failed(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in events if event.get("type") == "task-failed"]


def _started_names(events: list[dict[str, Any]]) -> dict[str, str]:
    return {event["uuid"]: event.get("name", "") for event in events if event.get("type") == "task-received"}


def test_a_failed_action_is_a_failed_task_in_flower(
    live_workers: Callable[..., WorkerProcess], live_beat: Callable[..., WorkerProcess],
    task_events: list[dict[str, Any]],
) -> None:
    """The action's node is ERROR in the database, and its Celery task is FAILURE naming the action and the error."""
    job = submit_coordinator(coordinator_xml("examples.fail"), {}, owner=User.objects.create_user("ann"))
    live_workers(**EVENTS)
    live_beat(**EVENTS)
    wait_until(lambda: CoordinatorAction.objects.filter(job=job, number=1, status=ActionStatus.FAILED).exists(), 60,
               "the action to fail")
    action = CoordinatorAction.objects.get(job=job, number=1)
    node = WorkflowNode.objects.get(workflow_id=action.external_id)
    assert node.status == NodeStatus.ERROR and "example failure" in node.error_message
    wait_until(lambda: any(e["uuid"] == node.task_id for e in _failed(task_events)), 20, "Flower's task-failed event")
    failed = next(e for e in _failed(task_events) if e["uuid"] == node.task_id)
    assert action.id in failed["exception"] and "example failure" in failed["exception"]
    assert action.id in _started_names(task_events).get(node.task_id, "")  # Flower names the task after its action
    succeeded = [e for e in task_events if e.get("type") == "task-succeeded" and e["uuid"] == node.task_id]
    assert not succeeded
    # The real worker kept the try's story: its INFO line (below the worker's own log level), what it
    # printed (Celery's redirected stdout), and the whole traceback.
    kept = TaskTry.objects.get(object_id=node.id)
    assert (kept.status, kept.action_id, kept.worker) == (NodeStatus.ERROR, action.id, node.worker)
    assert "INFO examples.tasks: examples.fail: checking the inputs of" in kept.log
    assert kept.log.count("examples.fail: nothing usable for") == 1
    assert "Traceback (most recent call last)" in kept.traceback and "in _give_up" in kept.traceback


def test_a_command_that_failed_for_good_is_a_failed_task(
    live_workers: Callable[..., WorkerProcess], task_events: list[dict[str, Any]],
) -> None:
    """A keyed job whose task keeps failing: retried, rolled back, FAILED in its row, FAILURE in Celery; each
    retry before that was a success of its task (the command goes on), so only the last attempt is listed."""
    live_workers(**EVENTS)
    command = enqueue_job("flaky-key", "examples.ingest_fail", kwargs={"primary_id": "p-1"}, max_retries=1)
    wait_until(lambda: Command.objects.get(pk=command.pk).status == CommandStatus.FAILED, 60, "the command to fail")
    row = Command.objects.get(pk=command.pk)
    assert "storage refused p-1" in row.last_error
    # Each failed try is kept (retries, then the last one, rolled back), each with its whole traceback.
    kept = list(TaskTry.objects.filter(kind="command", object_id=str(command.pk)).order_by("id"))
    failures = [entry for entry in row.history if str(entry.get("outcome", "")).startswith("error")]
    assert [t.attempt for t in kept] == [entry["attempt"] for entry in failures] and kept
    assert [t.status for t in kept] == ["RETRY"] * (len(kept) - 1) + [CommandStatus.FAILED]
    assert all("Traceback (most recent call last)" in t.traceback and "storage refused p-1" in t.traceback
               and t.job_id == "flaky-key" for t in kept)
    wait_until(lambda: bool(_failed(task_events)), 20, "the task-failed event")
    failed = _failed(task_events)
    assert len(failed) == 1 and f"command {command.pk}" in failed[0]["exception"]
