"""The engine's guarantees with real worker processes, a real Redis and celery beat.

Every command traces its start and end (time and pid) into Redis, so order and overlap are
checked across processes; database effects are counted as marker commands.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from django.db import connection, transaction
from django.test import override_settings

import tests.xcommands.commands  # noqa: F401 - registers the tasks in this process too
from project.celery import app
from project.launcher import free_port
from tests.support.celery_app import point_celery_at
from tests.support.processes import WorkerProcess, wait_until
from xcommands.choices import TERMINAL_STATUSES, CommandStatus
from xcommands.keyed import enqueue_job
from xcommands.models import Command
from xcommands.queue import enqueue

from .commands import TraceXCommand, read_trace

pytestmark = pytest.mark.integration

LEASE = 3
SWEEP = 1
ENGINE_ENV = {
    "EXTRA_TASK_MODULES": "tests.xcommands.commands",
    "COMMAND_LEASE_SECONDS": str(LEASE),
    "COMMAND_SWEEP_SECONDS": str(SWEEP),
    "COMMAND_RING_STALE_SECONDS": "2",
}


@pytest.fixture
def rclient(celery_to_test_redis: str) -> Iterator[redis.Redis]:
    """Client of the test Redis; this process's settings point there too."""
    with override_settings(
        REDIS_URL=celery_to_test_redis,
        COMMAND_LEASE_SECONDS=LEASE,
        COMMAND_RING_STALE_SECONDS=int(ENGINE_ENV["COMMAND_RING_STALE_SECONDS"]),
    ):
        yield redis.Redis.from_url(celery_to_test_redis)


def worker(live_workers: Callable[..., WorkerProcess], name: str, concurrency: int = 2) -> WorkerProcess:
    return live_workers(name=name, concurrency=concurrency, **ENGINE_ENV)


def wait_done(rows: list[Command], timeout: float = 60, parked_ok: bool = False) -> None:
    ids = [row.pk for row in rows]
    done = set(TERMINAL_STATUSES) | ({CommandStatus.PARKED} if parked_ok else set())

    def finished() -> bool:
        return Command.objects.filter(pk__in=ids, status__in=done).count() == len(ids)

    try:
        wait_until(finished, timeout, f"{len(ids)} commands to finish", interval=0.1)
    except AssertionError:
        states = list(Command.objects.filter(pk__in=ids).values_list("pk", "status", "last_error"))
        raise AssertionError(f"not finished: {states}") from None


def spans(trace: list[dict[str, Any]]) -> list[tuple[str, float, float, int]]:
    """(label, start, end, pid) of every completed run, in start order."""
    starts: dict[str, dict[str, Any]] = {}
    out = []
    for event in trace:
        if event["event"] == "start":
            starts[event["label"]] = event
        elif event["event"] == "end":
            begun = starts[event["label"]]
            out.append((event["label"], begun["t"], event["t"], begun["pid"]))
    return sorted(out, key=lambda item: item[1])


def counter(client: redis.Redis, name: str) -> int:
    """An integer Redis counter written by the test commands (0 when unset)."""
    value = client.get(name)
    return int(value) if value is not None else 0


def effects(label: str) -> int:
    return Command.objects.filter(key=f"effects:{label}").count()


def test_same_key_is_serial_and_fifo_across_two_workers(
    live_workers: Callable[..., WorkerProcess], rclient: redis.Redis
) -> None:
    """Two worker processes of concurrency 2: one key's commands start in enqueue order, never overlapping.

    Which worker takes which command is up to Redis; to show deterministically that a key is not
    pinned to a worker, the worker that ran the key's last command is then stopped and the key's
    next commands are run by the other one, still in order."""
    workers = [worker(live_workers, "w1"), worker(live_workers, "w2")]
    rows = []
    for i in range(16):
        rows.append(enqueue(TraceXCommand(key="serial", label=f"s{i:02d}", sleep=0.05, transactional=False)))
        rows.append(enqueue(TraceXCommand(key=f"noise-{i % 4}", label=f"n{i:02d}", sleep=0.02, transactional=False)))
    wait_done(rows)
    runs = spans(read_trace(rclient, "serial"))
    assert [label for label, *_ in runs] == [f"s{i:02d}" for i in range(16)]
    for (_, _, end, _), (label, start, _, _) in zip(runs, runs[1:], strict=False):
        assert start >= end, f"{label} started before its predecessor ended"

    last_pid = runs[-1][3]
    served = next(w for w in workers if last_pid in w.pool_pids())
    other = next(w for w in workers if w is not served)
    served.stop()
    more = [enqueue(TraceXCommand(key="serial", label=f"s{i:02d}", sleep=0.02, transactional=False)) for i in range(16, 20)]
    wait_done(more)
    runs = spans(read_trace(rclient, "serial"))
    assert [label for label, *_ in runs] == [f"s{i:02d}" for i in range(20)]
    assert {pid for *_, pid in runs[16:]} <= set(other.pool_pids()), "the remaining worker should serve the key"
    assert len({pid for *_, pid in runs}) >= 2, "both workers should have served the key"


