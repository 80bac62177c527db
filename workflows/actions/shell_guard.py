"""Run a shell action's command so that it dies with the worker process that started it.

`python -I shell_guard.py [--stopped-limit SECONDS] [--keep-stdin] -- <command> <args...>`, started by
`workflows.actions.shell` (and `workflows.actions.ssh`) in a new session (the guard leads the process group its command and
the command's children join).

A worker's pool process killed mid-task (SIGKILL, the OOM killer) used to leave its shell
command running: the node was relaunched after its lease, and two copies of one command ran at
once. The guard asks the kernel for SIGTERM when its parent (the pool process) dies
(PR_SET_PDEATHSIG, Linux) and answers it by SIGKILLing its whole process group: the command
and everything it started. Exit status: the command's (killed by a signal: the same signal).

A pool process that is stopped (SIGSTOP, a frozen host or container) renews nothing: after its
lease the node runs again elsewhere, while the command, in a session of its own, would go on.
With `--stopped-limit`, the guard looks at its parent twice a second and kills its group once
the parent has been stopped that long (the node's lease). Work whose lease was lost while the
pool process ran (a database cut off) is stopped by the pool process itself (shell.py).

With `--keep-stdin` the command reads the guard's standard input (the ssh action's client
keeps its connection's stdin open that way: its remote end stops the command when it closes);
otherwise /dev/null.

Standard library only, run in isolated mode (-I): it is a file, not an import of the project.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from types import FrameType

PR_SET_PDEATHSIG = 1
CANNOT_RUN = 127


def _die_with_parent(expected_parent: int) -> None:
    """SIGTERM to this process when its parent dies; exit now if it died before the request took effect."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != expected_parent:
        _kill_group_and_exit()


def _kill_group_and_exit() -> None:
    """SIGKILL the guard's process group (its command, the command's children, the guard itself)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(os.getpgrp(), signal.SIGKILL)
    os._exit(128 + signal.SIGKILL)


def _on_parent_death(signum: int, frame: FrameType | None) -> None:
    _kill_group_and_exit()


def _stopped(pid: int) -> bool:
    """Whether the process is stopped (state T or t in /proc); False when that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    # pid (comm) state ...: comm may hold spaces and parentheses, the state follows the last ")".
    return stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] in (b"T", b"t")


def _wait(child: subprocess.Popen[bytes], parent: int, stopped_limit: float) -> int:
    """The child's exit code; the group is killed once the parent has been stopped for `stopped_limit`."""
    if stopped_limit <= 0:
        return child.wait()
    stopped_since: float | None = None
    while True:
        try:
            return child.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            pass
        if not _stopped(parent):
            stopped_since = None
        elif stopped_since is None:
            stopped_since = time.monotonic()
        elif time.monotonic() - stopped_since >= stopped_limit:
            sys.stderr.write(f"shell_guard: the worker process {parent} has been stopped for {stopped_limit:g} s "
                             "(its lease has lapsed): killing the command\n")
            _kill_group_and_exit()


def main(argv: list[str]) -> int:
    """Run argv (after `--`) in this process group; its exit status, or re-raise the signal that killed it."""
    stopped_limit = 0.0
    if len(argv) >= 3 and argv[1] == "--stopped-limit":
        try:
            stopped_limit = float(argv[2])
        except ValueError:
            stopped_limit = -1.0
        argv = [argv[0], *argv[3:]]
    keep_stdin = len(argv) >= 2 and argv[1] == "--keep-stdin"
    if keep_stdin:
        argv = [argv[0], *argv[2:]]
    if len(argv) < 3 or argv[1] != "--" or stopped_limit < 0:
        sys.stderr.write("usage: shell_guard.py [--stopped-limit SECONDS] [--keep-stdin] -- <command> [args...]\n")
        return 2
    parent = os.getppid()
    signal.signal(signal.SIGTERM, _on_parent_death)
    _die_with_parent(parent)
    try:
        child = subprocess.Popen(  # noqa: S603 - the action's command
            argv[2:], stdin=None if keep_stdin else subprocess.DEVNULL, close_fds=True,
        )
    except OSError as exc:
        sys.stderr.write(f"cannot be run: {exc.__class__.__name__}: {exc}\n")
        return CANNOT_RUN
    code = _wait(child, parent, stopped_limit)
    if code < 0:  # killed by a signal: end the same way, so the worker sees which
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
