"""The command engine in one process: head-of-key claims, outcomes, retries, rollback, fencing.

The worker-level guarantees (several processes, SIGKILL, Redis loss) are in test_integration.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.db import connection, transaction
from django.test import override_settings
from django.utils import timezone

import xcommands
from kernel import sqlbatch
from project.celery import app
from tests.support.celery_app import point_celery_at
from xcommands import base, engine, keyed, operations, queue
from xcommands.base import XCommand, registered_command
from xcommands.choices import TRANSITIONS, CommandStatus
from xcommands.errors import IllegalCommandTransition, TransientError, UnknownCommand
from xcommands.models import Command
from xcommands.queue import enqueue, enqueue_many
from xcommands.recovery import purge_finished, sweep

from .commands import MarkerXCommand, TraceXCommand, read_trace

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def traces(redis_url: str) -> Iterator[redis.Redis]:
    """Traces go to the private Redis; doorbells too (no worker listens here)."""
    old = (app.conf.broker_url, app.conf.result_backend)
    point_celery_at(app, redis_url, redis_url)
    # One command per process() call unless a test asks for the drain (see its own test).
    with override_settings(REDIS_URL=redis_url, COMMAND_DRAIN_MAX=1):
        yield redis.Redis.from_url(redis_url)
    point_celery_at(app, *old)


def status_of(row: Command) -> str:
    row.refresh_from_db()
    return row.status


def counter(client: redis.Redis, name: str) -> int:
    """An integer Redis counter written by the test commands (0 when unset)."""
    value = client.get(name)
    return int(value) if value is not None else 0


def effects(label: str) -> int:
    return Command.objects.filter(key=f"effects:{label}").count()


def test_transitions_table_is_closed_over_statuses() -> None:
    """Every status has a row, every target is a status, terminal statuses lead nowhere."""
    assert set(TRANSITIONS) == set(CommandStatus.values)
    for targets in TRANSITIONS.values():
        assert targets <= set(CommandStatus.values)
    for terminal in ("SUCCEEDED", "SKIPPED", "FAILED", "CANCELLED"):
        assert TRANSITIONS[terminal] == frozenset()


def test_public_names_of_the_package() -> None:
    """`xcommands.XCommand`, `xcommands.enqueue` and `xcommands.enqueue_job` are the engine's API."""
    assert xcommands.XCommand is base.XCommand
    assert xcommands.enqueue is queue.enqueue
    assert xcommands.enqueue_job is keyed.enqueue_job
    assert sorted(xcommands.__all__) == sorted(xcommands._EXPORTS)  # noqa: SLF001
    with pytest.raises(AttributeError):
        _ = xcommands.no_such_name  # type: ignore[attr-defined]


def test_command_names_and_registry() -> None:
    """A command registers under '<app>.<Class>' with a Celery task of the same name."""
    assert TraceXCommand.command_name == "tests.TraceXCommand"
    assert registered_command("tests.TraceXCommand") is TraceXCommand
    assert TraceXCommand.celery_task.name == "tests.TraceXCommand"
    with pytest.raises(UnknownCommand):
        registered_command("nope.MissingXCommand")


def test_the_doorbell_shows_the_command_its_key_and_arguments(traces: redis.Redis) -> None:
    """The Celery message of a command is named after it and carries its key and arguments (Flower)."""
    row = enqueue(TraceXCommand(key="flower-key", label="shown"))
    raw = traces.lrange("commands", 0, -1)
    assert len(raw) == 1
    headers = json.loads(raw[0])["headers"]
    assert headers["task"] == "tests.TraceXCommand"
    assert headers["argsrepr"] == f"[{row.pk}]"
    assert "'key': 'flower-key'" in headers["kwargsrepr"]
    assert "'label': 'shown'" in headers["kwargsrepr"]


