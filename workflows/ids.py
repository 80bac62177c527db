"""Workflow job ids, Oozie style: `0000012-261123104647123-W` (a 7-digit number, the counter's epoch, W).

Many commands launch at once under different keys: the number comes from a PostgreSQL
sequence (no row lock held to the end of the launching transaction, so launches of
different jobs never wait on each other); SQLite, which has one writer anyway, counts in a
row of `IdCounter`.
"""

from __future__ import annotations

from django.db import connection
from django.utils import timezone

from workflows.models import WORKFLOW_ID_SUFFIX, IdCounter

COUNTER = "workflows"
SEQUENCE = "workflows_id_seq"

_epoch: str | None = None


def _counter() -> IdCounter:
    """The counter row (the migration writes it; recreated if someone emptied the table)."""
    stamp = timezone.now().strftime("%y%m%d%H%M%S%f")[:15]
    row, _ = IdCounter.objects.get_or_create(name=COUNTER, defaults={"epoch": stamp})
    return row


def epoch() -> str:
    """The counter's creation stamp, read once per process."""
    global _epoch
    if _epoch is None:
        _epoch = _counter().epoch
    return _epoch


def next_workflow_ids(count: int) -> list[str]:
    """`count` fresh workflow job ids, in increasing order."""
    if count <= 0:
        return []
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"SELECT nextval('{SEQUENCE}') FROM generate_series(1, %s)", [count])  # noqa: S608
            numbers = [int(row[0]) for row in cursor.fetchall()]
        else:
            table = IdCounter._meta.db_table
            cursor.execute(
                f"UPDATE {table} SET value = value + %s WHERE name = %s RETURNING value",  # noqa: S608
                [count, COUNTER],
            )
            row = cursor.fetchone()
            if row is None:  # the row is gone: start it again (SQLite has one writer at a time)
                _counter()
                cursor.execute(
                    f"UPDATE {table} SET value = value + %s WHERE name = %s RETURNING value",  # noqa: S608
                    [count, COUNTER],
                )
                row = cursor.fetchone()
            last = int(row[0])
            numbers = list(range(last - count + 1, last + 1))
    stamp = epoch()
    return [f"{number:07d}-{stamp}-{WORKFLOW_ID_SUFFIX}" for number in numbers]