def test_different_keys_run_in_parallel(
    live_workers: Callable[..., WorkerProcess], rclient: redis.Redis
) -> None:
    """Commands of different keys overlap in time when workers are free."""
    worker(live_workers, "w1")
    worker(live_workers, "w2")
    rows = [enqueue(TraceXCommand(key=f"par-{i}", label=f"p{i}", sleep=1.0, transactional=False)) for i in range(4)]
    wait_done(rows)
    runs = [spans(read_trace(rclient, f"par-{i}"))[0] for i in range(4)]
    overlapping = max(
        sum(1 for _, s, e, _ in runs if s <= t < e) for _, t, _, _ in runs
    )
    assert overlapping >= 3, f"expected parallel runs, got at most {overlapping} at once"


def test_retries_backoff_then_rollback_once_and_double_fault(
    live_workers: Callable[..., WorkerProcess], live_beat: Callable[..., WorkerProcess], rclient: redis.Redis
) -> None:
    """Real workers: transient failures retry after a stored backoff; exhausted retries roll back once; a failing rollback parks."""
    worker(live_workers, "w1")
    live_beat(**ENGINE_ENV)
    flaky = enqueue(TraceXCommand(key="r1", label="flaky", fail_times=2, transactional=False))
    doomed = enqueue(TraceXCommand(key="r2", label="doomed", fail_times=99, transactional=False))
    double = enqueue(
        TraceXCommand(key="r3", label="double", fail_times=1, fail_kind="permanent", rollback_fails=True)
    )
    behind_double = enqueue(TraceXCommand(key="r3", label="behind"))
    wait_done([flaky, doomed, double], timeout=60, parked_ok=True)
    flaky.refresh_from_db()
    assert (flaky.status, flaky.attempts) == (CommandStatus.SUCCEEDED, 3)
    starts = [e["t"] for e in read_trace(rclient, "r1") if e["event"] == "start"]
    assert len(starts) == 3
    # Backoff ceilings 0.2 s then 0.4 s, at least half of each.
    assert starts[1] - starts[0] >= 0.1
    assert starts[2] - starts[1] >= 0.2
    doomed.refresh_from_db()
    assert (doomed.status, doomed.attempts) == (CommandStatus.FAILED, 4)
    assert counter(rclient, "rollbacks:doomed") == 1
    double.refresh_from_db()
    assert double.status == CommandStatus.PARKED
    assert "double fault" in double.last_error
    time.sleep(SWEEP * 2)
    behind_double.refresh_from_db()
    assert behind_double.status == CommandStatus.PENDING  # the key stays blocked


def test_sigkill_mid_command_completes_later_exactly_once(
    live_workers: Callable[..., WorkerProcess], live_beat: Callable[..., WorkerProcess], rclient: redis.Redis
) -> None:
    """A worker SIGKILLed mid-command: another finishes it after lease + sweep; the effect commits once."""
    victim = worker(live_workers, "victim", concurrency=1)
    row = enqueue(TraceXCommand(key="kill", label="k1", sleep=2.0))
    follower = enqueue(TraceXCommand(key="kill", label="k2"))
    wait_until(lambda: any(e["event"] == "start" for e in read_trace(rclient, "kill")), 30, "k1 to start")
    victim.signal_group(signal.SIGKILL)
    killed_at = time.time()
    worker(live_workers, "rescuer", concurrency=1)
    live_beat(**ENGINE_ENV)
    wait_done([row, follower], timeout=60)
    row.refresh_from_db()
    assert row.status == CommandStatus.SUCCEEDED
    assert effects("k1") == 1
    assert any(h["outcome"] == "lease expired" for h in row.history)
    runs = spans(read_trace(rclient, "kill"))
    assert [label for label, *_ in runs] == ["k1", "k2"]
    finished = runs[0][2]
    # Stuck no longer than lease + sweep interval, plus process start-up and the rerun itself.
    assert finished - killed_at <= LEASE + SWEEP + 2.0 + 8.0


