"""Running one command under its key: claim with a lease, run, finish fenced, retry, roll back.

The database decides everything: a worker may only run the head of a key (the lowest
active seq), only one leased command per key exists (partial unique index), and every
write after the claim is conditional on the fencing token the claim produced.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from kernel import capture, processes, tries
from kernel.history import acting_as
from kernel.models import TaskTry
from xcommands import failpoints, recovery, sql
from xcommands.base import registered_command
from xcommands.choices import LEASED_STATUSES, CommandStatus
from xcommands.errors import FencedOut, PreconditionFailed, UnknownCommand
from xcommands.heartbeat import heartbeat
from xcommands.models import Command
from xcommands.queue import ring, ring_stale_after
from xcommands.sqlite_busy import yield_to_waiters

log = logging.getLogger(__name__)

MAX_ERROR_CHARS = 8000
# The drain of the doorbell this thread is running, if any (see process()).
_local = threading.local()


def lease_duration() -> timedelta:
    """How long a claim lasts without a heartbeat."""
    return timedelta(seconds=int(settings.COMMAND_LEASE_SECONDS))


_IDENTITY: tuple[int, str] = (0, "")


def worker_identity() -> str:
    """`<node>:<pid>` of this process, recorded as the lease owner (the node as Flower names the worker)."""
    global _IDENTITY
    pid = os.getpid()
    if _IDENTITY[0] != pid:  # computed once per (forked) process
        _IDENTITY = (pid, f"{processes.node_name()}:{pid}")
    return _IDENTITY[1]


@dataclass(frozen=True)
class Claim:
    """What a worker holds after claiming: the command and its fencing token."""

    command_id: int
    key: str
    name: str
    params: dict[str, Any]
    token: int
    attempt: int
    max_retries: int
    rolling_back: bool
    last_error: str
    history: list[dict[str, Any]]

    @property
    def leased_status(self) -> str:
        """The status the row has while this claim holds it."""
        return CommandStatus.ROLLING_BACK if self.rolling_back else CommandStatus.RUNNING


def _stamp(now: datetime) -> str:
    return now.isoformat(timespec="milliseconds")


def _error_text(exc: BaseException) -> str:
    text = "".join(traceback.format_exception(exc))
    return text[-MAX_ERROR_CHARS:]


def _drain_limits() -> tuple[int, float]:
    """How many commands of one key a doorbell may run, and for how long (seconds)."""
    return (
        max(1, int(settings.COMMAND_DRAIN_MAX)),
        max(0.0, float(settings.COMMAND_DRAIN_QUANTUM_MS) / 1000),
    )


@dataclass
class _Drain:
    """What one doorbell may still run: more commands of its first command's class, until a deadline."""

    name: str
    deadline: float
    allowed: bool = True
    taken: Claim | None = None


def process(command_id: int) -> str:
    """Run the command if it is the runnable head of its key; return what happened to it.

    When it finishes, the key's next head is claimed in the same transaction and run here
    too if it is the same command class, is due, and the quantum (COMMAND_DRAIN_MAX
    commands, COMMAND_DRAIN_QUANTUM_MS) is not spent: round robin with a quantum, which
    saves a broker round trip and a claim per command while a hot key still yields to the
    others after one quantum. Otherwise the next head's doorbell goes to the back of the queue.
    """
    max_run, quantum = _drain_limits()
    claim = claim_command(command_id)
    if claim is None:
        if _owner_died_here(command_id):
            return "owner-died"
        return "not-runnable"
    drain = _Drain(name=claim.name, deadline=time.monotonic() + quantum)
    # Called inside someone's transaction, commits (and so hand-offs) happen only later.
    drains = not connection.in_atomic_block
    first_outcome = ""
    _local.drain = drain
    try:
        for ran in range(1, max_run + 1):
            drain.allowed, drain.taken = drains and ran < max_run, None
            with heartbeat(claim.command_id, claim.token):
                outcome = _rollback(claim, claim.last_error) if claim.rolling_back else _execute(claim)
            first_outcome = first_outcome or outcome
            if drain.taken is None:
                break
            claim = drain.taken
            # SQLite: a drain's transactions follow each other closely; let writers that
            # wait for the database lock (other keys' enqueues, claims, starts) go first.
            yield_to_waiters(connection)
    finally:
        _local.drain = None
    return first_outcome


def _claim_of(row: dict[str, Any]) -> Claim:
    return Claim(
        command_id=row["id"],
        key=row["key"],
        name=row["name"],
        params=row["params"],
        token=row["token"],
        attempt=row["attempts"],
        max_retries=row["max_retries"],
        rolling_back=row["status"] == CommandStatus.ROLLING_BACK,
        last_error=row["last_error"],
        history=row["history"],
    )


