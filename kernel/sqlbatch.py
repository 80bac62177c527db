"""Several SQL statements as one unit, in one round trip where the database allows it (the hot paths' raw SQL).

The worker's per-action path (claim, start, report, settle) is a handful of short statements;
through the ORM each costs a compile and a round trip, several times the work itself. Here
they are written once, with named parameters (`%(name)s`), and run:

- PostgreSQL: sent together in psycopg's pipeline mode, each statement with server-side
  binding, so the whole batch is one round trip and, outside a transaction, one implicit
  transaction (an error in any statement undoes them all; inside the caller's transaction it
  is part of it). Each statement is prepared on a connection's first run of it, so the server
  stops planning it again, which cost more than running it (ADR 0040);
  COMMAND_PREPARED_STATEMENTS=false (a pooler in transaction mode) turns that off here and in
  the command engine (`prepares`). Quoted constants are sent as parameters and the connection
  plans prepared statements generically (`plan_cache_mode`, set when it connects): a plan
  built for `status = 'RUNNING'` could otherwise pick a partial index on that status and read
  every running row to find one id.
- SQLite: one statement after another, in the caller's transaction (no savepoint: an error
  spoils it, as on PostgreSQL) or in one of their own (there is no round trip to save).

Each statement sees what the earlier ones wrote, so a later one can act only if an earlier
one did (`WHERE EXISTS (...)` on the row it marked). Each statement's rows are returned.
Values are adapted as Django adapts them (aware datetimes to the column's form);
`json_param` and `for_update` give the few fragments that differ between the two, and
`columns` and `load` read whole rows into model instances without a queryset's compile.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from datetime import datetime
from functools import cache, lru_cache
from typing import Any, TypeVar

import psycopg
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Model
from psycopg.types.string import StrDumper

M = TypeVar("M", bound=Model)


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
        return _run_pipelined(statements, values)
    # Inside the caller's transaction no savepoint: an error spoils the whole transaction, as on PostgreSQL.
    # One statement is a unit by itself.
    unit = transaction.atomic(savepoint=False) if len(statements) > 1 else nullcontext()
    with unit, connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement, values)
            results.append([tuple(row) for row in cursor.fetchall()] if cursor.description else [])
    return results


def _run_pipelined(statements: Sequence[str], values: dict[str, Any]) -> list[list[tuple[Any, ...]]]:
    """PostgreSQL: every statement sent before any answer is awaited (one sync), each on its own server-binding cursor."""
    connection.ensure_connection()
    raw = connection.connection
    prepare = prepares(raw)
    started = time.monotonic()
    with connection.wrap_database_errors:
        cursors = [_cursor(raw) for _ in statements]
        try:
            with raw.pipeline():
                with _begun_in_pipeline(raw):
                    for cursor, statement in zip(cursors, statements, strict=True):
                        text, names, constants = _server_form(statement)
                        cursor.execute(text, {**{name: values[name] for name in names}, **constants}, prepare=prepare)
            results = [[tuple(row) for row in cursor.fetchall()] if cursor.description else [] for cursor in cursors]
        finally:
            for cursor in cursors:
                cursor.close()
    if connection.queries_logged:  # DEBUG or a test's CaptureQueriesContext: the batch is one entry
        connection.queries_log.append({"sql": ";\n".join(statements), "time": f"{time.monotonic() - started:.3f}"})
    return results


@contextmanager
def _begun_in_pipeline(raw: psycopg.Connection[Any]) -> Iterator[None]:
    """A batch that opens the caller's transaction sends its BEGIN in the pipeline, before its statements.

    psycopg opens a transaction (Django's `atomic`) with BEGIN and a Sync whose answer it
    awaits before sending anything else: a round trip of its own, as long as the batch's. Here
    the BEGIN is the pipeline's first statement instead, while psycopg is told (its private
    flag, for these statements only) that the connection commits by itself so that it adds
    none. The server is then in the transaction block BEGIN opened, which psycopg sees after
    the Sync: the caller's COMMIT or ROLLBACK ends it as before. Outside a transaction, or in
    one already open, nothing changes. `tests/kernel/test_sqlbatch.py` reads the wire.
    """
    if raw.autocommit or raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        yield
        return
    raw._autocommit = True  # noqa: SLF001 - psycopg's setter refuses inside the block BEGIN opens
    try:
        begin = psycopg.Cursor(raw)
        begin.execute("BEGIN")
        begin.close()
        yield
    finally:
        raw._autocommit = False  # noqa: SLF001 - as above


def prepares(raw: psycopg.Connection[Any]) -> bool:
    """Whether statements passed `prepare=True` on this PostgreSQL connection are prepared (COMMAND_PREPARED_STATEMENTS).

    Django turns preparing off (for transaction-mode poolers) by leaving `prepare_threshold`
    unset; its own cursors bind on the client and never prepare, so setting it here enables
    preparing for the explicit `prepare=True` of these batches and of xcommands.sql only.
    """
    if not settings.COMMAND_PREPARED_STATEMENTS:
        return False
    if raw.prepare_threshold is None:
        raw.prepare_threshold = 2**31
    return True


def _cursor(raw: psycopg.Connection[Any]) -> psycopg.Cursor[Any]:
    """A server-binding cursor that sends strings as `text`.

    psycopg sends them untyped by default, and a parameter used in two places (a select list
    and a comparison with a varchar column) then gets two types deduced, which the server refuses.
    """
    cursor = psycopg.Cursor(raw)
    cursor.adapters.register_dumper(str, StrDumper)
    return cursor


#: A quoted SQL constant ('' is a quote inside it).
_CONSTANT = re.compile(r"'((?:[^']|'')*)'")


class Planned(str):
    """A statement whose quoted constants stay in its text, where its plan must see them.

    A partial index is used only when the statement's own conditions imply the index's
    predicate (`status IN ('a', 'b') AND NOT dispatched`): as parameters, a generic plan could
    not tell, and would read the table instead. Its `%(name)s` parameters are sent as usual.
    """


@lru_cache(maxsize=None, typed=True)  # typed: a `Planned` statement is not the same text unmarked
def _server_form(statement: str) -> tuple[str, tuple[str, ...], dict[str, str]]:
    """The statement as the server gets it: its `%(name)s` parameters, and its quoted constants made parameters too.

    A generic plan then never depends on a status written into the statement (see the module),
    except in a `Planned` statement, whose constants stay. Server-side binding takes only the
    parameters a statement names.
    """
    names = tuple(dict.fromkeys(name for name in re.findall(r"%\((\w+)\)s", statement)))
    if isinstance(statement, Planned):
        return str(statement), names, {}
    constants: dict[str, str] = {}

    def parameter(match: re.Match[str]) -> str:
        name = f"_c{len(constants)}"
        constants[name] = match.group(1).replace("''", "'")
        return f"%({name})s"

    text = _CONSTANT.sub(parameter, statement)
    return text, names, constants


def plan_generically(sender: Any, connection: Any, **kwargs: Any) -> None:
    """`connection_created`: a PostgreSQL connection plans its prepared statements once, for any values (see the module).

    Only the prepared statements change (these batches and the command engine's, xcommands.sql):
    the ORM binds its values into the query text.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET plan_cache_mode = force_generic_plan")


def columns(model: type[Model], alias: str) -> str:
    """The select list of every concrete column of `model` under `alias` (for `load`)."""
    return _columns(model, alias, connection.vendor)


@cache
def _columns(model: type[Model], alias: str, vendor: str) -> str:
    """`columns`, built once per model, alias and database kind (the hot paths ask on every run)."""
    return ", ".join(f"{alias}.{connection.ops.quote_name(str(field.column))}" for field in model._meta.concrete_fields)


def in_list(values: Sequence[Any], prefix: str) -> tuple[str, dict[str, Any]]:
    """`(%(<prefix>0)s, ...)` for an `IN` of these values (at least one), and its parameters."""
    if not values:
        raise ValueError("in_list: no value")
    params = {f"{prefix}{index}": value for index, value in enumerate(values)}
    return "(" + ", ".join(f"%({name})s" for name in params) + ")", params


def insert_select(model: type[Model], values: Mapping[str, Any], where: str, returning: str = "", *,
                  expressions: Mapping[str, str] | None = None, source: str = "",
                  prefix: str = "_row_") -> tuple[str, dict[str, Any]]:
    """An `INSERT ... SELECT ... WHERE where` of one `model` row: its statement and the parameters to add to the batch's.

    `values` by field name (a foreign key by its column's name, `workflow_id`, its value the
    key); every other column takes the field's default, so a column added to
    the model later is filled as the ORM would fill it. Values are prepared as the ORM saves
    them (JSON, datetimes), each a parameter named `<prefix><column>`. `expressions` gives
    columns (by name) an SQL expression instead, read when the statement runs (a number an
    earlier statement of the batch took), over the rows of `source` (a FROM clause) if given.
    """
    names, params, selected = [], {}, []
    computed = expressions or {}
    for field in model._meta.concrete_fields:
        names.append(connection.ops.quote_name(str(field.column)))
        if field.column in computed:
            selected.append(computed[str(field.column)])
            continue
        if field.primary_key and field.auto_created and field.name not in values and field.attname not in values:
            names.pop()  # an automatic key not given: the database numbers the row
            continue
        value = values[field.name] if field.name in values else values.get(field.attname, field.get_default())
        key = f"{prefix}{field.column}"
        params[key] = field.get_db_prep_save(value, connection)
        selected.append(f"%({key})s")
    table = connection.ops.quote_name(model._meta.db_table)
    rows = f" FROM {source}" if source else ""
    statement = f"INSERT INTO {table} ({', '.join(names)}) SELECT {', '.join(selected)}{rows} WHERE {where}"  # noqa: S608 - names from the model
    return statement + (f" RETURNING {returning}" if returning else ""), params


def insert_rows(instances: Sequence[Model], prefix: str = "_ins", where: str = "", *,
                expressions: Mapping[str, str] | None = None) -> tuple[list[str], dict[str, Any]]:
    """An INSERT of these unsaved rows of one model, as `bulk_create` writes them: its statements and parameters.

    Every concrete column but an automatic key, each value prepared as the ORM saves it, named
    `<prefix><row>_<column>`; the caller adds the parameters to its batch's. One statement for
    all the rows, or with `where` one `INSERT ... SELECT ... WHERE where` a row (each acts only
    if the condition holds when it runs: what an earlier statement wrote). `expressions` gives
    columns (by name) an SQL expression instead, the same for every row and read when the
    statement runs (the key of a row an earlier statement of the batch wrote).
    """
    if not instances:
        raise ValueError("insert_rows: no row")
    meta = type(instances[0])._meta
    fields = [field for field in meta.concrete_fields if not (field.primary_key and field.auto_created)]
    params: dict[str, Any] = {}
    rows = []
    for number, instance in enumerate(instances):
        keys = []
        for field in fields:
            if expressions and field.column in expressions:
                keys.append(expressions[str(field.column)])
                continue
            key = f"{prefix}{number}_{field.column}"
            params[key] = field.get_db_prep_save(getattr(instance, field.attname), connection)
            keys.append(f"%({key})s")
        rows.append(", ".join(keys))
    quote = connection.ops.quote_name
    into = f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(str(field.column)) for field in fields)})"
    if where:
        return [f"{into} SELECT {row} WHERE {where}" for row in rows], params
    return [f"{into} VALUES {', '.join(f'({row})' for row in rows)}"], params


