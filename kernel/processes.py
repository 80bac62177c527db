"""Processes of this machine: who this worker is, and whether a process is gone (for work whose owner died here).

A lease owner is `<node>:<pid>`: the Celery node name this process belongs to (`w1@host`, as
Flower names the worker; the host's name outside a worker) and its pid. Pids are per machine,
so two owners are on the same machine when their names end in the same host.
"""

from __future__ import annotations

import os
import socket

_NODE_NAME = ""


def set_node_name(name: str) -> None:
    """Remember this worker's Celery node name (celeryd_init, before the pool forks: children inherit it)."""
    global _NODE_NAME
    _NODE_NAME = name


def node_name() -> str:
    """This process's Celery node name as Flower shows it (`w1@host`), or the host's name outside a worker."""
    return _NODE_NAME or socket.gethostname()


def machine_of(name: str) -> str:
    """The host a node name runs on: `w1@host` -> `host`; a bare host name is itself."""
    return name.rpartition("@")[2]


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


def owner_pid(owner: str, here: str) -> int | None:
    """The pid of a `<node>:<pid>` lease owner when it runs on the machine `here` names (a node name or
    a host name), else None."""
    name, _, pid = owner.rpartition(":")
    if not name or machine_of(name) != machine_of(here) or not pid.isdigit():
        return None
    return int(pid)
