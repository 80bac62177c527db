"""Recovery in seconds when the worker survives its process (issue 24, item 9).

A pool process killed mid-task (SIGKILL, as the OOM killer sends it) used to stall its node or
command for the whole lease plus a sweep (60-75 s by default). The worker's main process sees
the child die at once (Celery's WorkerLostError): it gives up the lease the child held and rings
recovery, so the work runs again within seconds, with the default 60 s lease. Real worker, real Redis.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from coordinators.models import CoordinatorAction
from tests.support.coordinator_apps import prop
from tests.support.processes import wait_until
from tests.support.workflow_nodes import node_of
from workflows.choices import NodeStatus
from workflows.models import WorkflowNode
from xcommands.keyed import enqueue_job
from xcommands.models import Command

pytestmark = pytest.mark.integration

RELAUNCH_WITHIN = 5.0  # seconds from the kill to the next attempt running


def pid_of(owner: str) -> int:
    """The pid in a `host:pid` lease owner."""
    return int(owner.rsplit(":", 1)[1])


def test_a_node_whose_pool_process_died_runs_again_within_seconds(
    launched: Callable[..., CoordinatorAction], live_workers: Callable[..., Any], tmp_path: Path,
) -> None:
    """SIGKILL the pool process running a node (lease 60 s): attempt 2 runs within 5 s and the action succeeds."""
    runs = tmp_path / "runs.jsonl"
    action = launched("examples.record", properties=prop("log", str(runs)) + prop("seconds", "4"))
    live_workers(name="w1", concurrency=2)
    node = node_of(action)
    wait_until(lambda: WorkflowNode.objects.get(pk=node.pk).status == NodeStatus.RUNNING, 60, "the node to run")
    running = WorkflowNode.objects.get(pk=node.pk)
    os.kill(pid_of(running.worker), signal.SIGKILL)
    killed = time.monotonic()
    wait_until(lambda: WorkflowNode.objects.get(pk=node.pk).attempt == 2, 30, "the node's next attempt")
    took = time.monotonic() - killed
    assert took < RELAUNCH_WITHIN, f"relaunched {took:.1f} s after its process died"
    wait_until(lambda: WorkflowNode.objects.get(pk=node.pk).status == NodeStatus.OK, 60, "the relaunched node to end")
    ended = WorkflowNode.objects.get(pk=node.pk)
    assert ended.history[0]["outcome"] == "LOST" and len(runs.read_text().splitlines()) == 1


def test_a_command_whose_pool_process_died_runs_again_within_seconds(
    live_workers: Callable[..., Any], tmp_path: Path, settings: Any,
) -> None:
    """SIGKILL the pool process running a keyed job's command (lease 60 s): its next attempt starts within 5 s."""
    runs = tmp_path / "runs.jsonl"
    command = enqueue_job("slow-key", "examples.record", args=[{"log": str(runs), "seconds": 4}, "t"], max_retries=2)
    live_workers(name="w1", concurrency=2)
    wait_until(lambda: Command.objects.get(pk=command.pk).lease_owner != "", 60, "the command to run")
    os.kill(pid_of(Command.objects.get(pk=command.pk).lease_owner), signal.SIGKILL)
    killed = time.monotonic()
    wait_until(lambda: Command.objects.get(pk=command.pk).attempts >= 2, 30, "the command's next attempt")
    took = time.monotonic() - killed
    assert took < RELAUNCH_WITHIN, f"retried {took:.1f} s after its process died"
    wait_until(lambda: Command.objects.get(pk=command.pk).status == "SUCCEEDED", 60, "the command to succeed")
    assert len(runs.read_text().splitlines()) == 1