def update_set(model: type[Model], values: Mapping[str, Any], now: datetime, prefix: str = "_set_") -> tuple[str, dict[str, Any]]:
    """The SET list of an UPDATE writing `values` (by field name) as `TouchingQuerySet.update` does, and its parameters.

    Values are prepared as the ORM saves them; an `auto_now` field ("last change") not named
    takes `now`, as the queryset's update gives it.
    """
    meta = model._meta
    named = dict(values)
    for field in meta.concrete_fields:
        if getattr(field, "auto_now", False) and field.name not in named and field.attname not in named:
            named[field.name] = now
    quote = connection.ops.quote_name
    sets, params = [], {}
    for name, value in named.items():
        target: Any = meta.get_field(name)
        key = f"{prefix}{target.column}"
        params[key] = target.get_db_prep_save(value, connection)
        sets.append(f"{quote(str(target.column))} = %({key})s")
    return ", ".join(sets), params


def load(model: type[M], values: Sequence[Any]) -> M:
    """An instance of `model` from a row of `columns(model, ...)`, its values converted as the ORM converts them."""
    converters = _converters(model, connection.vendor)
    converted = []
    for value, (functions, expression) in zip(values, converters, strict=True):
        for function in functions:
            value = function(value, expression, connection)
        converted.append(value)
    return model.from_db(connection.alias, [field.attname for field in model._meta.concrete_fields], converted)


