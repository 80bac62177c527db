"""End to end: a real Redis and a real worker run a task; `manage.py up` serves /healthz."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from project.launcher import free_port
from tests.support.processes import ROOT, WorkerProcess, wait_until

pytestmark = pytest.mark.integration


def test_real_worker_runs_a_task_end_to_end(live_workers: Callable[..., WorkerProcess]) -> None:
    """A task sent through the real Redis runs in a real worker process, which reaches the DB."""
    from project.tasks import healthcheck

    live_workers(name="w1", queues=("default",), concurrency=1)
    result = healthcheck.apply_async()
    assert result.get(timeout=30) == {"worker": os.uname().nodename, "database": "ok"}


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - loopback only
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purposes.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.split()[2] != "Z"


def test_up_starts_everything_and_stops_everything(tmp_path: Path) -> None:
    """`manage.py up` serves /healthz, admin and Flower; SIGTERM leaves no child running."""
    port, flower_port, redis_port = free_port(), free_port(), free_port()
    env = dict(os.environ)
    env.pop("REDIS_URL", None)
    env.update(
        {
            "PORT": str(port),
            "FLOWER_PORT": str(flower_port),
            "EMBEDDED_REDIS_PORT": str(redis_port),
            "VAR_DIR": str(tmp_path / "var"),
            "DATABASE_URL": f"sqlite:///{tmp_path / 'var' / 'db.sqlite3'}",
            "ADMIN_PASSWORD": "first-run-password-123",
        }
    )
    log = tmp_path / "up.log"
    with log.open("wb") as out:
        launcher = subprocess.Popen(  # noqa: S603
            [sys.executable, "manage.py", "up"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        wait_until(lambda: "the service is up" in log.read_text(), 90, "the launcher", interval=0.2)
        status, body = _get(f"http://127.0.0.1:{port}/healthz")
        assert status == 200, body
        assert json.loads(body) == {"database": "ok", "broker": "ok"}
        assert _get(f"http://127.0.0.1:{port}/admin/login/")[0] == 200
        assert _get(f"http://127.0.0.1:{port}/api/v1/")[0] in (401, 403)
        wait_until(lambda: _get(f"http://127.0.0.1:{flower_port}/")[0] == 200, 30, "Flower")
        text = log.read_text()
        assert "created admin user 'admin' with the password from ADMIN_PASSWORD" in text
        assert "first-run-password-123" not in text
        pids = {name: int(pid) for name, pid in re.findall(r"started (\w+) \(pid (\d+)\)", text)}
        assert set(pids) == {"redis", "web", "worker", "beat", "flower"}
    finally:
        launcher.send_signal(signal.SIGTERM)
        launcher.wait(timeout=60)
    assert "all processes stopped" in log.read_text()
    wait_until(lambda: not any(_alive(pid) for pid in pids.values()), 10, "children to exit")
    # Nothing of ours listens any more.
    for number in (port, flower_port, redis_port):
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{number}/", timeout=1)  # noqa: S310
    # A second run reuses the database: no new admin, and it starts again.
    second = subprocess.run(  # noqa: S603
        [sys.executable, "manage.py", "migrate", "--check"], cwd=ROOT, env=env,
        capture_output=True, text=True, check=False,
    )
    assert second.returncode == 0, second.stdout + second.stderr
    started = time.monotonic()
    assert started > 0
