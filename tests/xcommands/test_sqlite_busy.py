"""SQLite's write lock: waiters poll within their timeout, and a draining writer lets them in first.

The unit tests use plain sqlite3 connections on a file of their own, so they run whatever
the configured database is; the last ones check what the engine and Django connections do.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import redis
from django.db import connection
from django.test import override_settings

from xcommands import engine, sqlite_busy
from xcommands.choices import CommandStatus
from xcommands.models import Command
from xcommands.queue import enqueue

from .commands import TraceXCommand

cpython_only = pytest.mark.skipif(sys.implementation.name != "cpython", reason="the handler needs CPython's layout")


def _connect(path: Path, *, poll_ms: float | None = 0.2, timeout_ms: int = 5000) -> sqlite3.Connection:
    raw = sqlite3.connect(str(path), timeout=timeout_ms / 1000, isolation_level=None, check_same_thread=False)
    raw.execute("PRAGMA journal_mode=WAL")
    if poll_ms is not None:
        assert sqlite_busy.install(raw, str(path), timeout_ms, poll_ms)
    return raw


@pytest.fixture
def db_file(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "busy.sqlite3"
    setup = _connect(path, poll_ms=None)
    setup.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)")
    setup.execute("INSERT INTO t VALUES (1, 0)")
    setup.close()
    yield path


def _hold_lock(path: Path, seconds: float, released: list[float]) -> threading.Thread:
    """A thread that takes the write lock, keeps it `seconds`, and records when it let go."""
    holder = _connect(path, poll_ms=None)
    holder.execute("BEGIN IMMEDIATE")

    def run() -> None:
        time.sleep(seconds)
        holder.execute("COMMIT")
        released.append(time.monotonic())
        holder.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


@cpython_only
def test_a_waiter_takes_the_lock_right_after_it_is_released(db_file: Path) -> None:
    """SQLite's own handler would sleep up to 100 ms at a time here; the polling one tries every 0.2 ms."""
    waiter = _connect(db_file)
    assert waiter.execute("PRAGMA busy_timeout").fetchone() == (0,)  # SQLite's own handler was replaced
    released: list[float] = []
    thread = _hold_lock(db_file, 0.35, released)
    waiter.execute("BEGIN IMMEDIATE")
    acquired = time.monotonic()
    waiter.execute("UPDATE t SET v = v + 1")
    waiter.execute("COMMIT")
    thread.join()
    # SQLite's own handler tries at 328 ms, then sleeps 100 ms: it would be 78 ms late here.
    assert 0 <= acquired - released[0] < 0.04


@cpython_only
def test_the_timeout_still_ends_the_wait(db_file: Path) -> None:
    """Past its timeout a waiter gets "database is locked", as with SQLite's own handler."""
    waiter = _connect(db_file, timeout_ms=150)
    released: list[float] = []
    thread = _hold_lock(db_file, 1.0, released)
    started = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        waiter.execute("BEGIN IMMEDIATE")
    waited = time.monotonic() - started
    thread.join()
    assert 0.15 <= waited < 0.9
    waiter.execute("BEGIN IMMEDIATE")  # and it works again once the lock is free
    waiter.execute("COMMIT")


@cpython_only
def test_a_draining_writer_yields_while_someone_waits(db_file: Path) -> None:
    """yield_to_waiters sleeps while a writer has waited a while, and returns at once when nobody waits."""
    django_like = SimpleNamespace(vendor="sqlite", settings_dict={"NAME": str(db_file)})
    drainer = _connect(db_file)
    assert sqlite_busy.yield_to_waiters(django_like) == 0.0  # nobody ever waited
    drainer.execute("BEGIN IMMEDIATE")
    waiter = _connect(db_file)
    got: list[float] = []

    def wait_for_lock() -> None:
        waiter.execute("BEGIN IMMEDIATE")
        got.append(time.monotonic())
        waiter.execute("COMMIT")

    thread = threading.Thread(target=wait_for_lock)
    thread.start()
    # The waiter stamps its next try once it has waited 2 ms; a drainer between two
    # transactions then sleeps (here it holds the lock itself, so the waiter keeps waiting).
    slept, deadline = 0.0, time.monotonic() + 2
    while not slept and time.monotonic() < deadline:
        slept = sqlite_busy.yield_to_waiters(django_like, most_ms=20)
    assert slept > 0
    assert not got
    drainer.execute("COMMIT")
    thread.join()
    assert got
    time.sleep(0.01)
    assert sqlite_busy.yield_to_waiters(django_like) == 0.0  # the waiter got in: nobody waits now


@cpython_only
def test_a_handle_that_cannot_be_confirmed_is_left_alone(db_file: Path, tmp_path: Path) -> None:
    """install() checks the handle against the database's file name; on a mismatch SQLite's handler stays."""
    raw = _connect(db_file, poll_ms=None, timeout_ms=1234)
    assert not sqlite_busy.install(raw, str(tmp_path / "another.sqlite3"), 5000, 0.2)
    assert raw.execute("PRAGMA busy_timeout").fetchone() == (1234,)
    assert not sqlite_busy.install(raw, str(db_file), 5000, 0)  # 0: SQLite's own handler
    assert raw.execute("PRAGMA busy_timeout").fetchone() == (1234,)


def test_postgresql_connections_never_yield() -> None:
    """Only SQLite has the single writer: other databases pass straight through."""
    assert sqlite_busy.yield_to_waiters(SimpleNamespace(vendor="postgresql", settings_dict={"NAME": "x"})) == 0.0


@pytest.mark.database
@pytest.mark.django_db(transaction=True)
def test_django_sqlite_connections_poll_within_their_configured_timeout() -> None:
    """Every SQLite connection Django opens gets the handler, with the timeout its settings give."""
    if connection.vendor != "sqlite" or sys.implementation.name != "cpython":
        pytest.skip("SQLite on CPython only")
    connection.close()
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout")
        assert cursor.fetchone() == (0,)  # replaced by the polling handler
    assert any(target.timeout_ms == 30_000 for target in sqlite_busy._targets)  # DATABASE_URL's init command


@pytest.mark.database
@pytest.mark.django_db(transaction=True)
def test_a_drain_offers_the_lock_between_commands(
    celery_to_test_redis: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between two drained commands (never after the last one) the worker lets waiting writers in."""
    redis_url = celery_to_test_redis
    offered: list[str] = []

    def record(conn: object, most_ms: float = 5.0) -> float:
        statuses = sorted(Command.objects.filter(key="yield").values_list("status", flat=True))
        offered.append(",".join(statuses))
        return 0.0

    monkeypatch.setattr(engine, "yield_to_waiters", record)
    rows = [enqueue(TraceXCommand(key="yield", label=f"y{i}", effect=False)) for i in range(3)]
    broker = redis.Redis.from_url(redis_url)
    broker.delete("commands")  # the first one's doorbell
    with override_settings(REDIS_URL=redis_url, COMMAND_DRAIN_MAX=10, COMMAND_DRAIN_QUANTUM_MS=10_000):
        assert engine.process(rows[0].pk) == "succeeded"
    # Offered twice, each time with the next command already leased (nobody else can take it).
    assert len(offered) == 2
    assert all(CommandStatus.RUNNING in entry for entry in offered)
    assert [status for _pk, status in sorted(Command.objects.filter(key="yield").values_list("pk", "status"))] == [
        CommandStatus.SUCCEEDED
    ] * 3
    assert broker.llen("commands") == 0  # drained, not rung
