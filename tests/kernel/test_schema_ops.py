"""The action path's tables carry no index another one makes useless, and kernel.schema_ops drops and restores them.

On PostgreSQL every index of a row is written when an update changes an indexed column (a status
change does), so an index that serves no query costs each action (ADR 0043).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps
from django.db import connection

from kernel.schema_ops import drop_column_indexes

pytestmark = pytest.mark.django_db(transaction=True)

HOT_MODELS = ["coordinators.CoordinatorAction", "coordinators.CoordinatorJob", "workflows.WorkflowJob", "workflows.WorkflowNode"]


def _indexes(table: str) -> dict[str, list[str]]:
    """Every index of a table (unique ones and the primary key included), by name: its columns in order."""
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, table)
    return {name: list(info["columns"]) for name, info in constraints.items() if info["index"] or info["primary_key"]}


@pytest.mark.parametrize("label", HOT_MODELS)
def test_no_index_is_covered_by_another(label: str) -> None:
    """No plain index's columns lead another full index, and PostgreSQL holds no `_like` index on these tables."""
    model = apps.get_model(label)
    table = model._meta.db_table
    partial = {index.name for index in model._meta.indexes if index.condition is not None}
    indexes = _indexes(table)
    assert indexes, table
    assert not [name for name in indexes if name.endswith("_like")], indexes
    covered = [
        (name, other)
        for name, columns in indexes.items()
        if name not in partial and not name.endswith("_pkey") and not name.startswith("sqlite_autoindex")
        for other, longer in indexes.items()
        if other != name and other not in partial and len(longer) > len(columns) and longer[: len(columns)] == columns
    ]
    assert covered == [], f"{table}: an index whose columns lead another full index: {covered}"


def test_drop_column_indexes_restores_and_drops_by_django_names() -> None:
    """Backwards it makes the indexes again (with the `_like` twin on PostgreSQL); forwards it drops them; only those."""
    operation = drop_column_indexes(
        indexed=[("coordinators_coordinatoraction", "job_id")], pattern=[("workflows_workflownode", "id")]
    )
    forward: Any = operation.code  # called as a migration calls them, with the app registry and a schema editor
    backward: Any = operation.reverse_code
    assert backward is not None
    before_actions, before_nodes = _indexes("coordinators_coordinatoraction"), _indexes("workflows_workflownode")
    with connection.schema_editor() as editor:
        backward(apps, editor)
    made_actions = set(_indexes("coordinators_coordinatoraction")) - set(before_actions)
    made_nodes = set(_indexes("workflows_workflownode")) - set(before_nodes)
    try:
        plain = [name for name in made_actions if not name.endswith("_like")]
        assert len(plain) == 1 and _indexes("coordinators_coordinatoraction")[plain[0]] == ["job_id"]
        if connection.vendor == "postgresql":
            assert {name.removesuffix("_like") for name in made_actions} == set(plain)
            assert len(made_actions) == 2 and len(made_nodes) == 1 and next(iter(made_nodes)).endswith("_like")
        else:
            assert len(made_actions) == 1 and made_nodes == set()
    finally:
        with connection.schema_editor() as editor:
            forward(apps, editor)
    assert _indexes("coordinators_coordinatoraction") == before_actions
    assert _indexes("workflows_workflownode") == before_nodes
