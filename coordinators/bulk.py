"""Writing many actions at once: COPY on PostgreSQL, bulk_create elsewhere.

Materialization writes actions in chunks of hundreds, each row carrying its resolved input
URIs and configuration. On PostgreSQL, COPY takes the rows without building one INSERT
statement per chunk through the ORM, several times faster for rows this size.
Uniqueness of (job, number) still holds: a duplicate fails the command's transaction, as
the constraint demands (materialization runs under the job's key, so none is expected).

`ActionWriter` streams: each action goes into the COPY as soon as it is made, so the
server stores rows while the next ones are planned (two cores work instead of one in
turn). It writes in the caller's transaction, so a failure anywhere rolls back every row
(ADR 0024); nothing else may use the connection while the COPY is open.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from operator import attrgetter
from types import TracebackType
from typing import Any

from django.db import connection, models

from coordinators.models import CoordinatorAction

Getter = Callable[[CoordinatorAction], Any]
#: pre_save implementations that only read the attribute (the date ones do without auto_now/auto_now_add).
_PLAIN_PRE_SAVE = frozenset({models.Field.pre_save, models.DateField.pre_save, models.DateTimeField.pre_save})


def _getter(field: models.Field[Any, Any]) -> Getter:
    """How a field's database value is read from a new action: what `field.pre_save(obj, add=True)` and,
    for JSON, `json.dumps` give, decided once per field instead of once per field of every row."""
    attname = field.attname
    encode = _encoder(field)
    if encode is not None:

        def as_json(obj: CoordinatorAction) -> Any:
            value = getattr(obj, attname)
            return None if value is None else encode(value)

        return as_json
    automatic = isinstance(field, models.DateField) and (field.auto_now or field.auto_now_add)
    if automatic or type(field).pre_save not in _PLAIN_PRE_SAVE:
        return lambda obj: field.pre_save(obj, True)  # sets and returns now (auto_now), or the field's own rule
    return attrgetter(attname)


def _encoder(field: models.Field[Any, Any]) -> Callable[[Any], str] | None:
    """How a value of the field is written by COPY: JSON text for a JSON field, else as it is (None)."""
    if isinstance(field, models.JSONField):
        encoder = field.encoder
        return lambda value: json.dumps(value, cls=encoder)
    return None


class ActionWriter:
    """Writes new actions in the current transaction: streamed into COPY on PostgreSQL, bulk_create elsewhere.

    Use as a context manager; `add` each action; the rows are written when the block ends
    without an error (on PostgreSQL, a failing block aborts the COPY and so the transaction).
    The COPY opens at the first action: a block that adds none costs no statement.
    """

    def __init__(self) -> None:
        self._pending: list[CoordinatorAction] = []
        self._stack = ExitStack()
        self._copy: Any = None
        self._getters: list[Getter] = []
        self._row: list[tuple[str, Callable[[Any], str] | None, Any]] | None = None

    def __enter__(self) -> ActionWriter:
        return self

    def add(self, action: CoordinatorAction) -> None:
        """Write (or, off PostgreSQL, queue) one new action."""
        if connection.vendor != "postgresql":
            self._pending.append(action)
            return
        if self._copy is None:
            fields = list(CoordinatorAction._meta.concrete_fields)
            self._getters = [_getter(field) for field in fields]
            quote = connection.ops.quote_name
            columns = ", ".join(quote(str(field.column)) for field in fields)
            statement = f"COPY {quote(CoordinatorAction._meta.db_table)} ({columns}) FROM STDIN"
            self._stack.enter_context(connection.wrap_database_errors)  # IntegrityError, not psycopg's own
            cursor = self._stack.enter_context(connection.cursor())
            self._copy = self._stack.enter_context(cursor.cursor.copy(statement))
        self._copy.write_row([getter(action) for getter in self._getters])

    def add_values(self, values: dict[str, Any]) -> None:
        """Write one new action given by field values (attribute names; the rest take their defaults).

        On PostgreSQL no model object is built: the row is the values, JSON fields encoded, and
        every other column's value taken once from a prototype action (defaults; `auto_now`
        stamps the writer's first row's time). Elsewhere it is `add(CoordinatorAction(**values))`.
        """
        if connection.vendor != "postgresql":
            self.add(CoordinatorAction(**values))
            return
        if self._row is None:
            prototype = CoordinatorAction(**values)
            self.add(prototype)  # opens the COPY; its row is written the usual way
            fields = list(CoordinatorAction._meta.concrete_fields)
            self._row = [
                (field.attname, _encoder(field), None)
                if field.attname in values
                else ("", None, getter(prototype))
                for field, getter in zip(fields, self._getters, strict=True)
            ]
            return
        row = []
        for name, encode, constant in self._row:
            if not name:
                row.append(constant)
            elif encode is None:
                row.append(values[name])
            else:
                value = values[name]
                row.append(None if value is None else encode(value))
        self._copy.write_row(row)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self._stack.__exit__(kind, error, trace)  # ends the COPY, or fails it with the error
        if kind is None and self._pending:
            CoordinatorAction.objects.bulk_create(self._pending)


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a chunk of actions is built (ADR 0024).

    A chunk makes hundreds of thousands of small objects that all live until the chunk is
    written, so every generation-0 collection scans them and promotes them for nothing; they
    hold no reference cycles and are freed by reference counting when the chunk ends. The
    collector is on again afterwards (as it was), and a chunk is bounded by
    COORD_MATERIALIZATION_CHUNK, so memory stays bounded.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def insert_actions(actions: Sequence[CoordinatorAction]) -> None:
    """Insert new actions in the current transaction (COPY on PostgreSQL)."""
    with ActionWriter() as writer:
        for action in actions:
            writer.add(action)
