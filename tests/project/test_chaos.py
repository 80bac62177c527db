"""The short chaos run: coordinators and keyed jobs on a private PostgreSQL while workers, Redis and PostgreSQL die.

`manage.py chaos --quick` SIGKILLs a pool process running an action and a whole worker,
SIGSTOPs a worker past its lease, flushes Redis, restarts Redis empty and crash-restarts
PostgreSQL, then counts what went wrong (ADR 0008). Nothing may be lost, stuck, wrongly
failed, out of order or overlapping, every re-run is explained by a fault, everything settles
within lease + sweep + 30 s, the workers take work with every process afterwards, and a quiet
system with suspended jobs creates no more commands than one with none.
"""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from typing import Any

import pytest

from tests.support.processes import ROOT
from tooling.chaos.infra import ChaosSetupError, postgres_bin

pytestmark = pytest.mark.integration


def _skip_reason() -> str | None:
    try:
        postgres_bin()
    except ChaosSetupError as exc:
        return str(exc)
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root without a `postgres` user to run PostgreSQL as (.ci/run creates it)"
    return None


def run_drill(*argv: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`manage.py chaos <argv> --json` on its own PostgreSQL and Redis; the process and its report."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    done = subprocess.run(  # noqa: S603
        [sys.executable, "manage.py", "chaos", *argv, "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False,
    )
    assert done.stdout.strip(), done.stderr[-4000:]
    return done, json.loads(done.stdout)


def assert_no_harm(report: dict[str, Any]) -> None:
    """Nothing lost, stuck, wrongly failed, reordered, overlapping or run twice unexplained; all succeeded."""
    for what in ("actions", "commands"):
        counts = report[what]
        harm = {name: counts[name] for name in ("lost", "stuck", "wrongly_failed", "out_of_order",
                                                "overlapping_beyond_concurrency", "run_twice_unexplained")}
        assert harm == dict.fromkeys(harm, 0), (what, counts["examples"])
        assert counts["succeeded"] == counts["total"] > 0


@pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))
def test_nothing_is_lost_stuck_or_wrongly_failed_when_processes_die() -> None:
    """Every fault hits live work; afterwards every count of harm is 0 and the run settled in time."""
    done, report = run_drill("--quick")
    faults = {fault["fault"]: fault for fault in report["faults"]}
    assert set(faults) == {"kill-process", "kill-worker", "pause-worker", "flush-redis", "restart-redis",
                           "restart-postgres"}
    assert all(sum(fault["in_flight"].values()) > 0 for fault in report["faults"]), report["faults"]
    assert faults["kill-process"]["in_flight"]["nodes_running"] > 0
    assert_no_harm(report)
    assert report["processes_exited_unexpectedly"] == []
    # Every re-run is explained by a fault that hit its worker, and its work was relaunched within
    # the lease and a sweep (sooner for a pool process that died under a living worker: its message
    # comes back at once, and the lease is given up when a free process takes it; with every
    # process busy that waits for a slot. tests/workflows/test_lost_pool_process.py shows the
    # seconds against a 60 s lease).
    assert report["reruns"] and report["reruns_unexplained"] == 0, report["reruns"]
    recovery = {label.split(" at ")[0]: seconds for label, seconds in report["recovery_s"].items()}
    lease, sweep = report["lease_s"], report["sweep_s"]
    assert recovery["kill-process"] <= lease + sweep + 3, report["reruns"]
    # (renewed every third of the lease, so it lapses between 2/3 of a lease and a lease after the kill)
    assert lease * 2 / 3 <= recovery["kill-worker"] <= lease + sweep + 5, report["reruns"]
    # Afterwards every pool process of both workers takes work, and a quiet system stays quiet
    # with suspended and killed jobs waiting for data.
    assert [w["took_work"] for w in report["worker_capacity"]] == [3, 3], report["worker_capacity"]
    quiet = report["quiet"]
    assert quiet["with_suspended_commands"] <= quiet["idle_commands"] + 2, quiet
    # The web server answered through it all (503 while a dependency was down, never a 500) and recovered.
    assert report["web"]["server_errors"] == 0 and report["web"]["recovered"], report["web"]
    assert report["web"]["statuses"].get("200", 0) > 0
    assert report["settled_after_last_fault_s"] is not None
    assert report["settled_after_last_fault_s"] <= report["settle_target_s"]
    assert report["ok"] and done.returncode == 0, done.stderr[-4000:]