def test_only_the_head_of_a_key_can_be_claimed() -> None:
    """The second command of a key is not runnable until the first finished; FIFO by seq."""
    first = enqueue(TraceXCommand(key="k", label="a"))
    second = enqueue(TraceXCommand(key="k", label="b"))
    assert (first.seq, second.seq) == (1, 2)
    assert second.wake_at is None  # not a head: its predecessor rings it
    assert engine.process(second.pk) == "not-runnable"
    assert status_of(second) == CommandStatus.PENDING
    assert engine.process(first.pk) == "succeeded"
    second.refresh_from_db()
    assert second.wake_at is not None  # rung by the first's completion
    assert engine.process(second.pk) == "succeeded"
    assert [e["label"] for e in read_trace(redis.Redis.from_url(_url()), "k") if e["event"] == "start"] == ["a", "b"]


def test_enqueue_many_numbers_per_key_in_order_and_rings_only_heads(traces: redis.Redis) -> None:
    """enqueue_many keeps enqueue's rules: seqs continue per key in list order; only heads are rung, after commit."""
    busy = enqueue(TraceXCommand(key="m1", label="already"))
    traces.delete("commands")
    with transaction.atomic():
        rows = enqueue_many([
            TraceXCommand(key="m2", label="x1"), TraceXCommand(key="m1", label="y1"),
            TraceXCommand(key="m2", label="x2"), TraceXCommand(key="m3", label="z1"),
        ])
        assert traces.llen("commands") == 0  # doorbells only after commit
    assert [(r.key, r.seq) for r in rows] == [("m2", 1), ("m1", 2), ("m2", 2), ("m3", 1)]
    heads = {r.key: r.pk for r in rows if r.wake_at is not None}
    assert heads == {"m2": rows[0].pk, "m3": rows[3].pk}  # m1 waits behind `busy`; x2 behind x1
    rung = sorted(json.loads(m)["headers"]["argsrepr"] for m in traces.lrange("commands", 0, -1))
    assert rung == sorted(f"[{pk}]" for pk in heads.values())
    assert engine.process(rows[1].pk) == "not-runnable"
    assert engine.process(busy.pk) == "succeeded"
    for row in (rows[1], rows[0], rows[2], rows[3]):
        assert engine.process(row.pk) == "succeeded"
    with pytest.raises(RuntimeError), transaction.atomic():
        enqueue_many([TraceXCommand(key="m4", label="never")])
        raise RuntimeError("roll back")
    assert not Command.objects.filter(key="m4").exists()


def _url() -> str:
    return str(settings.REDIS_URL)


def test_other_keys_are_independent() -> None:
    """A blocked key does not hold back another key's head."""
    enqueue(TraceXCommand(key="k1", label="a1"))
    behind = enqueue(TraceXCommand(key="k1", label="a2"))
    other = enqueue(TraceXCommand(key="k2", label="b1"))
    assert engine.process(behind.pk) == "not-runnable"
    assert engine.process(other.pk) == "succeeded"


def test_success_commits_effect_and_result() -> None:
    """A successful command is SUCCEEDED with its result, and its effect committed once."""
    row = enqueue(TraceXCommand(key="k", label="ok"))
    assert engine.process(row.pk) == "succeeded"
    row.refresh_from_db()
    assert row.status == CommandStatus.SUCCEEDED
    assert row.result is not None and row.result["label"] == "ok"
    assert row.attempts == 1
    assert effects("ok") == 1
    assert engine.process(row.pk) == "not-runnable"  # a duplicate doorbell does nothing
    assert effects("ok") == 1


def test_failed_precondition_is_skipped_not_an_error() -> None:
    """verify_precondition raising PreconditionFailed marks SKIPPED and the key moves on."""
    row = enqueue(TraceXCommand(key="k", label="nope", applies=False))
    after = enqueue(TraceXCommand(key="k", label="after"))
    assert engine.process(row.pk) == "skipped"
    row.refresh_from_db()
    assert row.status == CommandStatus.SKIPPED
    assert row.last_error == ""
    assert "does not apply" in row.history[-1]["note"]
    assert engine.process(after.pk) == "succeeded"


