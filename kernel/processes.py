"""Processes of this machine: whether one is gone (for work whose owner died on this host)."""

from __future__ import annotations

import os


def is_gone(pid: int) -> bool:
    """Whether no live process has this pid here (a zombie waiting for its reaper counts as gone).

    Errs on the side of alive: a pid we may not signal (another user's) is taken as alive, so
    a caller falls back to waiting for the lease.
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] == "Z"
    except OSError:
        return False


def owner_pid(owner: str, host: str) -> int | None:
    """The pid of a `host:pid` lease owner when it is on `host` (this machine or worker), else None."""
    name, _, pid = owner.rpartition(":")
    if name != host or not pid.isdigit():
        return None
    return int(pid)
