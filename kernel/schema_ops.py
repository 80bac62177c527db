"""Migration operations the ORM has no word for: dropping the single-column indexes Django made.

Django gives every indexed or primary-key `varchar` column a second index on PostgreSQL, with
`varchar_pattern_ops` (`<table>_<column>_<hash>_like`), for `LIKE 'prefix%'` queries. Nothing
here runs such a query on an id, yet each of those indexes is written on every update that
cannot be HOT (one that changes an indexed column, as a status change does). A foreign key's
own index is as useless when a composite index leads with its column. On the action path's
tables these were 4 of 10 and 5 of 12 indexes (ADR 0043).

Dropping them by name costs one statement each; an `AlterField` would rebuild the table on
SQLite, once per field.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import migrations


def _names(schema_editor: Any, columns: Iterable[tuple[str, str]], suffix: str) -> list[tuple[str, str, str]]:
    """(index name, table, column) as Django names the index of one column (its schema editors use this name)."""
    return [(schema_editor._create_index_name(table, [column], suffix=suffix), table, column) for table, column in columns]


def drop_column_indexes(
    *, indexed: Iterable[tuple[str, str]] = (), pattern: Iterable[tuple[str, str]] = ()
) -> migrations.RunPython:
    """A reversible operation dropping Django's indexes of single columns, each given as (table, column).

    `indexed`: columns whose `db_index` (or foreign key) index goes, with its PostgreSQL `_like`
    twin when it has one. `pattern`: columns (a primary key, say) that keep their index and lose
    only the `_like` one. Pair it with the `AlterField` in `SeparateDatabaseAndState`'s state.
    """
    indexed, pattern = tuple(indexed), tuple(pattern)

    def like_columns(schema_editor: Any) -> list[tuple[str, str, str]]:
        if schema_editor.connection.vendor != "postgresql":
            return []
        return _names(schema_editor, (*indexed, *pattern), "_like")

    def forward(apps: Any, schema_editor: Any) -> None:
        for name, _table, _column in [*_names(schema_editor, indexed, ""), *like_columns(schema_editor)]:
            schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(name)}")

    def backward(apps: Any, schema_editor: Any) -> None:
        quote = schema_editor.quote_name
        for name, table, column in _names(schema_editor, indexed, ""):
            schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {quote(name)} ON {quote(table)} ({quote(column)})")
        for name, table, column in like_columns(schema_editor):
            kind = _column_type(schema_editor, table, column)
            if kind in ("character varying", "text"):  # Django makes `_like` indexes of these only
                ops = "varchar_pattern_ops" if kind == "character varying" else "text_pattern_ops"
                schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {quote(name)} ON {quote(table)} ({quote(column)} {ops})")

    return migrations.RunPython(forward, backward, elidable=False)


def _column_type(schema_editor: Any, table: str, column: str) -> str:
    """A PostgreSQL column's data type as information_schema names it (`character varying`, `integer`)."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT data_type FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = %s AND column_name = %s",
            [table, column],
        )
        row = cursor.fetchone()
    return row[0] if row else ""