def test_flushall_loses_nothing(
    live_workers: Callable[..., WorkerProcess], live_beat: Callable[..., WorkerProcess], rclient: redis.Redis
) -> None:
    """Redis loses every doorbell (FLUSHALL) under a live worker: the sweep re-rings, all run."""
    worker(live_workers, "w1", concurrency=1)
    blocker = enqueue(TraceXCommand(key="flush-block", label="blocker", sleep=2.0, transactional=False))
    wait_until(lambda: bool(read_trace(rclient, "flush-block")), 30, "the blocker to start")
    rows = [enqueue(TraceXCommand(key=f"flush-{i % 5}", label=f"f{i}", transactional=False)) for i in range(20)]
    assert rclient.llen("commands") > 0
    rclient.flushall()  # the waiting doorbells are gone; the worker keeps running
    live_beat(**ENGINE_ENV)
    flushed = time.time()
    wait_done([blocker, *rows], timeout=60)
    first_starts = [read_trace(rclient, f"flush-{i}")[0]["t"] - flushed for i in range(5)]
    # Lost doorbells are rung again once stale (2 s) by a sweep (every 1 s), plus the blocker.
    assert max(first_starts) < 2.0 + SWEEP + 2.0 + 3.0
    assert Command.objects.filter(pk__in=[r.pk for r in rows], status=CommandStatus.SUCCEEDED).count() == 20


def test_sigstopped_worker_past_its_lease_cannot_commit(
    live_workers: Callable[..., WorkerProcess], live_beat: Callable[..., WorkerProcess], rclient: redis.Redis
) -> None:
    """A paused worker whose lease expired resumes after another finished the command: its result is refused."""
    # On SQLite a transaction holds the single write lock, so a paused transactional command
    # would freeze every writer; the test uses a non-transactional command there.
    transactional = connection.vendor != "sqlite"
    zombie = worker(live_workers, "zombie", concurrency=1)
    row = enqueue(TraceXCommand(key="stop", label="z1", sleep=2.0, transactional=transactional))
    wait_until(lambda: any(e["event"] == "start" for e in read_trace(rclient, "stop")), 30, "z1 to start")
    zombie_pid = read_trace(rclient, "stop")[0]["pid"]
    zombie.signal_group(signal.SIGSTOP)
    try:
        worker(live_workers, "rescuer", concurrency=1)
        live_beat(**ENGINE_ENV)
        wait_done([row], timeout=60)
    finally:
        zombie.signal_group(signal.SIGCONT)
    row.refresh_from_db()
    assert row.status == CommandStatus.SUCCEEDED
    assert row.result is not None and row.result["pid"] != zombie_pid
    wait_until(lambda: "lease lost" in zombie.log(), 30, "the zombie to be fenced out")
    time.sleep(0.5)
    row.refresh_from_db()
    assert row.result is not None and row.result["pid"] != zombie_pid  # the zombie's completion was refused
    assert sum(1 for h in row.history if h["outcome"] == "SUCCEEDED") == 1
    if transactional:
        assert effects("z1") == 1


def test_enqueue_in_rolled_back_transaction_never_runs(
    live_workers: Callable[..., WorkerProcess], live_beat: Callable[..., WorkerProcess], rclient: redis.Redis
) -> None:
    """Commands enqueued in a transaction that rolls back never run, even after sweeps."""
    worker(live_workers, "w1")
    live_beat(**ENGINE_ENV)
    with pytest.raises(RuntimeError), transaction.atomic():
        enqueue(TraceXCommand(key="ghost", label="ghost"))
        raise RuntimeError("the caller's transaction fails")
    sentinel = enqueue(TraceXCommand(key="ghost", label="sentinel"))
    wait_done([sentinel])
    time.sleep(SWEEP * 3)
    assert [e["label"] for e in read_trace(rclient, "ghost")] == ["sentinel", "sentinel"]


def test_commands_committed_while_redis_is_down_run_once_it_is_back(
    live_workers: Callable[..., WorkerProcess], live_beat: Callable[..., WorkerProcess], rclient: redis.Redis
) -> None:
    """Enqueue commits even when the doorbell cannot be sent; the sweep rings it later and it runs."""
    point_celery_at(app, f"redis://127.0.0.1:{free_port()}/0", f"redis://127.0.0.1:{free_port()}/0")
    rows = []
    try:
        for i in range(4):
            started = time.monotonic()
            rows.append(enqueue(TraceXCommand(key=f"down-{i % 2}", label=f"d{i}", transactional=False)))
            assert time.monotonic() - started < 5, "a dead broker must not hang the caller"
    finally:
        point_celery_at(app, _url(rclient), _url(rclient))
    assert rclient.llen("commands") == 0  # no doorbell reached Redis
    assert Command.objects.filter(pk__in=[r.pk for r in rows], status=CommandStatus.PENDING).count() == 4
    worker(live_workers, "w1")
    live_beat(**ENGINE_ENV)
    wait_done(rows, timeout=60)
    for key, labels in (("down-0", ["d0", "d2"]), ("down-1", ["d1", "d3"])):
        assert [label for label, *_ in spans(read_trace(rclient, key))] == labels


