"""kernel.lookups: `in_constants` writes the code's status constants into the SQL, sorted, and selects what `__in` selects."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
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
