"""End to end: a real Redis and a real worker run a task; `manage.py up` serves /healthz."""

from __future__ import annotations

import base64
import http.cookiejar
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from project.launcher import free_port
from project.tasks import healthcheck
from tests.support.processes import ROOT, WorkerProcess, group_members, wait_until

pytestmark = pytest.mark.integration


def test_real_worker_runs_a_task_end_to_end(live_workers: Callable[..., WorkerProcess]) -> None:
    """A task sent through the real Redis runs in a real worker process, which reaches the DB."""
    live_workers(name="w1", queues=("default",), concurrency=1)
    result = healthcheck.apply_async()
    assert result.get(timeout=30) == {"worker": os.uname().nodename, "database": "ok"}


def _get(url: str, credentials: str | None = None) -> tuple[int, bytes]:
    """Status and body of GET url, with HTTP basic credentials `user:password` when given (Flower)."""
    request = urllib.request.Request(url)  # noqa: S310 - loopback only
    if credentials is not None:
        request.add_header("Authorization", "Basic " + base64.b64encode(credentials.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=20) as response:  # noqa: S310 - loopback only; a first request may wait for a busy machine
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _admin_login(base: str, username: str, password: str) -> tuple[str, str]:
    """Log in through the admin's form; the final URL and page after the redirect."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    opener.open(f"{base}/admin/login/", timeout=10).read()
    token = next(cookie.value for cookie in jar if cookie.name == "csrftoken")
    form = urllib.parse.urlencode(
        {"csrfmiddlewaretoken": token, "username": username, "password": password, "next": "/admin/"}
    ).encode()
    with opener.open(f"{base}/admin/login/?next=/admin/", data=form, timeout=10) as response:
        return response.url, response.read().decode()


class Launcher:
    """`manage.py up` as a child process, its output in a file."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.log = log
        with log.open("wb") as out:
            self.process = subprocess.Popen(  # noqa: S603
                [sys.executable, "manage.py", "up"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
            )

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_up(self, timeout: float) -> float:
        """Seconds until the launcher printed its URLs."""
        started = time.monotonic()
        wait_until(lambda: "the service is up" in self.text() or self.process.poll() is not None,
                   timeout, "the launcher", interval=0.1)
        assert self.process.poll() is None, self.text()[-3000:]
        return time.monotonic() - started

    def children(self) -> dict[str, int]:
        return {name: int(pid) for name, pid in re.findall(r"started (\w+) \(pid (\d+)\)", self.text())}

    def stop(self, signum: int) -> dict[str, int]:
        """Signal the launcher, wait for it, and check that no process of any child is left."""
        children = self.children()
        self.process.send_signal(signum)
        self.process.wait(timeout=60)
        assert "all processes stopped" in self.text()
        assert "ignored SIGTERM" not in self.text()  # everything stopped cleanly, in order
        wait_until(lambda: not any(group_members(pid) for pid in children.values()), 10, "children to exit")
        return children


def up_environment(tmp_path: Path) -> tuple[dict[str, str], tuple[int, int, int]]:
    """The environment of a `manage.py up` of its own (./var in tmp_path, free ports): env, (web, Flower, Redis) ports."""
    port, flower_port, redis_port = free_port(), free_port(), free_port()
    inherited = ("REDIS_URL", "ADMIN_PASSWORD", "DATABASE_URL", "FLOWER_BASIC_AUTH", "FLOWER_AUTH", "FLOWER_UNAUTHENTICATED")
    env = {k: v for k, v in os.environ.items() if k not in inherited}
    env.update(
        {
            "PORT": str(port),
            "FLOWER_PORT": str(flower_port),
            "EMBEDDED_REDIS_PORT": str(redis_port),
            "VAR_DIR": str(tmp_path / "var"),
        }
    )
    return env, (port, flower_port, redis_port)


def test_up_starts_everything_and_stops_everything(tmp_path: Path) -> None:
    """`manage.py up`: first run prints the admin password once and serves everything; SIGTERM
    and Ctrl-C (SIGINT) leave no process running; a second run reuses ./var and starts in seconds."""
    env, (port, flower_port, redis_port) = up_environment(tmp_path)
    base = f"http://127.0.0.1:{port}"
    first = Launcher(env, tmp_path / "up-1.log")
    try:
        first.wait_up(120)
        status, body = _get(f"{base}/healthz")
        assert status == 200, body
        assert json.loads(body) == {"database": "ok", "broker": "ok"}
        assert _get(f"{base}/admin/login/")[0] == 200
        assert _get(f"{base}/api/v1/")[0] in (401, 403)
        status, body = _get(f"{base}/api/schema/")
        assert status == 200 and body.startswith(b"openapi: 3."), body[:200]
        # Flower asks for a login (docs/adr/0028); its generated password is shown once and kept in var.
        flower = f"http://127.0.0.1:{flower_port}/"
        wait_until(lambda: _get(flower)[0] == 401, 30, "Flower")
        flower_passwords = re.findall(r"created Flower login 'admin' with password: (\S+)", first.text())
        assert len(flower_passwords) == 1, first.text()
        assert (tmp_path / "var" / "flower.auth").read_text().strip() == f"admin:{flower_passwords[0]}"
        assert _get(flower, f"admin:{flower_passwords[0]}")[0] == 200
        passwords = re.findall(r"created admin user 'admin' with password: (\S+)", first.text())
        assert len(passwords) == 1, first.text()
        url, page = _admin_login(base, "admin", passwords[0])
        assert url.endswith("/admin/") and "Site administration" in page
        assert set(first.children()) == {"redis", "web", "worker", "actions", "beat", "flower"}
        assert (tmp_path / "var" / "db.sqlite3").exists() and (tmp_path / "var" / "redis").is_dir()
    finally:
        if first.process.poll() is None:
            first.stop(signal.SIGTERM)
    # Nothing of ours listens any more.
    for number in (port, flower_port, redis_port):
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{number}/", timeout=1)  # noqa: S310

    # The second run reuses the database and the admin user, and is up in seconds.
    second = Launcher(env, tmp_path / "up-2.log")
    try:
        assert second.wait_up(60) < 20
        assert _get(f"{base}/healthz")[0] == 200
        assert "created admin user" not in second.text()
        assert "created Flower login" not in second.text() and "flower.auth" in second.text()
    finally:
        if second.process.poll() is None:
            second.stop(signal.SIGINT)  # what Ctrl-C sends