def test_transient_failure_retries_with_stored_backoff(traces: redis.Redis) -> None:
    """A transient failure returns the command to PENDING with a future not_before; the key waits."""
    row = enqueue(TraceXCommand(key="k", label="flaky", fail_times=2))
    behind = enqueue(TraceXCommand(key="k", label="behind"))
    before = timezone.now()
    assert engine.process(row.pk) == "retry"
    row.refresh_from_db()
    assert row.status == CommandStatus.PENDING
    assert row.attempts == 1
    assert row.not_before >= before + timedelta(seconds=0.1)  # base 0.2 s, equal jitter
    assert row.wake_at == row.not_before
    assert "TransientError" in row.last_error
    assert engine.process(row.pk) == "not-runnable"  # not due yet
    assert engine.process(behind.pk) == "not-runnable"  # the key is blocked
    # Once due, the second attempt fails again with a longer backoff (0.4 s ceiling).
    Command.objects.filter(pk=row.pk).update(not_before=timezone.now())
    second_start = timezone.now()
    assert engine.process(row.pk) == "retry"
    row.refresh_from_db()
    assert row.attempts == 2
    assert row.not_before >= second_start + timedelta(seconds=0.2)


def test_retry_counts_then_success(traces: redis.Redis) -> None:
    """With fail_times below max_retries the command succeeds on attempt fail_times + 1."""
    row = enqueue(TraceXCommand(key="k", label="twice", fail_times=2))
    outcomes = []
    for _ in range(3):
        Command.objects.filter(pk=row.pk).update(not_before=timezone.now())
        outcomes.append(engine.process(row.pk))
    assert outcomes == ["retry", "retry", "succeeded"]
    row.refresh_from_db()
    assert row.attempts == 3
    assert [h["outcome"] for h in row.history] == ["error (transient)", "error (transient)", "SUCCEEDED"]
    assert effects("twice") == 1


def test_retries_exhausted_roll_back_once(traces: redis.Redis) -> None:
    """After max_retries + 1 failed attempts the rollback runs exactly once; status FAILED."""
    row = enqueue(TraceXCommand(key="k", label="doomed", fail_times=100))
    outcomes = []
    for _ in range(5):
        Command.objects.filter(pk=row.pk).update(not_before=timezone.now())
        outcomes.append(engine.process(row.pk))
    assert outcomes == ["retry", "retry", "retry", "failed", "not-runnable"]
    row.refresh_from_db()
    assert row.status == CommandStatus.FAILED
    assert row.attempts == 4
    assert counter(traces, "rollbacks:doomed") == 1
    assert effects("doomed") == 0


def test_permanent_failure_skips_retries(traces: redis.Redis) -> None:
    """A permanent error goes straight to rollback: one attempt, one rollback."""
    row = enqueue(TraceXCommand(key="k", label="perm", fail_times=1, fail_kind="permanent"))
    assert engine.process(row.pk) == "failed"
    row.refresh_from_db()
    assert (row.status, row.attempts) == (CommandStatus.FAILED, 1)
    assert counter(traces, "rollbacks:perm") == 1


def test_double_fault_parks_and_blocks_the_key(traces: redis.Redis) -> None:
    """A failing rollback parks the command with its error; the key is blocked until an operator acts."""
    row = enqueue(TraceXCommand(key="k", label="df", fail_times=1, fail_kind="permanent", rollback_fails=True))
    behind = enqueue(TraceXCommand(key="k", label="behind"))
    assert engine.process(row.pk) == "parked"
    row.refresh_from_db()
    assert row.status == CommandStatus.PARKED
    assert "double fault" in row.last_error
    assert "rollback of df failed" in row.last_error
    assert engine.process(behind.pk) == "not-runnable"
    sweep()
    assert status_of(behind) == CommandStatus.PENDING
    assert engine.process(behind.pk) == "not-runnable"
    # The operator skips it: the key moves on.
    operations.skip_command(row.pk, user="ops")
    assert status_of(row) == CommandStatus.CANCELLED
    assert engine.process(behind.pk) == "succeeded"


