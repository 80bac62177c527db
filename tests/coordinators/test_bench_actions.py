"""`bench actions` end to end at a tiny size: every action SUCCEEDED, every figure reported, nothing left behind.

Not a timed test: the figures themselves are for the benchmark's runs, not for CI.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from coordinators.models import CoordinatorAction, CoordinatorJob, StatusChange
from datasets.models import AvailableInstance
from tests.support.processes import ROOT
from tooling.benchmarks.actions import run_actions_bench
from workflows.models import WorkflowJob, WorkflowNode
from xcommands.models import Command, CommandKey

FIGURES = {
    "database", "jobs", "actions_per_job", "actions", "workers", "concurrency_per_job", "service_tick_seconds",
    "actions_per_s", "raw_celery_per_s", "ratio", "raw_rounds", "seconds", "actions_succeeded",
    "actions_not_succeeded", "submit_s", "to_all_materialized_s", "to_all_ready_s", "to_all_submitted_s",
    "to_all_running_s", "to_all_succeeded_s", "to_all_jobs_ended_s", "stages", "commands_per_action",
    "commands_run_total_s", "commands", "messages_queued_at_end", "to_queues_empty_s", "memory",
}
STAGES = {"materialized_to_ready", "ready_to_submitted", "submitted_to_running", "running_to_run_ended",
          "run_ended_to_succeeded"}


@pytest.mark.integration
def test_a_tiny_actions_bench_runs_every_action_and_cleans_up(
    worker_env: Callable[..., dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two jobs of three actions through the real engine with a real worker and beat: all SUCCEEDED, each stage in order, no row left."""
    env = worker_env()
    monkeypatch.setenv("DATABASE_URL", env["DATABASE_URL"])  # its worker and beat use the test database
    monkeypatch.setenv("REDIS_URL", env["REDIS_URL"])  # and the test Redis
    lines: list[str] = []
    with override_settings(REDIS_URL=env["REDIS_URL"]):
        figures = run_actions_bench(2, 3, 2, lines.append)
    assert set(figures) == FIGURES
    assert (figures["jobs"], figures["actions_per_job"], figures["actions"]) == (2, 3, 6)
    assert (figures["actions_succeeded"], figures["actions_not_succeeded"]) == (6, 0)
    assert figures["actions_per_s"] > 0 and figures["raw_celery_per_s"] > 0 and len(figures["raw_rounds"]) == 2
    assert figures["ratio"] == pytest.approx(figures["actions_per_s"] / figures["raw_celery_per_s"], abs=1e-4)
    milestones = [figures[name] for name in ("to_all_materialized_s", "to_all_ready_s", "to_all_submitted_s",
                                             "to_all_running_s", "to_all_succeeded_s")]
    assert milestones == sorted(milestones) and milestones[0] > 0  # each stage after the one before it
    assert figures["to_all_succeeded_s"] == figures["seconds"] <= figures["to_all_jobs_ended_s"]
    assert figures["to_queues_empty_s"] >= figures["seconds"] and set(figures["messages_queued_at_end"]) == {"commands", "services", "actions", "default"}
    assert set(figures["stages"]) == STAGES and all(row["count"] == 6 for row in figures["stages"].values())
    memory = figures["memory"]  # every process measured early (after the first action here) and at the end
    assert memory["end_actions"] == 6 and 1 <= memory["early_actions"] <= 6
    assert {"worker", "worker pool 1", "worker pool 2", "beat"} <= set(memory["early_kb"]) == set(memory["end_kb"])
    assert all(kb > 10_000 for kb in memory["end_kb"].values())
    commands = figures["commands"]
    assert commands["CoordStartXCommand"]["count"] == 2 and commands["CoordMaterializeXCommand"]["count"] >= 2
    # Input checks and starts are the due start's (ADR 0026), ends are settled by the runs (ADR 0027): a
    # command each only for a job whose key was busy at that moment, or an action a command held.
    assert commands.get("CoordActionInputCheckXCommand", {"count": 0})["count"] <= 2
    assert commands.get("CoordActionStatusXCommand", {"count": 0})["count"] <= 6
    assert figures["commands_per_action"] < 2
    assert figures["commands_per_action"] == pytest.approx(sum(row["count"] for row in commands.values()) / 6, abs=1e-3)
    assert any("actions/s end to end" in line for line in lines)
    for model in (CoordinatorJob, CoordinatorAction, WorkflowJob, WorkflowNode, Command, CommandKey, StatusChange,
                  AvailableInstance):
        assert not model.objects.exists(), model.__name__
    assert not User.objects.filter(username="bench").exists()


def test_before_migrate_it_says_so(tmp_path: Path) -> None:
    """On a database without tables the benchmark refuses in one line, naming `migrate`; no traceback."""
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'empty.sqlite3'}", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(  # noqa: S603
        [sys.executable, "manage.py", "bench", "actions", "--jobs", "2", "--actions", "3"], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 1
    assert "run `python manage.py migrate` first" in done.stderr and "Traceback" not in done.stderr
