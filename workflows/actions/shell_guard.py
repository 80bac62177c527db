"""Run a shell action's command so that it dies with the worker process that started it.

`python -I shell_guard.py -- <command> <args...>`, started by `workflows.actions.shell` in a
new session (the guard leads the process group its command and the command's children join).

A worker's pool process killed mid-task (SIGKILL, the OOM killer) used to leave its shell
command running: the node was relaunched after its lease, and two copies of one command ran at
once. The guard asks the kernel for SIGTERM when its parent (the pool process) dies
(PR_SET_PDEATHSIG, Linux) and answers it by SIGKILLing its whole process group: the command
and everything it started. Exit status: the command's (killed by a signal: the same signal).

Standard library only, run in isolated mode (-I): it is a file, not an import of the project.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
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


def main(argv: list[str]) -> int:
    """Run argv (after `--`) in this process group; its exit status, or re-raise the signal that killed it."""
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: shell_guard.py -- <command> [args...]\n")
        return 2
    parent = os.getppid()
    signal.signal(signal.SIGTERM, _on_parent_death)
    _die_with_parent(parent)
    try:
        child = subprocess.Popen(argv[2:], stdin=subprocess.DEVNULL, close_fds=True)  # noqa: S603 - the action's command
    except OSError as exc:
        sys.stderr.write(f"cannot be run: {exc.__class__.__name__}: {exc}\n")
        return CANNOT_RUN
    code = child.wait()
    if code < 0:  # killed by a signal: end the same way, so the worker sees which
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