def test_operator_retry_of_a_parked_command(traces: redis.Redis) -> None:
    """Retrying a parked command gives it fresh attempts; it then runs at the head of its key."""
    row = enqueue(TraceXCommand(key="k", label="again", fail_times=1, fail_kind="permanent", rollback_fails=True))
    assert engine.process(row.pk) == "parked"
    pending = enqueue(TraceXCommand(key="fine", label="fine"))
    with pytest.raises(IllegalCommandTransition, match="only a PARKED command"):
        operations.retry_command(pending.pk)
    operations.retry_command(row.pk, user="ops")
    row.refresh_from_db()
    assert (row.status, row.attempts) == (CommandStatus.PENDING, 0)
    assert engine.process(row.pk) == "succeeded"  # fail_times=1 already spent
    assert [h["outcome"] for h in Command.objects.get(pk=row.pk).history][-2:] == [
        "retried by operator",
        "SUCCEEDED",
    ]


def test_a_fenced_worker_cannot_commit() -> None:
    """When the sweep took the lease over (token bumped), the old holder's result is not committed."""
    row = enqueue(TraceXCommand(key="k", label="zombie"))
    claim = engine.claim_command(row.pk)
    assert claim is not None
    # The lease expires and the sweep hands the command back to the queue.
    Command.objects.filter(pk=row.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert sweep().leases_expired == 1
    row.refresh_from_db()
    assert (row.status, row.fencing_token) == (CommandStatus.PENDING, claim.token + 1)
    # The zombie resumes and tries to finish its work: refused, its effect rolled back.
    command = TraceXCommand.from_params(claim.params)
    outcome = engine._execute(claim)  # noqa: SLF001 - the zombie's own path
    assert outcome == "fenced"
    assert isinstance(command, XCommand)
    assert effects("zombie") == 0
    # The rightful run commits once.
    assert engine.process(row.pk) == "succeeded"
    assert effects("zombie") == 1


def test_expired_lease_on_last_attempt_goes_to_rollback(traces: redis.Redis) -> None:
    """A worker lost during the last attempt: the sweep moves the command to rollback."""
    row = enqueue(TraceXCommand(key="k", label="lost"))
    Command.objects.filter(pk=row.pk).update(attempts=3)
    claim = engine.claim_command(row.pk)
    assert claim is not None and claim.attempt == 4
    Command.objects.filter(pk=row.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    sweep()
    row.refresh_from_db()
    assert row.status == CommandStatus.ROLLING_BACK
    assert "lost" in row.last_error
    assert engine.process(row.pk) == "failed"
    assert counter(traces, "rollbacks:lost") == 1


def test_enqueue_statements_write_the_row_enqueue_writes_and_ring_only_a_head_after_commit(traces: redis.Redis) -> None:
    """In the caller's batch: numbered after earlier commands of the key, a head rung once its transaction commits."""
    busy = enqueue(TraceXCommand(key="s1", label="already"))
    traces.delete("commands")
    like = enqueue(TraceXCommand(key="s0", label="x"))
    rows: list[Command] = []
    with transaction.atomic():
        for key in ("s1", "s2"):
            command = TraceXCommand(key=key, label="x")
            statements, params = queue.enqueue_statements(command, prefix="_q")
            answers = sqlbatch.run(statements, params)
            queue.enqueued(command, answers[-1])
            rows.append(Command.objects.get(pk=answers[-1][0][0]))
        assert traces.llen("commands") == 1  # `like`'s only: doorbells after commit
    behind, head = rows
    assert (behind.seq, behind.wake_at, head.seq) == (2, None, 1)  # s1 waits behind `busy`
    assert head.wake_at is not None and head.wake_at > head.enqueued_at
    assert head.params == {**like.params, "key": "s2"}
    fields = ["name", "status", "attempts", "max_retries", "lease_owner", "fencing_token", "history",
              "result", "owner_id", "last_error", "started_at"]
    assert [getattr(head, name) for name in fields] == [getattr(like, name) for name in fields]
    rung = sorted(json.loads(m)["headers"]["argsrepr"] for m in traces.lrange("commands", 0, -1))
    assert rung == sorted([f"[{like.pk}]", f"[{head.pk}]"])
    assert engine.process(behind.pk) == "not-runnable"
    assert [engine.process(row.pk) for row in (busy, behind, head)] == ["succeeded"] * 3
    with pytest.raises(ValueError, match="job key"):
        queue.enqueue_statements(MarkerXCommand(key=""))


def test_enqueue_in_a_rolled_back_transaction_never_exists() -> None:
    """The outbox row shares the caller's transaction: a rollback leaves no command."""
    with pytest.raises(RuntimeError), transaction.atomic():
        enqueue(TraceXCommand(key="k", label="ghost"))
        raise RuntimeError("caller fails after enqueueing")
    assert not Command.objects.filter(key="k").exists()


def test_enqueue_refuses_bad_keys() -> None:
    """Empty or over-long keys are refused before anything is written."""
    with pytest.raises(ValueError, match="job key"):
        enqueue(MarkerXCommand(key=""))
    with pytest.raises(ValueError, match="job key"):
        enqueue(MarkerXCommand(key="x" * 300))
    assert Command.objects.count() == 0


def test_sweep_rings_due_heads_only() -> None:
    """Heads whose wake time passed are rung; commands behind a head are left to it."""
    head = enqueue(TraceXCommand(key="k", label="h"))
    behind = enqueue(TraceXCommand(key="k", label="b"))
    past = timezone.now() - timedelta(seconds=1)
    Command.objects.filter(pk=head.pk).update(wake_at=past)
    report = sweep()
    assert report.rung == 1
    head.refresh_from_db()
    behind.refresh_from_db()
    assert head.wake_at is not None and head.wake_at > timezone.now()
    assert behind.wake_at is None
    assert sweep().rung == 0  # idempotent: nothing due any more


def test_backoff_grows_and_is_capped() -> None:
    """Backoff ceilings double per attempt up to the cap, with jitter in [c/2, c]."""
    rng = random.Random(7)
    for attempt, ceiling in [(1, 0.2), (2, 0.4), (3, 0.8), (4, 1.6), (5, 2.0), (9, 2.0)]:
        delay = TraceXCommand.backoff_seconds(attempt, rng)
        assert ceiling / 2 <= delay <= ceiling


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        pytest.param(TransientError("x"), "transient", id="transient"),
        pytest.param(ConnectionError("x"), "transient", id="connection"),
        pytest.param(ValueError("x"), "permanent", id="value-error"),
        pytest.param(RuntimeError("x"), "permanent", id="unknown-is-permanent"),
    ],
)
def test_exception_classification(exc: BaseException, kind: str) -> None:
    """Transient errors retry; permanent and unknown ones go straight to rollback."""
    assert TraceXCommand.classify(exc) == kind


