"""`field IN ('A', 'B')` with the code's constants written into the SQL: the condition of a partial index, usable on SQLite.

SQLite uses a partial index only when it can prove the query's WHERE implies the index's
condition, term by term: `"status" IN ('READY', 'WAITING')` in the query proves
`WHERE "status" IN ('READY', 'WAITING')` of the index, but Django's `status__in=[...]` is sent
as `"status" IN (%s, %s)` with bound values, which proves nothing, so such a query scans the
whole table however few rows it wants (ADR 0039). PostgreSQL plans with the values either way:
there this changes nothing.

`in_constants("status", ACTION_PENDING)` renders the values sorted (the order of the models'
`Q(status__in=sorted(...))` conditions: SQLite compares the lists element by element) and
one value as `= 'V'`, as Django writes `Q(status=V)`. The values are constants of the code,
never user input, and anything but a plain word is refused, so nothing can be injected.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import F, Lookup
from django.db.models.sql.compiler import SQLCompiler

#: What a constant may be: a status word (letters, digits, underscores), nothing SQL could read otherwise.
CONSTANT = re.compile(r"[A-Za-z0-9_]+")


def constant_literals(values: Iterable[object]) -> tuple[str, ...]:
    """The values as sorted, distinct plain words; ValueError for none, or for anything but a string of a plain word."""
    words: set[str] = set()
    for value in values:
        if not isinstance(value, str) or not CONSTANT.fullmatch(str(value)):
            raise ValueError(f"in_constants: {value!r} is not a plain constant word")
        words.add(str(value))  # a TextChoices member is its value
    if not words:
        raise ValueError("in_constants: no value (an empty IN list matches nothing; say so in the code instead)")
    return tuple(sorted(words))


class InConstants(Lookup):  # type: ignore[type-arg]
    """`lhs IN ('A', 'B')` (or `lhs = 'A'`) with the constants in the SQL text, no parameters for them."""

    lookup_name = "in_constants"
    prepare_rhs = False

    def __init__(self, lhs: Any, rhs: Iterable[object]) -> None:
        super().__init__(lhs, constant_literals(rhs))

    def get_prep_lookup(self) -> Any:
        """The words as given (checked in `__init__`): nothing to adapt, nothing to bind."""
        return self.rhs

    def as_sql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper) -> tuple[str, tuple[str | int, ...]]:
        """The column's SQL and its constants quoted, the column's parameters only."""
        lhs_sql, params = self.process_lhs(compiler, connection)
        words: tuple[str, ...] = self.rhs
        if len(words) == 1:
            return f"{lhs_sql} = '{words[0]}'", tuple(params)
        quoted = ", ".join(f"'{word}'" for word in words)
        return f"{lhs_sql} IN ({quoted})", tuple(params)


def in_constants(field: str, values: Iterable[object]) -> InConstants:
    """A filter `field IN (values)` with the values written into the SQL (see the module): for `filter()`, `exclude()`, `Q()`."""
    return InConstants(F(field), values)
