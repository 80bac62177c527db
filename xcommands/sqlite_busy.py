"""SQLite's write lock without starvation: waiters poll, and a draining worker lets them in.

SQLite (the embedded default) has one writer at a time. A connection that finds the write
lock taken calls its busy handler, and the one `busy_timeout` installs sleeps 1, 2, 5, 10,
15, 20, 25, 25, 25, 50, 50 and then 100 ms between tries. Behind a writer that commits and
begins again every millisecond or so (a hot key's drain), the waiter nearly always wakes to
find the lock taken again and soon sleeps 100 ms at a time: a cold key's enqueue, claim or
start then waits hundreds of milliseconds although the lock was free much of that time
(docs/adr/0025-hot-keys-on-sqlite.md has the figures).

Two parts fix it:

- The busy handler installed here tries again every `COMMAND_SQLITE_BUSY_POLL_US` (default
  200 microseconds; after 50 ms of waiting it slows down to at most 5 ms a try) for as long
  as the connection's timeout allows; once it has waited 2 ms it stamps, at every try, the
  time of its next try into a small file beside the database (`<db>-xcwait`). 0 keeps
  SQLite's own handler.
- A worker draining a key's backlog calls `yield_to_waiters` between two commands: while a
  recent stamp keeps moving, some writer is waiting, and the drain sleeps (at most a few
  milliseconds) until it stops moving, i.e. the waiter got the lock. The drain's next
  transaction then queues behind it instead of taking the lock again first.

Python's `sqlite3` module has no call to set a busy handler; the C function is called
through ctypes with the connection's `sqlite3 *`, which CPython keeps as the first field of
its connection object. That is checked before anything is installed (the pointer must name
the same database file through SQLite's own `sqlite3_db_filename`, and the library must be
the version the module reports); where a check fails, the connection keeps SQLite's own
handler with the same timeout and nothing else changes.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sqlite3
import struct
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings

log = logging.getLogger(__name__)

_BUSY_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int)
_STAMP = struct.Struct("d")
_waits = threading.local()
_lib: Any = None
_poll_seconds = 0.0002
# A waiter asks a draining writer to let it in only after waiting this long: behind one or
# two of the drain's transactions it gets the lock by polling, and two busy writers then
# keep taking turns a few commands at a time instead of handing the lock over every time.
_PATIENCE = 0.002
_LATE = 0.002  # a waiter this late for its next try may still be waiting (descheduled)


@dataclass(frozen=True)
class _Target:
    """What a waiting connection needs: its timeout, and the file where it says it is waiting."""

    timeout_ms: int
    fd: int


_targets: list[_Target] = []
_signals: dict[str, int] = {}  # database path -> descriptor of its "writer waiting" file
_registry_lock = threading.Lock()


def _library() -> Any:
    """The SQLite library that Python's sqlite3 module is linked with, or None."""
    global _lib
    if _lib is None:
        _lib = False
        if sys.implementation.name != "cpython":
            return None
        try:
            import _sqlite3  # noqa: PLC0415 - CPython's C module, looked for only on CPython

            lib = ctypes.CDLL(_sqlite3.__file__)  # its symbols include the linked libsqlite3's
            lib.sqlite3_busy_handler.argtypes = [ctypes.c_void_p, _BUSY_HANDLER, ctypes.c_void_p]
            lib.sqlite3_busy_handler.restype = ctypes.c_int
            lib.sqlite3_db_filename.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
            lib.sqlite3_db_filename.restype = ctypes.c_char_p
            lib.sqlite3_libversion.restype = ctypes.c_char_p
            if lib.sqlite3_libversion().decode() != sqlite3.sqlite_version:
                return None
        except (ImportError, OSError, AttributeError) as exc:
            log.debug("no SQLite busy handler: %s", exc)
            return None
        _lib = lib
    return _lib or None


def _signal_fd(database: str) -> int:
    """The open "writer waiting" file beside the database (created on first use)."""
    path = os.path.realpath(database)
    with _registry_lock:
        fd = _signals.get(path)
        if fd is None:
            fd = os.open(f"{path}-xcwait", os.O_RDWR | os.O_CREAT, 0o600)
            _signals[path] = fd
        return fd


def _target(timeout_ms: int, fd: int) -> int:
    """The index (1-based; the C callback's argument) of this timeout and file."""
    wanted = _Target(timeout_ms, fd)
    with _registry_lock:
        if wanted not in _targets:
            _targets.append(wanted)
        return _targets.index(wanted) + 1