def converted(model: type[Model], name: str, value: Any) -> Any:
    """One column's value as read (`name`, a concrete field of `model`), converted as the ORM converts it."""
    index = next(index for index, field in enumerate(model._meta.concrete_fields) if field.name == name)
    functions, expression = _converters(model, connection.vendor)[index]
    for function in functions:
        value = function(value, expression, connection)
    return value


@cache
def _converters(model: type[Model], vendor: str) -> list[tuple[list[Any], Any]]:
    """Per concrete field: the ORM's converters for a value read from this database (cached per model and vendor)."""
    found = []
    for field in model._meta.concrete_fields:
        expression = field.get_col(model._meta.db_table)
        found.append((connection.ops.get_db_converters(expression) + field.get_db_converters(connection), expression))
    return found


#: Rows one `update_many` statement writes (SQLite allows 32,766 parameters a statement).
UPDATE_CHUNK = 500


def update_many(model: type[Model], instances: Sequence[Model], fields: Sequence[str]) -> int:
    """Write `fields` of many rows in one UPDATE (a VALUES list joined on the key), as `save(update_fields=...)` each would.

    Values are prepared as the ORM prepares them for saving; on PostgreSQL each is cast to its
    column's type (a VALUES list has no column types of its own). No signals, no `auto_now`:
    the caller sets what changes. Rows matched.
    """
    if len(instances) > UPDATE_CHUNK:
        return sum(update_many(model, instances[start:start + UPDATE_CHUNK], fields)
                   for start in range(0, len(instances), UPDATE_CHUNK))
    if not instances:
        return 0
    meta = model._meta
    targets: list[Any] = [meta.get_field(name) for name in fields]
    quote = connection.ops.quote_name
    postgres = connection.vendor == "postgresql"
    names = ["k", *(f"v{index}" for index in range(len(targets)))]
    params: dict[str, Any] = {}
    rows = []
    for number, instance in enumerate(instances):
        values = [meta.pk.get_db_prep_save(instance.pk, connection)] + [
            field.get_db_prep_save(getattr(instance, field.attname), connection) for field in targets
        ]
        for name, value in zip(names, values, strict=True):
            params[f"{name}_{number}"] = value
        rows.append("(" + ", ".join(f"%({name}_{number})s" for name in names) + ")")

    # The VALUES list's columns: named on PostgreSQL, column1... on SQLite (which names them so).
    def column(index: int) -> str:
        return f"v.{names[index]}" if postgres else f"v.column{index + 1}"

    def column_value(index: int, field: Any) -> str:
        return f"CAST({column(index)} AS {field.db_type(connection)})" if postgres else column(index)

    table, key = quote(meta.db_table), quote(str(meta.pk.column))
    sets = ", ".join(f"{quote(str(field.column))} = {column_value(index + 1, field)}" for index, field in enumerate(targets))
    alias = f"v ({', '.join(names)})" if postgres else "v"
    statement = (
        f"UPDATE {table} SET {sets} FROM (VALUES {', '.join(rows)}) AS {alias}"  # noqa: S608 - names from the model, values are parameters
        f" WHERE {table}.{key} = {column_value(0, meta.pk)}"
    )
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return int(cursor.rowcount)