def test_a_doorbell_drains_its_key_within_the_quantum(traces: redis.Redis) -> None:
    """After a commit the worker runs the key's next head of the same class itself, up to the quantum."""
    rows = [enqueue(TraceXCommand(key="drain", label=f"d{i}")) for i in range(5)]
    other = enqueue(MarkerXCommand(key="drain"))
    with override_settings(COMMAND_DRAIN_MAX=3, COMMAND_DRAIN_QUANTUM_MS=10_000):
        assert engine.process(rows[0].pk) == "succeeded"
    statuses = [status_of(row) for row in rows]
    assert statuses == [CommandStatus.SUCCEEDED] * 3 + [CommandStatus.PENDING] * 2
    with override_settings(COMMAND_DRAIN_MAX=10, COMMAND_DRAIN_QUANTUM_MS=10_000):
        assert engine.process(rows[3].pk) == "succeeded"
    # A different command class ends the drain: its own doorbell is rung instead.
    assert [status_of(row) for row in rows[3:]] == [CommandStatus.SUCCEEDED] * 2
    assert status_of(other) == CommandStatus.PENDING
    starts = [e["label"] for e in read_trace(traces, "drain") if e["event"] == "start"]
    assert starts == [f"d{i}" for i in range(5)]


def test_drained_commands_are_claimed_by_the_finishing_transaction(traces: redis.Redis) -> None:
    """Within a drain the next head is leased in its predecessor's transaction: one claim each, no doorbell."""
    rows = [enqueue(TraceXCommand(key="hand", label=f"h{i}", effect=False)) for i in range(3)]
    traces.delete("commands")
    with override_settings(COMMAND_DRAIN_MAX=10, COMMAND_DRAIN_QUANTUM_MS=10_000):
        assert engine.process(rows[0].pk) == "succeeded"
    for row in rows:
        row.refresh_from_db()
        assert (row.status, row.attempts, row.fencing_token) == (CommandStatus.SUCCEEDED, 1, 1)
    assert traces.llen("commands") == 0


