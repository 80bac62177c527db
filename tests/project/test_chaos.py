"""The short chaos run: coordinators and keyed jobs on a private PostgreSQL while workers, Redis and PostgreSQL die.

`manage.py chaos --quick` SIGKILLs a pool process running an action and a whole worker,
SIGSTOPs a worker past its lease, flushes Redis, restarts Redis empty and crash-restarts
PostgreSQL, then counts what went wrong (ADR 0008). Nothing may be lost, stuck, wrongly
failed, out of order or overlapping, and everything settles within lease + sweep + 30 s.
"""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys

import pytest

from project.chaos.infra import ChaosSetupError, postgres_bin
from tests.support.processes import ROOT

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


@pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))
def test_nothing_is_lost_stuck_or_wrongly_failed_when_processes_die() -> None:
    """Every fault hits live work; afterwards every count of harm is 0 and the run settled in time."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    done = subprocess.run(  # noqa: S603
        [sys.executable, "manage.py", "chaos", "--quick", "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.stdout.strip(), done.stderr[-4000:]
    report = json.loads(done.stdout)
    faults = {fault["fault"]: fault for fault in report["faults"]}
    assert set(faults) == {"kill-process", "kill-worker", "pause-worker", "flush-redis", "restart-redis",
                           "restart-postgres"}
    assert all(sum(fault["in_flight"].values()) > 0 for fault in report["faults"]), report["faults"]
    assert faults["kill-process"]["in_flight"]["nodes_running"] > 0
    for what in ("actions", "commands"):
        counts = report[what]
        harm = {name: counts[name] for name in ("lost", "stuck", "wrongly_failed", "out_of_order",
                                                "overlapping_beyond_concurrency", "run_twice_unexplained")}
        assert harm == dict.fromkeys(harm, 0), (what, counts["examples"])
        assert counts["succeeded"] == counts["total"] > 0
    assert report["processes_exited_unexpectedly"] == []
    # The web server answered through it all (503 while a dependency was down, never a 500) and recovered.
    assert report["web"]["server_errors"] == 0 and report["web"]["recovered"], report["web"]
    assert report["web"]["statuses"].get("200", 0) > 0
    assert report["settled_after_last_fault_s"] is not None
    assert report["settled_after_last_fault_s"] <= report["settle_target_s"]
    assert report["ok"] and done.returncode == 0, done.stderr[-4000:]
