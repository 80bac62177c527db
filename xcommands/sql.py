"""The engine's hot paths as single SQL statements (PostgreSQL and SQLite >= 3.35).

The ORM would need four statements and a transaction to claim a command; here a claim is
one UPDATE whose WHERE clause checks head-of-key and due-ness and whose RETURNING clause
hands back what the worker needs. Row locking makes concurrent claims of one command
safe: the loser re-evaluates the WHERE clause after the winner commits and matches nothing.

On PostgreSQL these statements run as server-side prepared statements (planned once per
connection): a command's claim and completion are four short statements, and planning
them each time would cost as much as running them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from kernel.sqlbatch import prepares
from xcommands.choices import ACTIVE_STATUSES, CommandStatus

TABLE = "xcommands_command"
KEY_TABLE = "xcommands_commandkey"
_ACTIVE = ", ".join(f"'{status}'" for status in sorted(ACTIVE_STATUSES))


def _ts(value: datetime) -> Any:
    """A datetime as the backend stores it (naive UTC text on SQLite, timestamptz on PostgreSQL)."""
    return connection.ops.adapt_datetimefield_value(value)


def _json_param() -> str:
    return "%s::jsonb" if connection.vendor == "postgresql" else "%s"


def _execute(statement: str, params: Sequence[Any]) -> tuple[tuple[Any, ...] | None, int]:
    """Run one statement; its first row (if it returns rows) and its row count.

    PostgreSQL: through the driver's server-side binding cursor with `prepare=True`, inside
    Django's connection and transaction, its errors mapped to Django's as usual.
    """
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(statement, params)
            row = cursor.fetchone() if cursor.description else None
            return row, cursor.rowcount
    import psycopg  # noqa: PLC0415 - only PostgreSQL deployments have it

    connection.ensure_connection()
    raw = connection.connection
    prepare = prepares(raw)
    with connection.wrap_database_errors, psycopg.Cursor(raw) as cursor:
        cursor.execute(statement, params, prepare=prepare)
        row = cursor.fetchone() if cursor.description else None
        return row, cursor.rowcount


def _json(value: Any) -> Any:
    if isinstance(value, str | bytes):
        return json.loads(value)
    return value


CLAIM_SQL = f"""
UPDATE {TABLE} SET
    fencing_token = fencing_token + 1,
    lease_owner = %s,
    lease_expires_at = %s,
    started_at = COALESCE(started_at, %s),
    wake_at = NULL,
    attempts = CASE WHEN status = '{CommandStatus.PENDING}' THEN attempts + 1 ELSE attempts END,
    status = CASE WHEN status = '{CommandStatus.PENDING}' THEN '{CommandStatus.RUNNING}' ELSE status END
WHERE id = %s
  AND ((status = '{CommandStatus.PENDING}' AND not_before <= %s)
       OR (status = '{CommandStatus.ROLLING_BACK}' AND lease_expires_at IS NULL))
  AND NOT EXISTS (
      SELECT 1 FROM {TABLE} AS earlier
      WHERE earlier.key = {TABLE}.key AND earlier.seq < {TABLE}.seq AND earlier.status IN ({_ACTIVE})
  )
RETURNING key, name, params, fencing_token, attempts, max_retries, status, last_error, history
"""  # noqa: S608 - only constants are interpolated


def claim(command_id: int, owner: str, now: datetime, lease_until: datetime) -> dict[str, Any] | None:
    """Lease the command if it is the due head of its key; its row, or None."""
    row, _count = _execute(CLAIM_SQL, [owner, _ts(lease_until), _ts(now), command_id, _ts(now)])
    return None if row is None else _claimed(command_id, row)


CLAIM_NEXT_SQL = f"""
UPDATE {TABLE} SET
    fencing_token = fencing_token + 1,
    lease_owner = %s,
    lease_expires_at = %s,
    started_at = COALESCE(started_at, %s),
    wake_at = NULL,
    attempts = attempts + 1,
    status = '{CommandStatus.RUNNING}'