def test_no_hand_off_inside_a_callers_transaction(traces: redis.Redis) -> None:
    """process() called inside an open transaction leases nothing it could not run: the next head stays pending."""
    rows = [enqueue(TraceXCommand(key="outer", label=f"o{i}", effect=False)) for i in range(2)]
    with override_settings(COMMAND_DRAIN_MAX=10, COMMAND_DRAIN_QUANTUM_MS=10_000), transaction.atomic():
        assert engine.process(rows[0].pk) == "succeeded"
    assert [status_of(row) for row in rows] == [CommandStatus.SUCCEEDED, CommandStatus.PENDING]


def test_skipping_a_parked_command_rings_the_next_head_at_once(traces: redis.Redis) -> None:
    """The operator's skip wakes the key's next command through the broker, not at the next sweep."""
    row = enqueue(TraceXCommand(key="skip", label="s", fail_times=1, fail_kind="permanent", rollback_fails=True))
    behind = enqueue(TraceXCommand(key="skip", label="behind"))
    assert engine.process(row.pk) == "parked"
    traces.delete("commands")
    operations.skip_command(row.pk, user="ops")
    doorbells = [json.loads(raw)["headers"]["argsrepr"] for raw in traces.lrange("commands", 0, -1)]
    assert doorbells == [f"[{behind.pk}]"]


def test_a_spent_quantum_rings_the_next_head_instead(traces: redis.Redis) -> None:
    """With the time quantum spent, the next head is left to its doorbell."""
    rows = [enqueue(TraceXCommand(key="q", label=f"q{i}")) for i in range(3)]
    with override_settings(COMMAND_DRAIN_MAX=10, COMMAND_DRAIN_QUANTUM_MS=0):
        assert engine.process(rows[0].pk) == "succeeded"
    assert [status_of(row) for row in rows] == [
        CommandStatus.SUCCEEDED, CommandStatus.PENDING, CommandStatus.PENDING,
    ]
    assert traces.llen("commands") >= 1  # the doorbell of q1 went to the broker


def test_purge_deletes_only_old_finished_commands() -> None:
    """Finished commands past the retention window go; active and recent ones stay."""
    old_done = enqueue(TraceXCommand(key="p", label="old", effect=False))
    assert engine.process(old_done.pk) == "succeeded"
    recent_done = enqueue(TraceXCommand(key="p", label="recent", effect=False))
    assert engine.process(recent_done.pk) == "succeeded"
    waiting = enqueue(TraceXCommand(key="p2", label="waiting"))
    Command.objects.filter(pk__in=[old_done.pk, waiting.pk]).update(
        finished_at=timezone.now() - timedelta(days=40), enqueued_at=timezone.now() - timedelta(days=40)
    )
    assert purge_finished(timezone.now(), timedelta(days=30), batch=1) == 1
    assert set(Command.objects.values_list("pk", flat=True)) == {recent_done.pk, waiting.pk}


@pytest.mark.parametrize("prepared", [True, False], ids=["prepared", "not-prepared"])
def test_postgres_hot_paths_are_prepared_statements_unless_turned_off(prepared: bool) -> None:
    """On PostgreSQL claims and completions are server-side prepared statements (planned once);
    COMMAND_PREPARED_STATEMENTS=false (transaction-mode poolers) runs them unprepared."""
    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are a PostgreSQL optimisation")
    connection.close()  # a fresh connection: nothing prepared yet
    with override_settings(COMMAND_PREPARED_STATEMENTS=prepared):
        rows = [enqueue(TraceXCommand(key="prep", label=f"p{i}", effect=False)) for i in range(3)]
        assert [engine.process(row.pk) for row in rows] == ["succeeded"] * 3
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement FROM pg_prepared_statements")
            statements = [row[0] for row in cursor.fetchall()]
    assert any("fencing_token = fencing_token + 1" in text for text in statements) is prepared
    assert any("finished_at" in text for text in statements) is prepared

