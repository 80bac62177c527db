"""The processes a chaos run starts and breaks: a PostgreSQL cluster, a Redis server, Celery workers and beat.

All listen on loopback only (and, in the multi-host drill, on the root ends of its own links:
tooling/chaos/hosts.py), keep their files in the run's directory, and are stopped by
`stop()` whatever state the faults left them in.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import redis

from project.launcher import _die_with_parent, find_redis_server, redis_answers, wait_for


class ChaosSetupError(RuntimeError):
    """Something the chaos run needs is missing (PostgreSQL binaries, a user to run them as)."""


def postgres_bin() -> Path:
    """The newest PostgreSQL server binaries on this machine (PG_BIN overrides)."""
    configured = os.environ.get("PG_BIN")
    candidates = [Path(configured)] if configured else sorted(
        Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: [int(x) for x in p.parent.name.split(".") if x.isdigit()]
    )
    for candidate in reversed(candidates):
        if (candidate / "initdb").exists() and (candidate / "pg_ctl").exists():
            return candidate
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    raise ChaosSetupError(
        "PostgreSQL server binaries (initdb, pg_ctl) not found: install PostgreSQL (apt-get install "
        "postgresql) or set PG_BIN to their directory"
    )


def _run_as() -> list[str]:
    """PostgreSQL refuses to run as root: as root, run its binaries as the `postgres` user."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise ChaosSetupError(
            "running as root, PostgreSQL needs another user to run as: create one "
            "(useradd --system --no-create-home postgres) or run as a normal user"
        ) from None
    return ["runuser", "-u", "postgres", "--"]


@dataclass
class PostgresCluster:
    """A private PostgreSQL cluster on a loopback port (trust authentication, no fsync)."""

    directory: Path
    port: int
    bindir: Path = field(default_factory=postgres_bin)
    #: Addresses it answers on besides loopback (the multi-host drill's links), and the network they are in.
    listen: tuple[str, ...] = ()
    network: str = ""

    @property
    def data(self) -> Path:
        return self.directory / "data"

    def url(self, database: str) -> str:
        """postgres:// URL of a database of this cluster."""
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def _ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(  # noqa: S603 - our binaries, our arguments
            [*_run_as(), str(self.bindir / "pg_ctl"), "-D", str(self.data), *args],
            capture_output=True, text=True, check=check, timeout=120,
        )

    def init(self) -> None:
        """initdb into the run's directory."""
        self.directory.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            _run_as()
            shutil.chown(self.directory, user="postgres")
        subprocess.run(  # noqa: S603
            [*_run_as(), str(self.bindir / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
            capture_output=True, text=True, check=True, timeout=120,
        )
        if self.network:
            with (self.data / "pg_hba.conf").open("a") as hba:
                hba.write(f"host all all {self.network} trust\n")

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        addresses = ",".join(("127.0.0.1", *self.listen))
        options = (
            f"-p {self.port} -k {self.directory} -c listen_addresses={addresses} -c max_connections=200 "
            "-c fsync=off -c full_page_writes=off"
        )
        self._ctl("-l", str(self.directory / "server.log"), "-w", "-o", options, "start")

    def crash_restart(self) -> None:
        """Stop the server as a crash would (immediate: no checkpoint, sessions cut), then start it again."""
        self._ctl("-m", "immediate", "stop")
        self.start()

    def stop(self) -> None:
        """Stop the server (immediately; the run's data is thrown away)."""
        if (self.data / "postmaster.pid").exists():
            self._ctl("-m", "immediate", "stop", check=False)

    def create_database(self, name: str) -> None:
        """CREATE DATABASE name."""
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')


@dataclass
class RedisProcess:
    """A private redis-server without persistence: a restart comes back empty."""

    directory: Path
    port: int
    process: subprocess.Popen[bytes] | None = None
    #: Addresses it answers on besides loopback (the multi-host drill's links).
    listen: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start redis-server and wait for PING."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(  # noqa: S603
            [find_redis_server(), "--port", str(self.port), "--bind", "127.0.0.1", *self.listen,
             *(("--protected-mode", "no") if self.listen else ()), "--dir", str(self.directory),
             "--save", "", "--appendonly", "no", "--daemonize", "no",
             "--logfile", str(self.directory / "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent,  # noqa: PLW1509
        )
        wait_for(lambda: redis_answers(self.url), 15, "redis-server")

    def kill(self) -> None:
        """SIGKILL the server (everything it held is gone)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def flush(self) -> None:
        """FLUSHALL: every queue, unacknowledged message and result gone at once."""
        client = redis.Redis.from_url(self.url)
        try:
            client.flushall()
        finally:
            client.close()

    def stop(self) -> None:
        """Terminate the server."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


@dataclass
class ServiceProcess:
    """A worker, beat or web server process tree in its own session (a supervisor's view of it)."""

    name: str
    argv: list[str]
    logfile: Path
    env: dict[str, str]
    cwd: Path
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    def start(self) -> None:
        """Start it (again), appending to its log."""
        handle = self.logfile.open("ab")
        self.process = subprocess.Popen(  # noqa: S603
            self.argv,
            cwd=self.cwd, env=self.env, stdout=handle, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=_die_with_parent,  # noqa: PLW1509
        )
        handle.close()
        self.starts += 1

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal_group(self, signum: int) -> None:
        """Send a signal to the whole process tree (the main process and its pool)."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signum)

    def pool_pids(self) -> list[int]:
        """The pool's child processes."""
        if self.process is None:
            return []
        out = subprocess.run(  # noqa: S603
            ["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True, check=False  # noqa: S607
        )
        return [int(pid) for pid in out.stdout.split()]

    def kill(self) -> None:
        """SIGKILL the whole tree, as a dying machine would, and reap it."""
        self.signal_group(signal.SIGCONT)
        self.signal_group(signal.SIGKILL)
        if self.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=10)

    def stop(self, grace: float = 20) -> None:
        """Warm shutdown (SIGTERM), then SIGKILL whatever is left of the tree."""
        if self.alive:
            self.signal_group(signal.SIGCONT)
            self.signal_group(signal.SIGTERM)
            deadline = time.monotonic() + grace
            while self.alive and time.monotonic() < deadline:
                time.sleep(0.1)
        self.kill()


def celery(*argv: str) -> list[str]:
    """The command line of `celery -A project <argv>` in this interpreter."""
    return [sys.executable, "-m", "celery", "-A", "project", *argv]
