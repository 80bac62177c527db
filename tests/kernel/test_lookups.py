"""kernel.lookups: `in_constants` writes the code's status constants into the SQL, sorted, and selects what `__in` selects."""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.db import OperationalError, connection
from django.db.models import Q

from coordinators.choices import ACTION_ACTIVE, ACTION_PENDING, ACTION_TERMINAL, ActionStatus
from coordinators.models import CoordinatorAction
from kernel.lookups import in_constants
from tests.coordinators.api.factories import bulk_actions, bulk_jobs


def test_the_constants_are_written_sorted_and_bind_nothing() -> None:
    """The values appear quoted in the SQL in sorted order (the partial indexes' order), with no parameter for them."""
    query = CoordinatorAction.objects.filter(in_constants("status", {ActionStatus.WAITING, ActionStatus.READY})).query
    sql, params = query.sql_with_params()
    assert "\"coordinators_coordinatoraction\".\"status\" IN ('READY', 'WAITING')" in sql
    assert params == ()


def test_one_value_is_an_equality_as_django_writes_a_one_status_condition() -> None:
    """A single constant renders `= 'V'` (the form of `Q(status=V)` in an index condition); duplicates collapse."""
    sql, params = CoordinatorAction.objects.filter(in_constants("status", ["WAITING", "WAITING"])).query.sql_with_params()
    assert "\"coordinators_coordinatoraction\".\"status\" = 'WAITING'" in sql
    assert " IN (" not in sql and params == ()


def test_the_columns_own_parameters_still_bind() -> None:
    """Other terms of the same filter keep their bound parameters, in order."""
    sql, params = CoordinatorAction.objects.filter(in_constants("status", ACTION_ACTIVE), job_id="j-1").query.sql_with_params()
    assert "IN ('RUNNING', 'SUBMITTED', 'SUSPENDED')" in sql
    assert params == ("j-1",)


@pytest.mark.parametrize(
    "values",
    [
        pytest.param(["WAITING", "x') OR 1=1 --"], id="quote-and-sql"),
        pytest.param(["WAIT ING"], id="space"),
        pytest.param(["WAITING'"], id="lone-quote"),
        pytest.param([""], id="empty-word"),
        pytest.param([], id="no-value"),
        pytest.param([1], id="not-a-string"),
        pytest.param([None], id="none"),
    ],
)
def test_anything_but_plain_words_is_refused(values: list[Any]) -> None:
    """Only strings of letters, digits and underscores are written into SQL: nothing else can be injected."""
    with pytest.raises(ValueError, match="in_constants"):
        in_constants("status", values)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "statuses",
    [
        pytest.param(ACTION_PENDING, id="pending"),
        pytest.param(ACTION_ACTIVE, id="active"),
        pytest.param(ACTION_TERMINAL, id="terminal"),
        pytest.param(frozenset({ActionStatus.KILLED}), id="one"),
    ],
)
def test_filter_exclude_and_q_select_what_in_selects(statuses: frozenset[str]) -> None:
    """Over actions of every status, `in_constants` selects (and excludes, and ORs) exactly the rows `__in` does."""
    job = bulk_jobs(User.objects.create_user("lookups"), 1)[0]
    bulk_actions(job, 3 * len(ActionStatus.values), statuses=tuple(ActionStatus.values))
    actions = CoordinatorAction.objects.order_by("pk")

    def ids(queryset: Any) -> list[str]:
        return list(queryset.values_list("pk", flat=True))

    chosen = ids(actions.filter(in_constants("status", statuses)))
    assert chosen == ids(actions.filter(status__in=sorted(statuses)))
    assert 0 < len(chosen) < actions.count()
    assert ids(actions.exclude(in_constants("status", statuses))) == ids(actions.exclude(status__in=sorted(statuses)))
    either = Q(in_constants("status", statuses)) | Q(number=1)
    assert ids(actions.filter(either)) == ids(actions.filter(Q(status__in=sorted(statuses)) | Q(number=1)))


def _status_list_indexes() -> list[Any]:
    """Every partial index of the project whose condition is a `status IN (...)` term (alone or ANDed with others)."""
    found = []
    for model in apps.get_models():
        for index in model._meta.indexes:
            condition = index.condition
            if condition is None or condition.negated or condition.connector != "AND":
                continue
            terms: dict[str, Any] = dict(child for child in condition.children if isinstance(child, tuple))
            if "status__in" in terms:
                found.append(pytest.param(model, index.name, terms, id=index.name))
    return found


def _forced_plan(queryset: Any, index: str) -> str:
    """SQLite's plan of the queryset made to read `index` (INDEXED BY), or its error where the index cannot serve it."""
    sql, params = queryset.query.sql_with_params()
    table = f'"{queryset.model._meta.db_table}"'
    assert sql.count(f"FROM {table}") == 1, sql
    try:
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN QUERY PLAN " + sql.replace(f"FROM {table}", f'FROM {table} INDEXED BY "{index}"'), params)
            return " | ".join(str(row[-1]) for row in cursor.fetchall())
    except OperationalError as error:
        return str(error)


@pytest.mark.skipif(connection.vendor != "sqlite", reason="reads SQLite's query plans")
@pytest.mark.django_db
@pytest.mark.parametrize(("model", "index", "terms"), _status_list_indexes())
def test_every_status_list_partial_index_can_serve_in_constants_and_none_can_serve_bound_parameters(
    model: Any, index: str, terms: dict[str, Any],
) -> None:
    """A guard for new indexes: a query repeating the index's own condition with `in_constants` can read it (SQLite's
    INDEXED BY), the same query with `status__in` cannot. An index whose list is not sorted would fail here."""
    others = {name: value for name, value in terms.items() if name != "status__in"}
    with_constants = model.objects.filter(in_constants("status", terms["status__in"]), **others).values("pk")
    with_bound = model.objects.filter(status__in=terms["status__in"], **others).values("pk")
    assert f"INDEX {index}" in _forced_plan(with_constants, index)
    assert _forced_plan(with_bound, index) == "no query solution"


def test_the_indexes_the_hot_queries_rely_on_are_guarded() -> None:
    """The partial indexes the dashboard, purge and recoveries read through `in_constants` are among those checked above."""
    names = {param.id for param in _status_list_indexes()}
    assert {"coord_action_check_idx", "coord_action_launched_idx", "coord_action_ended_idx", "xcmd_lease_idx"} <= names