def _owner_died_here(command_id: int) -> bool:
    """The command's message came back (Celery requeues a message whose pool process died) and its lease owner is dead.

    The owner is a process of this host that no longer exists: the lease is given up now and the
    sweep run, so the command is retried within seconds instead of after its lease (fencing as
    for any expired lease). An owner alive, or on another host, keeps its lease.
    """
    owner = Command.objects.filter(pk=command_id, status__in=sorted(LEASED_STATUSES)).values_list(
        "lease_owner", flat=True).first()
    pid = processes.owner_pid(owner or "", processes.node_name())
    if owner is None or pid is None or not processes.is_gone(pid):
        return False
    now = timezone.now()
    if not recovery.give_up_lease(command_id, owner, now):
        return False
    recovery.sweep(now)
    return True


def claim_command(command_id: int, now: datetime | None = None) -> Claim | None:
    """Take a lease on the command if it is its key's head and due; None otherwise.

    One conditional UPDATE (see `xcommands.sql`). Head-ness is stable: commands only leave
    the active set and new ones get higher seqs, so once no lower active seq exists none
    will appear; concurrent claims of one command race on its row and exactly one wins.
    """
    now = now or timezone.now()
    row = sql.claim(command_id, worker_identity(), now, now + lease_duration())
    return None if row is None else _claim_of(row)


def _finish(claim: Claim, status: str, *, result: Any = None, note: str = "", error: str = "") -> None:
    """Mark the claimed command done (in the caller's transaction) and ring its key's next head.

    Raises FencedOut when the claim's token is no longer the row's: the caller's
    transaction then rolls back, so a zombie's effects never commit.
    """
    now = timezone.now()
    entry = {
        "attempt": claim.attempt,
        "phase": "rollback" if claim.rolling_back else "execute",
        "outcome": status,
        "at": _stamp(now),
        "worker": worker_identity(),
    }
    if note:
        entry["note"] = note[:500]
    if error:
        last_error: str | None = error
    elif status == CommandStatus.SUCCEEDED:
        last_error = ""  # earlier attempts' errors stay in the history
    else:
        last_error = None
    # The completion also locks the key row: it orders this completion against concurrent
    # enqueues of the key, so a command enqueued meanwhile is either seen by
    # ring_next_head below or sees us finished (and rings itself).
    done = sql.finish(
        claim.command_id,
        claim.token,
        claim.leased_status,
        key=claim.key,
        status=status,
        now=now,
        history=[*claim.history, entry],
        result=result,
        last_error=last_error,
    )
    if not done:
        raise FencedOut(f"command {claim.command_id}: lease lost (token {claim.token}); not committing")
    _keep_try(claim, status, now, error if status != CommandStatus.SUCCEEDED else "")
    ring_next_head(claim.key, now)


def ring_next_head(key: str, now: datetime) -> None:
    """Hand the key's next head on (in the caller's transaction, which holds the key's lock).

    Inside a drain that may go on, a due head of the same command class is claimed here and
    run by this worker after commit; otherwise a pending head is rung after commit (or, when
    it waits for a retry, left to the sweep at its retry time).
    """
    drain: _Drain | None = getattr(_local, "drain", None)
    if drain is not None and drain.allowed and time.monotonic() < drain.deadline:
        row = sql.claim_next_head(key, drain.name, worker_identity(), now, now + lease_duration())
        if row is not None:
            transaction.on_commit(partial(setattr, drain, "taken", _claim_of(row)))
            return
    head = sql.wake_next_head(key, now, now + ring_stale_after())
    if head is None or head["not_before"] > now:
        return  # nothing waiting, or a retry that the sweep rings when due
    transaction.on_commit(partial(ring, head["id"], head["name"], {"key": key, "params": head["params"]}))


def _queued_by(claim: Claim) -> str:
    """`<command> (<user who queued it>)`, or the command's name alone (one query, on its first status change)."""
    user = Command.objects.filter(pk=claim.command_id).values_list("owner__username", flat=True).first()
    return f"{claim.name} ({user})" if user else claim.name


def _execute(claim: Claim) -> str:
    # Every status change the command makes is recorded as its (kernel.history).
    with acting_as(claim.name, partial(_queued_by, claim)), capture.capturing():
        return _execute_as(claim)


def _keep_try(claim: Claim, status: str, now: datetime, error: str = "") -> None:
    """Keep this try's story (caller's transaction) when it failed or logged a warning (kernel.tries).

    A command that ran quietly has nothing to keep beyond its row and history: no row is written,
    so the engine's hot path pays nothing more.
    """
    kept = capture.current()
    if not error and (kept is None or kept.highest < logging.WARNING):
        return
    tries.store(
        TaskTry.Kind.COMMAND, str(claim.command_id), kept, status=status, ended_at=now, job_id=claim.key,
        name=claim.name, attempt=claim.attempt, worker=worker_identity(),
        error_code=error.strip().splitlines()[-1].partition(":")[0][:64] if error.strip() else "",
        error_message=error.strip().splitlines()[-1][:500] if error.strip() else "",
    )


