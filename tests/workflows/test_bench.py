"""`bench workflow` end to end at a tiny size: it runs, reports every figure, and deletes what it created.

Not a timed test: the figures themselves are for the benchmark's runs, not for CI.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from django.test import override_settings

from tests.support.processes import ROOT
from tooling.benchmarks.workflow import WorkflowBench, workflow_xml
from workflows.definitions.parser import parse_workflow
from workflows.models import WorkflowJob, WorkflowNode

pytestmark = pytest.mark.integration

FIGURES = {
    "database", "jobs", "width", "workers", "rounds", "raw_celery_per_s", "workflow_actions_per_s",
    "node_transitions_per_s", "ratio", "workflows_not_succeeded", "raw_rounds", "workflow_rounds",
}


def test_workflow_bench_reports_every_figure_and_cleans_up(
    worker_env: Callable[..., dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three workflows of a 2-wide fork, one round: every workflow succeeded; nothing of the run is left."""
    env = worker_env()
    monkeypatch.setenv("DATABASE_URL", env["DATABASE_URL"])  # its worker uses the test database
    monkeypatch.setenv("REDIS_URL", env["REDIS_URL"])  # and the test Redis
    lines: list[str] = []
    bench = WorkflowBench(3, 2, 1, lines.append)
    bench.rounds = 1
    with override_settings(REDIS_URL=env["REDIS_URL"]):
        figures = bench.execute_workflows()
    assert set(figures) == FIGURES and (figures["jobs"], figures["width"]) == (3, 2)
    assert figures["workflows_not_succeeded"] == 0 and figures["workflow_actions_per_s"] > 0
    # The ratio comes from the unrounded rates; the figures shown are rounded to 0.1.
    expected = figures["workflow_actions_per_s"] / figures["raw_celery_per_s"]
    assert figures["ratio"] == pytest.approx(expected, rel=0.01, abs=0.0015)
    assert not WorkflowJob.objects.exists() and not WorkflowNode.objects.exists()


def test_the_benchmark_workflow_is_a_valid_fork_of_the_asked_width() -> None:
    """The application it runs parses: :start:, fork, `width` actions, join, kill, end."""
    definition = parse_workflow(workflow_xml(4))
    assert definition.nodes["fork"].to == ("a0", "a1", "a2", "a3") and definition.forks == {"fork": "join"}


def test_before_migrate_it_says_so(tmp_path: Path) -> None:
    """On a database without tables the benchmark refuses in one line, naming `migrate`; no traceback."""
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'empty.sqlite3'}", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(  # noqa: S603
        [sys.executable, "manage.py", "bench", "workflow", "--jobs", "1"], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 1
    assert "run `python manage.py migrate` first" in done.stderr and "Traceback" not in done.stderr