WHERE id = (
    SELECT id FROM {TABLE} WHERE key = %s AND status IN ({_ACTIVE}) ORDER BY seq LIMIT 1
) AND status = '{CommandStatus.PENDING}' AND not_before <= %s AND name = %s
RETURNING id, key, name, params, fencing_token, attempts, max_retries, status, last_error, history
"""  # noqa: S608


def claim_next_head(
    key: str, name: str, owner: str, now: datetime, lease_until: datetime
) -> dict[str, Any] | None:
    """Lease the key's head if it is a due PENDING command named `name`; its row, or None.

    Called by the completion of the key's previous head, in its transaction and under the
    key row's lock: nobody else can claim this head before that transaction commits.
    """
    row, _count = _execute(
        CLAIM_NEXT_SQL, [owner, _ts(lease_until), _ts(now), key, _ts(now), name]
    )
    return None if row is None else _claimed(int(row[0]), row[1:])


def _claimed(command_id: int, row: Sequence[Any]) -> dict[str, Any]:
    key, name, params, token, attempts, max_retries, status, last_error, history = row
    return {
        "id": command_id,
        "key": key,
        "name": name,
        "params": _json(params),
        "token": int(token),
        "attempts": int(attempts),
        "max_retries": int(max_retries),
        "status": status,
        "last_error": last_error,
        "history": list(_json(history) or []),
    }


def finish(
    command_id: int,
    token: int,
    leased_status: str,
    *,
    key: str,
    status: str,
    now: datetime,
    history: list[dict[str, Any]],
    result: Any,
    last_error: str | None,
) -> bool:
    """Fenced completion: True when the row still carried our token and leased status.

    It also takes the key row's lock for the rest of the transaction (see `lock_key`): on
    PostgreSQL within the same statement, on SQLite the IMMEDIATE transaction holds it.
    """
    error_sql = "%s" if last_error is not None else "last_error"
    params: list[Any] = [status, _ts(now), json.dumps(history), json.dumps(result)]
    if last_error is not None:
        params.append(last_error)
    params += [command_id, token, leased_status]
    sql = (
        f"UPDATE {TABLE} SET status = %s, finished_at = %s, lease_owner = '', "  # noqa: S608
        f"lease_expires_at = NULL, wake_at = NULL, history = {_json_param()}, "
        f"result = {_json_param()}, last_error = {error_sql} "
        "WHERE id = %s AND fencing_token = %s AND status = %s"
    )
    if connection.vendor == "postgresql":
        # Lock the key row before the next statement reads the key's next head (a fresh
        # snapshot, taken after the lock): an enqueue of the key then either committed
        # before (and is seen) or waits for this transaction (and sees it finished).
        sql += f" AND EXISTS (SELECT 1 FROM {KEY_TABLE} WHERE key = %s FOR UPDATE)"  # noqa: S608
        params.append(key)
    _row, count = _execute(sql, params)
    return count == 1


def lock_key(key: str) -> None:
    """Take the key row's lock for the rest of the transaction (orders completion against enqueues).

    SQLite needs nothing: its IMMEDIATE transactions already hold the database write lock.
    """
    if connection.vendor == "sqlite":
        return
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {KEY_TABLE} WHERE key = %s FOR UPDATE", [key])  # noqa: S608


NEXT_HEAD_SQL = f"""
UPDATE {TABLE} SET wake_at = CASE WHEN not_before > %s THEN not_before ELSE %s END
WHERE id = (
    SELECT id FROM {TABLE} WHERE key = %s AND status IN ({_ACTIVE}) ORDER BY seq LIMIT 1
) AND status = '{CommandStatus.PENDING}'
RETURNING id, name, not_before, params
"""  # noqa: S608


def wake_next_head(key: str, now: datetime, ring_by: datetime) -> dict[str, Any] | None:
    """Set the wake time of the key's head if it is pending; the head's row, or None."""
    row, _count = _execute(NEXT_HEAD_SQL, [_ts(now), _ts(ring_by), key])
    if row is None:
        return None
    command_id, name, not_before, params = row
    return {"id": int(command_id), "name": name, "not_before": _aware(not_before), "params": _json(params)}


def _aware(value: Any) -> datetime:
    """A datetime read by raw SQL, made aware (SQLite hands back text or naive UTC)."""
    if isinstance(value, str):
        parsed = parse_datetime(value)
        if parsed is None:
            raise ValueError(f"unreadable timestamp {value!r}")
        value = parsed
    if not isinstance(value, datetime):
        raise TypeError(f"expected a timestamp, got {value!r}")
    stamp: datetime = value
    return stamp.replace(tzinfo=UTC) if timezone.is_naive(stamp) else stamp