def _poll(arg: int | None, count: int) -> int:
    """SQLite's busy callback: 1 to try again after a short sleep, 0 to give up (SQLITE_BUSY)."""
    now = time.monotonic()
    target = _targets[(arg or 1) - 1]
    if count == 0 or not hasattr(_waits, "since"):
        _waits.since = now
    if (now - _waits.since) * 1000 >= target.timeout_ms:
        return 0
    # Poll fast for a while; behind a long transaction, slow down to at most 5 ms a try
    # (still twenty times finer than SQLite's 100 ms) to spare the CPU.
    waited = now - _waits.since
    delay = _poll_seconds if waited < 0.05 else min(0.005, max(_poll_seconds, waited / 20))
    if waited >= _PATIENCE:
        try:  # tell a writer that runs transactions back to back when we try again
            os.pwrite(target.fd, _STAMP.pack(now + delay), 0)
        except OSError:
            pass
    time.sleep(delay)
    return 1


_HANDLER = _BUSY_HANDLER(_poll)  # module level: lives as long as any connection may call it


def _handle(raw: sqlite3.Connection) -> int | None:
    """The `sqlite3 *` of a Python SQLite connection (CPython: first field after the object header)."""
    address = ctypes.c_void_p.from_address(id(raw) + object.__basicsize__).value
    return address or None


def install(raw: sqlite3.Connection, database: str, timeout_ms: int, poll_ms: float) -> bool:
    """Make the connection poll every `poll_ms` for up to `timeout_ms` when the database is locked.

    True when installed; False (the caller keeps SQLite's own handler) when `poll_ms` is 0
    or this interpreter's layout cannot be confirmed.
    """
    global _poll_seconds
    lib = _library()
    if lib is None or poll_ms <= 0 or not isinstance(raw, sqlite3.Connection):
        return False
    handle = _handle(raw)
    if handle is None:
        return False
    name = lib.sqlite3_db_filename(handle, b"main")
    if not name or os.path.realpath(name.decode()) != os.path.realpath(database):
        log.debug("SQLite busy handler not installed: the connection's handle could not be confirmed")
        return False
    try:
        fd = _signal_fd(database)
    except OSError:  # a read-only directory: poll all the same, without telling anyone
        fd = -1
    _poll_seconds = poll_ms / 1000
    arg = _target(max(1, timeout_ms), fd)
    return int(lib.sqlite3_busy_handler(handle, _HANDLER, ctypes.c_void_p(arg))) == 0


def _poll_ms() -> float:
    return int(settings.COMMAND_SQLITE_BUSY_POLL_US) / 1000


def set_timeout(connection: Any, timeout_ms: int) -> None:
    """Let this Django SQLite connection wait up to `timeout_ms` for the write lock, polling if possible."""
    connection.ensure_connection()
    if not install(connection.connection, connection.settings_dict["NAME"], timeout_ms, _poll_ms()):
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA busy_timeout = {int(timeout_ms)}")


def on_connection_created(sender: Any, connection: Any, **kwargs: Any) -> None:
    """Django's `connection_created`: install the polling handler on every new SQLite connection.

    The timeout stays the one the connection was configured with (`PRAGMA busy_timeout`,
    e.g. from DATABASE_URL's init command); only the waiting within it changes.
    """
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout")
        row = cursor.fetchone()
    timeout_ms = int(row[0]) if row else 0
    if timeout_ms > 0:
        set_timeout(connection, timeout_ms)


def _stamp(fd: int) -> float | None:
    try:
        data = os.pread(fd, _STAMP.size, 0)
    except OSError:
        return None
    return _STAMP.unpack(data)[0] if len(data) == _STAMP.size else None


def yield_to_waiters(connection: Any, most_ms: float = 5.0) -> float:
    """Between two transactions of a writer that runs them back to back: let waiting writers in.

    A waiting connection's busy handler stamps when it tries again. While that time is
    ahead (or only `_LATE` behind: a waiter may be descheduled for a moment on a busy
    machine), sleep past it; when the waiter stamped again it is still waiting (someone else
    got the lock), so go on sleeping; when it did not, it got the lock, and this writer's
    next transaction queues behind it. At most `most_ms`. Returns the seconds slept.
    """
    if connection.vendor != "sqlite":
        return 0.0
    with _registry_lock:
        fd = _signals.get(os.path.realpath(connection.settings_dict["NAME"]))
    if fd is None:
        return 0.0
    started = time.monotonic()
    due = _stamp(fd)
    if due is None or started > due + _LATE:
        return 0.0
    most = most_ms / 1000
    while True:
        now = time.monotonic()
        if now - started >= most:
            return now - started
        time.sleep(min(max(0.0, due - now) + _poll_seconds, most - (now - started)))
        following = _stamp(fd)
        if following is None or following <= due:
            return time.monotonic() - started
        due = following
