"""Enqueueing commands (transactional outbox) and ringing their doorbells after commit."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Min
from django.utils import timezone

from kernel import sqlbatch
from xcommands.base import XCommand, registered_command
from xcommands.choices import ACTIVE_STATUSES, CommandStatus
from xcommands.models import Command, CommandKey

log = logging.getLogger(__name__)

MAX_KEY_LENGTH = 255


def ring_stale_after() -> timedelta:
    """How long a rung head may wait before the sweep rings it again."""
    return timedelta(seconds=int(settings.COMMAND_RING_STALE_SECONDS))


def _next_seq(key: str) -> int:
    """Create the key's row if needed and take its next sequence number, locking the row.

    The row lock (held to the end of the caller's transaction) serialises enqueues of one
    key, so sequence order is commit order, and orders them against the completion of the
    key's running command (see `engine._finish`), so no wake-up is lost between the two.
    """
    table = CommandKey._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (key, next_seq) VALUES (%s, 1) "  # noqa: S608 - table name is ours
            f"ON CONFLICT (key) DO UPDATE SET next_seq = {table}.next_seq + 1 "
            "RETURNING next_seq",
            [key],
        )
        row = cursor.fetchone()
    if row is None:  # RETURNING always yields the row; be explicit for the type checker
        raise RuntimeError(f"could not number a command of key {key!r}")
    return int(row[0])


def enqueue(
    command: XCommand,
    *,
    max_retries: int | None = None,
    not_before: datetime | None = None,
    owner_id: int | None = None,
) -> Command:
    """Write the command as a row in the caller's transaction; ring its key after commit.

    If the caller's transaction rolls back, the command never existed. If it commits, the
    command runs even when Redis is down at that moment: the recovery sweep rings it later.
    """
    name = type(command).command_name
    registered_command(name)  # refuses unregistered classes early
    key = command.job_key()
    if not key or len(key) > MAX_KEY_LENGTH:
        raise ValueError(f"job key must be 1 to {MAX_KEY_LENGTH} characters, got {key!r}")
    params = command.to_params()
    now = timezone.now()
    start = max(now, not_before) if not_before else now
    with transaction.atomic():
        seq = _next_seq(key)
        is_head = not Command.objects.filter(
            key=key, status__in=ACTIVE_STATUSES, seq__lt=seq
        ).exists()
        row = Command.objects.create(
            key=key,
            seq=seq,
            name=name,
            params=params,
            status=CommandStatus.PENDING,
            max_retries=type(command).max_retries if max_retries is None else max_retries,
            not_before=start,
            enqueued_at=now,
            # A head is rung now (and again by the sweep if it is still waiting later);
            # a command behind others is rung by its predecessor's completion.
            wake_at=(start if start > now else now + ring_stale_after()) if is_head else None,
            owner_id=owner_id,
        )
        if is_head and start <= now:
            ring_on_commit(row)
    return row


def enqueue_statements(command: XCommand, prefix: str = "_cmd") -> tuple[list[str], dict[str, Any]]:
    """`enqueue` as statements of the caller's batch (`kernel.sqlbatch`), and their parameters.

    The key is numbered and locked, then the row written with the next number, a wake-up time
    if it is its key's head, and the class's retries, as `enqueue` writes it. The batch runs
    in the caller's transaction (the key's lock is held to its end); its last statement answers
    the row's (id, wake_at): give its rows to `enqueued`, which rings a head after commit.
    Parameters are named `<prefix>_...`.
    """
    name = type(command).command_name
    registered_command(name)
    key = command.job_key()
    if not key or len(key) > MAX_KEY_LENGTH:
        raise ValueError(f"job key must be 1 to {MAX_KEY_LENGTH} characters, got {key!r}")
    now = timezone.now()
    keys = CommandKey._meta.db_table
    active = ", ".join(f"'{status}'" for status in sorted(ACTIVE_STATUSES))
    insert, params = sqlbatch.insert_select(
        Command,
        {"key": key, "name": name, "params": command.to_params(), "status": CommandStatus.PENDING,
         "max_retries": type(command).max_retries, "not_before": now, "enqueued_at": now},
        f"k.key = %({prefix}_key)s",
        returning="id, wake_at",
        expressions={
            "seq": "k.next_seq",
            # A head is rung now (and again by the sweep later); a command behind others by its predecessor.
            "wake_at": f"CASE WHEN EXISTS (SELECT 1 FROM {Command._meta.db_table} c WHERE c.key = k.key"  # noqa: S608 - names are ours
                       f" AND c.status IN ({active}) AND c.seq < k.next_seq) THEN NULL ELSE %({prefix}_wake)s END",
        },
        source=f"{keys} k",
        prefix=f"{prefix}_",
    )
    params.update({f"{prefix}_key": key, f"{prefix}_wake": now + ring_stale_after()})
    numbered = (f"INSERT INTO {keys} (key, next_seq) VALUES (%({prefix}_key)s, 1)"  # noqa: S608 - table name is ours
                f" ON CONFLICT (key) DO UPDATE SET next_seq = {keys}.next_seq + 1")
    return [numbered, insert], params


def enqueued(command: XCommand, rows: list[tuple[Any, ...]]) -> None:
    """After `enqueue_statements` ran: ring the command once the caller's transaction commits if it is its key's head."""
    if not rows or rows[0][1] is None:
        return
    row = Command(pk=rows[0][0], key=command.job_key(), name=type(command).command_name, params=command.to_params())
    ring_on_commit(row)


def enqueue_many(commands: Sequence[XCommand]) -> list[Command]:
    """Enqueue many commands in a few statements (the periodic services queue hundreds at once).

    Same guarantees as `enqueue`, command by command: rows in the caller's transaction,
    sequence numbers in list order per key, heads rung after commit. Keys are numbered in
    sorted order so concurrent callers lock their key rows in the same order.
    """
    if not commands:
        return []
    now = timezone.now()
    counts: dict[str, int] = {}
    for command in commands:
        registered_command(type(command).command_name)
        key = command.job_key()
        if not key or len(key) > MAX_KEY_LENGTH:
            raise ValueError(f"job key must be 1 to {MAX_KEY_LENGTH} characters, got {key!r}")
        counts[key] = counts.get(key, 0) + 1
    keys = sorted(counts)
    table = CommandKey._meta.db_table
    with transaction.atomic():
        last: dict[str, int] = {}
        for first in range(0, len(keys), 500):
            chunk = keys[first:first + 500]
            with connection.cursor() as cursor:
                cursor.execute(
                    f"INSERT INTO {table} (key, next_seq) VALUES {', '.join(['(%s, %s)'] * len(chunk))} "  # noqa: S608
                    f"ON CONFLICT (key) DO UPDATE SET next_seq = {table}.next_seq + excluded.next_seq "
                    "RETURNING key, next_seq",
                    [value for key in chunk for value in (key, counts[key])],
                )
                last.update({str(key): int(seq) for key, seq in cursor.fetchall()})
        following = {key: last[key] - counts[key] + 1 for key in keys}  # the first new seq of each key
        busy = {
            key for key, lowest in Command.objects.filter(key__in=keys, status__in=ACTIVE_STATUSES)
            .values("key").annotate(lowest=Min("seq")).values_list("key", "lowest")
            if lowest < following[key]
        }
        rows = []
        for command in commands:
            key = command.job_key()
            seq = following[key]
            following[key] += 1
            is_head = key not in busy and seq == last[key] - counts[key] + 1
            rows.append(Command(
                key=key, seq=seq, name=type(command).command_name, params=command.to_params(),
                status=CommandStatus.PENDING, max_retries=type(command).max_retries, not_before=now,
                enqueued_at=now, wake_at=now + ring_stale_after() if is_head else None,
            ))
        created = Command.objects.bulk_create(rows)
        for row in created:
            if row.wake_at is not None:
                ring_on_commit(row)
    return created


def ring_on_commit(row: Command) -> None:
    """Publish the command's doorbell once the current transaction commits."""
    command_id, name, kwargs = row.pk, row.name, row.display_kwargs()
    transaction.on_commit(lambda: ring(command_id, name, kwargs))


def ring(command_id: int, name: str, display: dict[str, Any]) -> bool:
    """Send the Celery message that makes a worker try to run this command.

    Failure is not an error: the command is safe in the database and the recovery sweep
    rings it again once its `wake_at` passes.
    """
    try:
        task = registered_command(name).celery_task
        task.apply_async(args=[command_id], kwargs=display, queue="commands")
    except Exception as exc:  # the broker may be down; the outbox row keeps the work
        log.warning("doorbell for command %s (%s) not sent: %s; the sweep will ring it", command_id, name, exc)
        return False
    return True
