"""Recovery of nodes: lost workers (lease expired), lost messages, and a broker that lost everything."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import redis
from django.test import override_settings
from django.utils import timezone

from coordinators.choices import ActionStatus
from coordinators.models import CoordinatorAction
from statusservice import coordinators as services
from tests.support.engine import run_pending_commands
from tests.support.workflow_nodes import node_of
from workflows import launch, recovery, runner
from workflows.choices import NodeStatus, WorkflowStatus
from workflows.models import WorkflowJob, WorkflowNode
from xcommands.choices import CommandStatus
from xcommands.models import Command
from xcommands.recovery import sweep

pytestmark = pytest.mark.django_db(transaction=True)

Launch = Callable[..., CoordinatorAction]


def queued(redis_url: str, queue: str = "actions") -> list[dict[str, Any]]:
    """The `workflows.run` messages waiting in a queue: their task id and kwargs."""
    messages = [json.loads(raw) for raw in redis.Redis.from_url(redis_url).lrange(queue, 0, -1)]
    return [
        {"id": m["headers"]["id"], **json.loads(__import__("base64").b64decode(m["body"]))[1]}
        for m in messages if m["headers"]["task"] == "workflows.run"
    ]


def lose_worker(node: WorkflowNode, worker: str = "w1@gone:4242", seconds_ago: int = 5) -> None:
    """The node is RUNNING on a worker that stopped renewing its lease."""
    assert runner.claim(node.id, node.attempt, worker) is not None
    WorkflowNode.objects.filter(pk=node.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=seconds_ago))


def test_a_node_whose_worker_was_lost_is_launched_again(launched: Launch, redis_url: str) -> None:
    """Lease expired: attempt 2 is queued under a new task id (sent to the node's queue); the action keeps running."""
    action = launched()
    node = node_of(action)
    lose_worker(node)
    assert recovery.recover(timezone.now()) == {"relaunched": 1, "failed": 0, "resent": 0, "user_retries": 0}
    node.refresh_from_db()
    assert (node.status, node.attempt, len(node.task_ids)) == (NodeStatus.PREP, 2, 2)
    assert node.history[-1]["outcome"] == "LOST" and "w1@gone:4242" in node.history[-1]["error"]
    sent = queued(redis_url)
    assert (node.task_id, node.id, 2) in [(m["id"], m["node"], m["attempt"]) for m in sent]
    assert recovery.recover(timezone.now())["relaunched"] == 0  # once
    assert runner.run_node(node.id, 1) == "skipped"  # the first attempt's message, redelivered
    assert runner.run_node(node.id, 2) == NodeStatus.OK
    run_pending_commands()
    action.refresh_from_db()
    assert action.status == ActionStatus.SUCCEEDED


def test_a_live_lease_is_left_alone(launched: Launch) -> None:
    """A running node whose lease has not run out is not touched."""
    node = node_of(launched())
    assert runner.claim(node.id, 1, "w1:1") is not None
    assert recovery.recover(timezone.now()) == {"relaunched": 0, "failed": 0, "resent": 0, "user_retries": 0}
    node.refresh_from_db()
    assert node.status == NodeStatus.RUNNING


@override_settings(WORKFLOW_MAX_LAUNCHES=2)
def test_after_the_last_launch_a_lost_worker_fails_the_action_naming_it(launched: Launch) -> None:
    """At the launch limit, a lost worker makes the node and action FAILED with an error naming the worker."""
    action = launched()
    node = node_of(action)
    assert node.max_attempts == 2
    lose_worker(node, "w1@a:1")
    recovery.recover(timezone.now())
    node.refresh_from_db()
    lose_worker(node, "w2@b:2")
    assert recovery.recover(timezone.now())["failed"] == 1
    node.refresh_from_db()
    assert node.status == NodeStatus.FAILED and node.workflow.status == WorkflowStatus.FAILED
    assert [entry["worker"] for entry in node.history] == ["w1@a:1", "w2@b:2"]
    run_pending_commands()
    action.refresh_from_db()
    assert action.status == ActionStatus.FAILED
    assert "worker w2@b:2 was lost while running launch 2 of 2" in action.error_message


@override_settings(WORKFLOW_RESEND_SECONDS=60, WORKFLOW_RESEND_MAX_SECONDS=150)
def test_a_message_nobody_claimed_is_sent_again_with_backoff(launched: Launch, redis_url: str) -> None:
    """A PREP node is sent again after 60 s, then 120 s, then every 150 s (the cap), same attempt and task id."""
    node = node_of(launched())
    redis.Redis.from_url(redis_url).delete("actions")  # the message is lost
    sent_at = node.dispatched_at
    assert sent_at is not None
    assert recovery.resend_unclaimed(sent_at + timedelta(seconds=59)) == 0
    assert recovery.resend_unclaimed(sent_at + timedelta(seconds=61)) == 1
    assert [(m["id"], m["attempt"]) for m in queued(redis_url)] == [(node.task_id, 1)]
    assert recovery.resend_unclaimed(sent_at + timedelta(seconds=61 + 119)) == 0
    assert recovery.resend_unclaimed(sent_at + timedelta(seconds=61 + 121)) == 1
    assert recovery.resend_unclaimed(sent_at + timedelta(seconds=61 + 121 + 151)) == 1
    node.refresh_from_db()
    assert node.dispatches == 4 and node.attempt == 1


def test_a_broker_that_lost_its_data_gets_every_message_again_at_once(launched: Launch, redis_url: str) -> None:
    """Redis flushed: the next sweep sends every queued node again and rings every waiting command now."""
    node = node_of(launched())
    client = redis.Redis.from_url(redis_url)
    sweep(timezone.now())  # notes the broker's epoch
    client.delete("actions")
    assert sweep(timezone.now()) is not None and queued(redis_url) == []  # nothing lost: nothing sent
    client.flushall()
    waiting = Command.objects.create(
        key="other", seq=1, name="xcommands.KeyedJobXCommand", params={"key": "other", "task_name": "examples.noop"},
        status=CommandStatus.PENDING, not_before=timezone.now(), enqueued_at=timezone.now(),
        wake_at=timezone.now() + timedelta(seconds=30),
    )
    report = sweep(timezone.now())
    assert [m["node"] for m in queued(redis_url)] == [node.id]
    assert report.rung >= 1 and [json.loads(raw)["headers"]["id"] for raw in client.lrange("commands", 0, -1)]
    waiting.refresh_from_db()
    assert waiting.wake_at is not None and waiting.wake_at > timezone.now()  # rung, so its wake time moved on


def test_an_action_without_a_run_is_launched_by_the_coordinator_recovery(launched: Launch) -> None:
    """An active action whose external id names no run (launched before runs existed) gets a run, once."""
    action = launched()
    CoordinatorAction.objects.filter(pk=action.pk).update(
        external_id="3b4e1f7c-legacy-celery-id", last_modified=timezone.now() - timedelta(minutes=10)
    )
    assert services.recover_launches(timezone.now()) == 1
    action.refresh_from_db()
    run = WorkflowJob.objects.get(pk=action.external_id)
    assert run.coord_action_id == action.id and run.nodes.get().status == NodeStatus.PREP
    assert services.recover_launches(timezone.now()) == 0


def test_an_ended_run_whose_report_was_lost_is_reported_again(launched: Launch) -> None:
    """A run that ended while its action still shows it active (the report command failed) is reported again."""
    action = launched()
    node = node_of(action)
    with override_settings(COORD_SETTLE_ON_END=False):  # the end goes through the report command (ADR 0027)
        assert runner.run_node(node.id, 1) == NodeStatus.OK
    Command.objects.filter(name="coordinators.CoordActionStatusXCommand").update(status=CommandStatus.FAILED)
    CoordinatorAction.objects.filter(pk=action.pk).update(last_modified=timezone.now() - timedelta(minutes=10))
    assert services.recover_launches(timezone.now()) == 1
    run_pending_commands()
    action.refresh_from_db()
    assert action.status == ActionStatus.SUCCEEDED


def test_many_nodes_go_out_in_one_redis_pipeline(celery_to_test_redis: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """dispatch_many: 40 messages reach the queue, written to Redis in one send, not one round trip each.

    Nor does sending subscribe to each task's result (Celery does unless told the result is ignored).
    """
    from redis.connection import AbstractConnection  # noqa: PLC0415 - the class whose sends are counted

    launch.dispatch_many([("warm-1", "warmq", {"node": "a@w", "attempt": 1}), ("warm-2", "warmq", {"node": "b@w", "attempt": 1})])
    sends: list[int] = []  # from here on, the producer's Redis connection is made
    real = AbstractConnection.send_packed_command

    def counted(self: AbstractConnection, command: object, check_health: bool = True) -> None:
        sends.append(1)
        real(self, command, check_health)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", counted)
    messages = [(f"t-{number}", "batchq", {"node": f"w{number}@a", "attempt": 1}) for number in range(40)]
    assert launch.dispatch_many(messages) == 40
    monkeypatch.setattr(AbstractConnection, "send_packed_command", real)
    client = redis.Redis.from_url(celery_to_test_redis)
    assert client.llen("batchq") == 40
    assert len(sends) <= 5  # the pipeline, and a pooled connection's health check: not one (or three) per message
    bodies = [json.loads(raw)["headers"]["id"] for raw in client.lrange("batchq", 0, -1)]
    assert sorted(bodies) == sorted(f"t-{number}" for number in range(40))


def test_a_batch_redis_refuses_leaves_its_nodes_to_recovery(celery_to_test_redis: str, redis_server) -> None:
    """The broker killed: nothing counts as sent (the nodes stay PREP and recovery sends them), and nothing raises."""
    redis_server.kill()
    try:
        messages = [(f"u-{number}", "batchq", {"node": f"u{number}@a", "attempt": 1}) for number in range(5)]
        assert launch.dispatch_many(messages) == 0
    finally:
        redis_server.start()