def _execute_as(claim: Claim) -> str:
    try:
        command_class = registered_command(claim.name)
        command = command_class.from_params(claim.params)
    except (UnknownCommand, TypeError) as exc:
        return _fail(claim, exc, permanent=True)
    try:
        if command.is_atomic():
            with transaction.atomic():
                outcome = _run_and_finish(claim, command)
        else:
            outcome = _run_and_finish(claim, command, finish_atomically=True)
    except FencedOut as exc:
        log.warning("%s", exc)
        return "fenced"
    except Exception as exc:  # the command failed: classify, retry or roll back
        return _fail(claim, exc, permanent=command_class.classify(exc) == "permanent")
    return outcome


def _run_and_finish(claim: Claim, command: Any, finish_atomically: bool = False) -> str:
    try:
        result = command.run()
        failpoints.hit(f"{claim.name}:before-commit")
    except PreconditionFailed as skipped:
        log.info("%s #%s [%s] skipped: %s", claim.name, claim.command_id, claim.key, skipped)
        if finish_atomically:
            with transaction.atomic():
                _finish(claim, CommandStatus.SKIPPED, note=str(skipped))
        else:
            _finish(claim, CommandStatus.SKIPPED, note=str(skipped))
        return "skipped"
    if finish_atomically:
        with transaction.atomic():
            _finish(claim, CommandStatus.SUCCEEDED, result=result)
    else:
        _finish(claim, CommandStatus.SUCCEEDED, result=result)
    return "succeeded"


def _fail(claim: Claim, exc: BaseException, *, permanent: bool) -> str:
    """After a failed attempt: schedule a retry, or move to rollback when none remain."""
    now = timezone.now()
    capture.note_exception(exc)
    error = _error_text(exc)
    kind = "permanent" if permanent else "transient"
    entry = {
        "attempt": claim.attempt,
        "phase": "execute",
        "outcome": f"error ({kind})",
        "error": f"{type(exc).__name__}: {exc}"[:500],
        "at": _stamp(now),
        "worker": worker_identity(),
    }
    history = [*claim.history, entry]
    retries_left = claim.attempt <= claim.max_retries
    fenced = Command.objects.filter(
        pk=claim.command_id, fencing_token=claim.token, status=CommandStatus.RUNNING
    )
    if not permanent and retries_left:
        command_class = registered_command(claim.name)
        delay = command_class.backoff_seconds(claim.attempt)
        retry_at = now + timedelta(seconds=delay)
        with transaction.atomic():
            if not fenced.update(
                status=CommandStatus.PENDING,
                not_before=retry_at,
                wake_at=retry_at,
                lease_owner="",
                lease_expires_at=None,
                last_error=error,
                history=[*history[:-1], {**entry, "retry_in_s": round(delay, 3)}],
            ):
                log.warning("command %s: lease lost while recording a failure", claim.command_id)
                return "fenced"
            _keep_try(claim, "RETRY", now, error)
        log.info(
            "%s #%s [%s] attempt %s failed (%s); retry in %.2f s",
            claim.name, claim.command_id, claim.key, claim.attempt, type(exc).__name__, delay,
        )
        return "retry"
    with transaction.atomic():
        if not fenced.update(status=CommandStatus.ROLLING_BACK, last_error=error, history=history):
            return "fenced"
    rolling = Claim(
        command_id=claim.command_id,
        key=claim.key,
        name=claim.name,
        params=claim.params,
        token=claim.token,
        attempt=claim.attempt,
        max_retries=claim.max_retries,
        rolling_back=True,
        last_error=error,
        history=history,
    )
    return _rollback(rolling, error)


def _rollback(claim: Claim, error: str) -> str:
    """Run the command's rollback once; a failing rollback parks the command (double fault)."""
    try:
        command = registered_command(claim.name).from_params(claim.params)
        with transaction.atomic(), acting_as(claim.name, partial(_queued_by, claim)):
            command.rollback(error)
            _finish(claim, CommandStatus.FAILED, error=error)
    except FencedOut as exc:
        log.warning("%s", exc)
        return "fenced"
    except Exception as exc:  # double fault: park, block the key, tell the operator
        now = timezone.now()
        text = f"double fault: rollback failed after: {error.strip().splitlines()[-1] if error else ''}\n"
        text += _error_text(exc)
        entry = {
            "attempt": claim.attempt,
            "phase": "rollback",
            "outcome": "double fault",
            "error": f"{type(exc).__name__}: {exc}"[:500],
            "at": _stamp(now),
            "worker": worker_identity(),
        }
        with transaction.atomic():
            parked = Command.objects.filter(
                pk=claim.command_id, fencing_token=claim.token, status=CommandStatus.ROLLING_BACK
            ).update(
                status=CommandStatus.PARKED,
                finished_at=now,
                lease_owner="",
                lease_expires_at=None,
                last_error=text[-MAX_ERROR_CHARS:],
                history=[*claim.history, entry],
            )
            if parked:
                capture.note_exception(exc)
                _keep_try(claim, CommandStatus.PARKED, now, text)
        if not parked:
            return "fenced"
        log.error(
            "%s #%s [%s] PARKED after a double fault; key blocked until an operator retries or skips it",
            claim.name, claim.command_id, claim.key,
        )
        return "parked"
    return "failed"
