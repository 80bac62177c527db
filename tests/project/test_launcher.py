"""The launcher's supervisor: children stop in layers, stubborn ones are killed, nothing is left."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from project.launcher import Supervisor
from tests.support.processes import group_members, wait_until

# A child that notes when SIGTERM reached it, lingers `delay` seconds, notes its exit, and exits.
CHILD = """
import signal, sys, time
out, delay = sys.argv[1], float(sys.argv[2])
def stop(signum, frame):
    with open(out, "a") as f:
        f.write(f"term {time.time()}\\n")
    time.sleep(delay)
    with open(out, "a") as f:
        f.write(f"exit {time.time()}\\n")
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
open(out + ".ready", "w").close()
while True:
    time.sleep(0.05)
"""

# A child that ignores SIGTERM and forks a grandchild that ignores it too.
STUBBORN = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
if os.fork() == 0:
    while True:
        time.sleep(0.05)
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
while True:
    time.sleep(0.05)
"""


def _events(path: Path) -> dict[str, float]:
    return {kind: float(stamp) for kind, stamp in (line.split() for line in path.read_text().splitlines())}


def test_redis_stops_only_after_the_services_above_it(tmp_path: Path) -> None:
    """Layer 0 (Redis) gets SIGTERM only once every layer-1 child (worker, web) has exited."""
    supervisor = Supervisor(env=dict(os.environ), log=lambda line: None, cwd=tmp_path)
    infra, service = tmp_path / "infra", tmp_path / "service"
    supervisor.start("redis", [sys.executable, "-c", CHILD, str(infra), "0"], layer=0)
    supervisor.start("worker", [sys.executable, "-c", CHILD, str(service), "0.5"])
    wait_until(lambda: Path(f"{infra}.ready").exists() and Path(f"{service}.ready").exists(), 15, "children")
    supervisor.stop_all(grace=10)
    assert _events(infra)["term"] >= _events(service)["exit"]
    assert all(child.process is not None and child.process.poll() is not None for child in supervisor.children)


def test_a_child_ignoring_sigterm_is_killed_with_its_group(tmp_path: Path) -> None:
    """After the grace period the child's whole process group is SIGKILLed: no grandchild survives."""
    lines: list[str] = []
    supervisor = Supervisor(env=dict(os.environ), log=lines.append, cwd=tmp_path)
    pidfile = tmp_path / "pid"
    child = supervisor.start("stubborn", [sys.executable, "-c", STUBBORN, str(pidfile)])
    wait_until(pidfile.exists, 15, "the stubborn child")
    assert child.process is not None
    group = child.process.pid
    started = time.monotonic()
    supervisor.stop_all(grace=0.5)
    assert time.monotonic() - started < 8
    assert "stubborn ignored SIGTERM; killing it" in lines
    wait_until(lambda: not group_members(group), 5, "the stubborn group to be gone")
    supervisor.stop_all()  # a second call is harmless
    assert lines.count("all processes stopped") == 1
