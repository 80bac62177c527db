"""`bench bundle` end to end at a tiny size: it runs, reports every figure, and deletes what it created.

Not a timed test: the figures themselves are for the benchmark's runs, not for CI.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from django.test import override_settings

from bundles.models import BundleJob
from coordinators.models import CoordinatorJob
from tests.support.processes import ROOT
from tooling.benchmarks.bundle import run_bundle_bench
from xcommands.models import Command, CommandKey

pytestmark = pytest.mark.integration

FIGURES = {
    "database", "coordinators", "workers", "bundle_kickoff_seconds", "status_service_seconds", "submit_s", "kickoff_to_started_s",
    "started_to_all_running_s", "kickoff_to_all_running_s", "kill_to_all_killed_s", "kill_to_acknowledged_s", "commands",
}


def test_bundle_bench_reports_every_figure_and_cleans_up(
    worker_env: Callable[..., dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three coordinators: kicked off and all RUNNING, killed and all KILLED; nothing of the run is left behind."""
    env = worker_env()
    monkeypatch.setenv("DATABASE_URL", env["DATABASE_URL"])  # its workers use the test database
    monkeypatch.setenv("REDIS_URL", env["REDIS_URL"])  # and the test Redis
    monkeypatch.setenv("STATUS_SERVICE_SECONDS", "1")  # the kill's acknowledgements are counted within a second
    lines: list[str] = []
    with override_settings(REDIS_URL=env["REDIS_URL"], STATUS_SERVICE_SECONDS=1):
        figures = run_bundle_bench(3, 1, lines.append, lead=1.0)
    assert set(figures) == FIGURES and (figures["coordinators"], figures["status_service_seconds"]) == (3, 1)
    assert figures["kickoff_to_all_running_s"] > 0 and figures["kill_to_all_killed_s"] > 0
    start, kill = figures["commands"]["start"], figures["commands"]["kill"]
    assert start["BundleCoordSubmitXCommand"]["count"] == 3 and kill["CoordKillXCommand"]["count"] == 3
    assert not (BundleJob.objects.exists() or CoordinatorJob.objects.exists() or Command.objects.exists())
    assert not CommandKey.objects.exists()


def test_before_migrate_it_says_so(tmp_path: Path) -> None:
    """On a database without tables the benchmark refuses in one line, naming `migrate`; no traceback."""
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'empty.sqlite3'}", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(  # noqa: S603
        [sys.executable, "manage.py", "bench", "bundle", "--coordinators", "1"], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 1
    assert "run `python manage.py migrate` first" in done.stderr and "Traceback" not in done.stderr
