"""The launcher's supervisor: children stop in layers, stubborn ones are killed, nothing is left;
children that die are restarted with backoff, also under a real `manage.py up`."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from project.celery import app
from project.launcher import Child, Supervisor
from project.tasks import healthcheck
from tests.project.test_integration import Launcher, _get, up_environment
from tests.support.celery_app import point_celery_at
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


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _exited(child: Child) -> bool:
    return child.process is not None and child.process.poll() is not None


def test_a_dead_child_is_restarted_with_doubling_backoff_that_resets_once_stable(tmp_path: Path) -> None:
    """A child that exits is started again after 1, 2, 4, 4 s (capped), each exit logged with its
    code; one that had stayed up `stable_after` seconds is restarted after 1 s again."""
    clock = FakeClock()
    lines: list[str] = []
    supervisor = Supervisor(
        env=dict(os.environ), log=lines.append, cwd=tmp_path,
        backoff_initial=1, backoff_max=4, stable_after=60, clock=clock,
    )
    child = supervisor.start("flaky", [sys.executable, "-c", "raise SystemExit(3)"])
    delays = []
    for uptime in (0, 0, 0, 0, 61):
        clock.now += uptime
        wait_until(lambda: _exited(child), 15, "the child to exit")
        pid = child.process.pid if child.process else 0
        supervisor.watch()
        assert child.restart_at is not None
        delays.append(child.restart_at - clock.now)
        assert lines[-1].startswith(f"flaky exited unexpectedly with code 3 after {uptime} s; restarting it in ")
        clock.now = child.restart_at - 0.01
        supervisor.watch()
        assert child.process is not None and child.process.pid == pid, "restarted before its backoff was over"
        clock.now += 0.01
        supervisor.watch()
        assert child.process is not None and child.process.pid != pid
        assert lines[-1] == f"started flaky (pid {child.process.pid})"
    assert delays == [1, 2, 4, 4, 1]
    supervisor.stop_all(grace=1)


def test_nothing_is_restarted_once_stopping(tmp_path: Path) -> None:
    """After Ctrl-C or SIGTERM (stopping), a child that exits stays down: stop_all owns the end."""
    clock = FakeClock()
    lines: list[str] = []
    supervisor = Supervisor(env=dict(os.environ), log=lines.append, cwd=tmp_path, clock=clock)
    child = supervisor.start("once", [sys.executable, "-c", "pass"])
    wait_until(lambda: _exited(child), 15, "the child to exit")
    supervisor.stopping = True
    clock.now += 3600
    supervisor.watch()
    assert child.restart_at is None and lines == [f"started once (pid {child.process.pid if child.process else 0})"]


def test_the_group_of_a_killed_child_is_reaped_before_it_restarts(tmp_path: Path) -> None:
    """A child SIGKILLed without its forked processes (a worker and its pool) leaves nothing behind."""
    clock = FakeClock()
    lines: list[str] = []
    supervisor = Supervisor(env=dict(os.environ), log=lines.append, cwd=tmp_path, clock=clock)
    pidfile = tmp_path / "pid"
    child = supervisor.start("stubborn", [sys.executable, "-c", STUBBORN, str(pidfile)])
    wait_until(pidfile.exists, 15, "the stubborn child")
    assert child.process is not None
    group = child.process.pid
    os.kill(group, signal.SIGKILL)  # the leader only, as the OOM killer would
    wait_until(lambda: _exited(child), 15, "the leader to exit")
    assert group_members(group), "the forked grandchild should outlive its parent"
    supervisor.watch()
    assert "stubborn exited unexpectedly with signal 9 (SIGKILL) after 0 s; restarting it in 1 s" in lines
    wait_until(lambda: not group_members(group), 5, "the orphaned group to be gone")
    supervisor.stopping = True
    supervisor.stop_all(grace=1)


@pytest.mark.integration
def test_up_restarts_a_killed_worker_and_a_killed_redis(tmp_path: Path) -> None:
    """Under `manage.py up`, a worker whose group is SIGKILLed and a SIGKILLed Redis come back by
    themselves, each restart logged with how the child ended; Redis keeps its data (appendonly),
    the worker rides out the Redis restart and runs tasks again, and SIGTERM still stops all."""
    env, (port, _, redis_port) = up_environment(tmp_path)
    redis_url = f"redis://127.0.0.1:{redis_port}/0"
    old_broker, old_backend = app.conf.broker_url, app.conf.result_backend
    launcher = Launcher(env, tmp_path / "up.log")
    try:
        launcher.wait_up(120)
        point_celery_at(app, redis_url, redis_url)
        assert healthcheck.apply_async().get(timeout=60)["database"] == "ok"

        worker = launcher.children()["worker"]
        os.killpg(worker, signal.SIGKILL)
        wait_until(lambda: launcher.children()["worker"] != worker, 30, "a new worker")
        assert "worker exited unexpectedly with signal 9 (SIGKILL)" in launcher.text()
        wait_until(lambda: not group_members(worker), 10, "the killed worker's pool to be gone")
        wait_until(lambda: len(re.findall(r"worker-\d+@\S+ ready\.", launcher.text())) >= 2, 60,
                   "the new worker to be ready")
        worker = launcher.children()["worker"]

        client = redis.Redis.from_url(redis_url)
        client.set("survives-a-restart", "yes")
        server = launcher.children()["redis"]
        os.killpg(server, signal.SIGKILL)
        wait_until(lambda: launcher.children()["redis"] != server, 30, "a new redis-server")
        assert "redis exited unexpectedly with signal 9 (SIGKILL)" in launcher.text()
        wait_until(lambda: _get(f"http://127.0.0.1:{port}/healthz")[0] == 200, 30, "/healthz to answer 200")
        assert client.get("survives-a-restart") == b"yes"

        point_celery_at(app, redis_url, redis_url)  # this process's own connections are stale
        assert healthcheck.apply_async().get(timeout=60)["database"] == "ok"
        assert launcher.children()["worker"] == worker, "the worker should ride out a Redis restart"
        assert "worker exited" not in launcher.text().split("redis exited", 1)[1]
    finally:
        point_celery_at(app, old_broker, old_backend)
        if launcher.process.poll() is None:
            launcher.stop(signal.SIGTERM)


@pytest.mark.integration
def test_a_warm_stop_lets_a_running_task_finish_and_be_acknowledged(
    worker_env: Any, celery_to_test_redis: str, tmp_path: Path,
) -> None:
    """Stop while a real worker runs a 3 s task: the task ends (its line is written), no WorkerLostError, nothing restored."""
    env = worker_env(WORKFLOW_FS_ROOTS=f"file://{tmp_path}", ALLOWED_TASKS="examples.*")
    logfile = tmp_path / "worker.log"
    lines: list[str] = []
    supervisor = Supervisor(env={**env, "PYTHONUNBUFFERED": "1"}, log=lines.append, cwd=Path(__file__).resolve().parents[2])
    child = supervisor.start("worker", [
        sys.executable, "-m", "celery", "-A", "project", "worker", "--loglevel", "INFO", "--concurrency", "2",
        "--queues", "default", "--without-gossip", "--without-mingle", "--logfile", str(logfile),
    ])
    assert child.process is not None
    wait_until(lambda: logfile.exists() and " ready." in logfile.read_text(), 60, "the worker to be ready")
    record = tmp_path / "record.jsonl"
    app.send_task("examples.record", args=[{"log": str(record), "seconds": 3}, "2026-01-01T00:00Z"], queue="default")
    wait_until(lambda: "Task examples.record" in logfile.read_text() and "received" in logfile.read_text(), 30,
               "the task to start")
    started = time.monotonic()
    supervisor.stop_all(grace=30)
    assert time.monotonic() - started < 25  # it waited for the task, not for the grace period's end
    text = logfile.read_text()
    assert record.exists() and len(record.read_text().splitlines()) == 1, text[-2000:]
    assert "WorkerLostError" not in text and "Restoring" not in text, text[-2000:]
    assert re.search(r"Task examples\.record\[[^]]+\] succeeded", text), text[-2000:]
    assert not any("ignored SIGTERM" in line for line in lines)
    assert child.process.returncode == 0
