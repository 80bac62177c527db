"""Several SQL statements as one unit, in one round trip where the database allows it (the hot paths' raw SQL).

The worker's per-action path (claim, start, report, settle) is a handful of short statements;
through the ORM each costs a compile and a round trip, several times the work itself. Here
they are written once, with named parameters (`%(name)s`), and run:

- PostgreSQL: joined into one simple query (psycopg's client-side binding, Django's default),
  so the whole batch is one round trip and, outside a transaction, one implicit transaction
  (an error in any statement undoes them all). Inside the caller's transaction it is part of it.
- SQLite: one statement after another inside one transaction (there is no round trip to save).

Each statement sees what the earlier ones wrote, so a later one can act only if an earlier
one did (`WHERE EXISTS (...)` on the row it marked). Each statement's rows are returned. Values are adapted as Django adapts them (aware datetimes to the column's form);
`json_param` and `for_update` give the few fragments that differ between the two.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db import connection, transaction


def json_param(name: str) -> str:
    """The placeholder of a JSON value given as text (`json_value`), cast where the column is jsonb."""
    return f"CAST(%({name})s AS jsonb)" if connection.vendor == "postgresql" else f"%({name})s"


def json_value(value: Any) -> str:
    """A value for a `json_param` placeholder."""
    return json.dumps(value)


def for_update(*, skip_locked: bool = False) -> str:
    """` FOR UPDATE [SKIP LOCKED]` on PostgreSQL; nothing on SQLite, where the transaction holds the whole database."""
    if connection.vendor != "postgresql":
        return ""
    return " FOR UPDATE SKIP LOCKED" if skip_locked else " FOR UPDATE"


def _adapted(params: Mapping[str, Any]) -> dict[str, Any]:
    ops = connection.ops
    return {
        name: ops.adapt_datetimefield_value(value) if isinstance(value, datetime) else value
        for name, value in params.items()
    }


def run(statements: Sequence[str], params: Mapping[str, Any]) -> list[list[tuple[Any, ...]]]:
    """Run the statements as one unit (see the module); each statement's rows, in order (empty for those returning none)."""
    values = _adapted(params)
    results: list[list[tuple[Any, ...]]] = []
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(";\n".join(statements), values)
            raw = cursor.cursor
            while True:  # psycopg: one result set per statement, in order
                results.append([tuple(row) for row in raw.fetchall()] if raw.description else [])
                if not raw.nextset():
                    break
        return results
    with transaction.atomic(), connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement, values)
            results.append([tuple(row) for row in cursor.fetchall()] if cursor.description else [])
    return results