def _url(client: redis.Redis) -> str:
    kwargs = client.connection_pool.connection_kwargs
    return f"redis://{kwargs['host']}:{kwargs['port']}/{kwargs.get('db', 0)}"


def test_heartbeats_keep_a_long_command_leased(
    live_workers: Callable[..., WorkerProcess], live_beat: Callable[..., WorkerProcess], rclient: redis.Redis
) -> None:
    """A live worker renews its lease: a command running three leases long is never taken over."""
    # SQLite: a transactional command holds the only write lock, so nothing (not even its
    # heartbeat) could write meanwhile; there the long command runs outside a transaction.
    transactional = connection.vendor != "sqlite"
    worker(live_workers, "w1")
    live_beat(**ENGINE_ENV)
    row = enqueue(TraceXCommand(key="long", label="long", sleep=3 * LEASE, transactional=transactional))
    wait_done([row], timeout=60)
    row.refresh_from_db()
    assert (row.status, row.attempts) == (CommandStatus.SUCCEEDED, 1)
    assert [h["outcome"] for h in row.history] == ["SUCCEEDED"]  # no "lease expired"
    assert [e["event"] for e in read_trace(rclient, "long")] == ["start", "end"]
    assert effects("long") == 1


def test_a_hot_key_backlog_does_not_delay_other_keys(
    live_workers: Callable[..., WorkerProcess], rclient: redis.Redis
) -> None:
    """Fairness: cold keys enqueued behind a 150-command backlog on one key start at once."""
    worker(live_workers, "w1")
    with transaction.atomic():
        hot = [
            enqueue(TraceXCommand(key="hot", label=f"h{i:03d}", sleep=0.02, transactional=False, effect=False))
            for i in range(150)
        ]
    wait_until(lambda: bool(read_trace(rclient, "hot")), 30, "the hot key to start")
    enqueued_at = time.time()
    cold = [enqueue(TraceXCommand(key=f"cold-{i}", label=f"c{i}", effect=False)) for i in range(10)]
    wait_done(cold, timeout=60)
    hot_left = Command.objects.filter(pk__in=[r.pk for r in hot], status=CommandStatus.PENDING).count()
    assert hot_left >= 50, f"the cold keys waited for the hot backlog ({hot_left} hot commands left)"
    waits = [spans(read_trace(rclient, f"cold-{i}"))[0][1] - enqueued_at for i in range(10)]
    assert max(waits) < 3.0, waits
    wait_done(hot, timeout=120)
    runs = spans(read_trace(rclient, "hot"))
    assert [label for label, *_ in runs] == [f"h{i:03d}" for i in range(150)]
    assert all(b[1] >= a[2] for a, b in zip(runs, runs[1:], strict=False))


def test_keyed_jobs_run_named_tasks_in_order_with_retries_and_rollback(
    live_workers: Callable[..., WorkerProcess], live_beat: Callable[..., WorkerProcess], rclient: redis.Redis
) -> None:
    """enqueue_job runs Celery tasks per key in FIFO order, retrying and rolling back as asked."""
    worker(live_workers, "w1")
    live_beat(**ENGINE_ENV)
    jobs = [
        enqueue_job("acct-1", "actions.tests.append", kwargs={"key": "acct-1", "label": f"j{i}"})
        for i in range(5)
    ]
    flaky = enqueue_job(
        "acct-2", "actions.tests.append", kwargs={"key": "acct-2", "label": "flaky", "fail_times": 1},
        max_retries=2,
    )
    broken = enqueue_job(
        "acct-3", "actions.tests.append", kwargs={"key": "acct-3", "label": "broken", "fail_times": 9},
        max_retries=1, rollback_task="actions.tests.undo",
    )
    wait_done([*jobs, flaky, broken], timeout=60)
    assert [x.decode() if isinstance(x, bytes) else x for x in rclient.lrange("appended:acct-1", 0, -1)] == [f"j{i}" for i in range(5)]
    flaky.refresh_from_db()
    assert (flaky.status, flaky.attempts, flaky.result) == (CommandStatus.SUCCEEDED, 2, "flaky")
    broken.refresh_from_db()
    assert (broken.status, broken.attempts) == (CommandStatus.FAILED, 2)
    assert counter(rclient, "rollbacks:broken") == 1
