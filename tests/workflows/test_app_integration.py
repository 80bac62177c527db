"""Workflow applications on real workers, beat and Redis: parallel fork paths, shell output, a SIGKILLed worker.

The spec's fork/join shape (WorkflowFunctionalSpec 3.1.5): a fork whose paths run at once on
a worker pool, a join, then a shell action whose captured output a decision reads.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from tests.support.processes import WorkerProcess, wait_until
from workflows.choices import NodeStatus as N
from workflows.choices import WorkflowStatus as W
from workflows.models import WorkflowJob, WorkflowNode
from workflows.services import submit_workflow

pytestmark = pytest.mark.integration

LEASE, SWEEP = 3, 1
FAST = {
    "STATUS_SERVICE_SECONDS": "1",
    "COMMAND_SWEEP_SECONDS": str(SWEEP),
    "COMMAND_RING_STALE_SECONDS": "2",
    "WORKFLOW_LEASE_SECONDS": str(LEASE),
    "WORKFLOW_SHELL_ENABLED": "true",
}
Start = Callable[..., WorkerProcess]


def record(name: str, log: Path, seconds: float, ok: str) -> str:
    """A celery action running examples.record (appends when it ran to `log`)."""
    conf = (f"<configuration><property><name>log</name><value>file://{log}</value></property>"
            f"<property><name>seconds</name><value>{seconds}</value></property></configuration>")
    return (f'<action name="{name}"><celery xmlns="uri:oozie:celery-action:0.1">{conf}<task>examples.record</task>'
            f'</celery><ok to="{ok}"/><error to="fail"/></action>')


def write_app(directory: Path, body: str, start: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "workflow.xml").write_text(
        f'<workflow-app name="{directory.name}" xmlns="uri:oozie:workflow:1.0"><start to="{start}"/>{body}'
        '<kill name="fail"><message>${wf:errorMessage(wf:lastErrorNode())}</message></kill>'
        '<end name="end"/></workflow-app>'
    )
    return directory


def test_fork_paths_run_in_parallel_and_shell_output_drives_the_decision(
    live_workers: Start, live_beat: Start, tmp_path: Path, celery_to_test_redis: str
) -> None:
    """Three 2-second paths on a pool of 3 overlap in time; the shell's rows=3 takes the decision to the end."""
    logs = [tmp_path / f"path{i}.jsonl" for i in range(3)]
    body = (
        '<fork name="fork">' + "".join(f'<path start="p{i}"/>' for i in range(3)) + "</fork>"
        + "".join(record(f"p{i}", logs[i], 2, "join") for i in range(3))
        + '<join name="join" to="count"/>'
        + '<action name="count"><shell xmlns="uri:oozie:shell-action:1.0"><exec>/bin/sh</exec>'
        + f'<argument>-c</argument><argument>echo rows=$(cat {tmp_path}/path*.jsonl | wc -l)</argument>'
        + '<capture-output/></shell><ok to="check"/><error to="fail"/></action>'
        + '<decision name="check"><switch><case to="end">${wf:actionData("count")["rows"] eq 3}</case>'
        + '<default to="fail"/></switch></decision>'
    )
    directory = write_app(tmp_path / "forked", body, "fork")
    live_workers(name="pool", concurrency=3, **FAST)
    live_beat(**FAST)
    workflow = submit_workflow({"oozie.wf.application.path": str(directory)},
                               owner=User.objects.create_user("forker"), trusted=True)
    wait_until(lambda: WorkflowJob.objects.get(pk=workflow.pk).status != W.RUNNING, 90, "the workflow to end")
    workflow.refresh_from_db()
    assert workflow.status == W.SUCCEEDED, workflow.error_message
    spans = [json.loads(log.read_text().splitlines()[0]) for log in logs]
    assert max(s["started"] for s in spans) < min(s["ended"] for s in spans), "the fork's paths ran at once"
    count = WorkflowNode.objects.get(workflow=workflow, name="count")
    assert count.data == {"rows": "3"} and count.external_id.isdigit()
    assert WorkflowNode.objects.get(workflow=workflow, name="check").transition == "end"


def test_an_action_whose_worker_is_killed_runs_again_and_the_workflow_succeeds(
    live_workers: Start, live_beat: Start, tmp_path: Path, celery_to_test_redis: str
) -> None:
    """SIGKILL of the worker mid-action: the node is launched again on another worker; the join still passes once."""
    slow, quick = tmp_path / "slow.jsonl", tmp_path / "quick.jsonl"
    body = (
        '<fork name="fork"><path start="slow"/><path start="quick"/></fork>'
        + record("slow", slow, 6, "join") + record("quick", quick, 0, "join") + '<join name="join" to="end"/>'
    )
    directory = write_app(tmp_path / "lossy", body, "fork")
    doomed = live_workers(name="doomed", concurrency=2, **FAST)
    live_beat(**FAST)
    workflow = submit_workflow({"oozie.wf.application.path": str(directory)},
                               owner=User.objects.create_user("loser"), trusted=True)

    def slow_running_on(worker: str) -> bool:
        node = WorkflowNode.objects.filter(workflow=workflow, name="slow").first()
        return node is not None and node.status == N.RUNNING and node.worker.startswith(f"{worker}@")

    wait_until(lambda: slow_running_on("doomed"), 60, "the slow action to run on the first worker")
    wait_until(lambda: quick.exists(), 30, "the quick path to finish")
    doomed.signal_group(signal.SIGKILL)
    doomed.process.wait(timeout=10)
    killed_at = time.monotonic()
    live_workers(name="rescuer", **FAST)
    wait_until(lambda: slow_running_on("rescuer"), LEASE + SWEEP + 15, "the slow action to run again")
    assert time.monotonic() - killed_at < LEASE + SWEEP + 12
    wait_until(lambda: WorkflowJob.objects.get(pk=workflow.pk).status != W.RUNNING, 60, "the workflow to end")
    workflow.refresh_from_db()
    assert workflow.status == W.SUCCEEDED, workflow.error_message
    node = WorkflowNode.objects.get(workflow=workflow, name="slow")
    assert (node.status, node.attempt) == (N.OK, 2)
    assert node.history[0]["outcome"] == "LOST" and "doomed@" in node.history[0]["error"]
    assert len(slow.read_text().splitlines()) == 1, "the killed run never finished; the second one did, once"
    join = WorkflowNode.objects.get(workflow=workflow, name="join")
    assert (join.status, join.arrivals) == (N.OK, 2)
