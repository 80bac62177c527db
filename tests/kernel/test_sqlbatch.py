"""kernel.sqlbatch: statements run as one unit, each seeing what the earlier ones wrote; an error undoes them all."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext

from kernel import sqlbatch
from kernel.models import StatusRecord
from workflows.models import WorkflowJob, WorkflowNode

pytestmark = pytest.mark.django_db(transaction=True)

AT = datetime(2026, 11, 27, 10, 0, 0, 123456, tzinfo=UTC)
INSERT = (
    "INSERT INTO kernel_statusrecord (kind, object_id, parent_id, from_status, to_status, at, by, reason)"
    " VALUES ('node', %(id)s, '', 'PREP', 'RUNNING', %(at)s, 'test', '')"
)
# Acts only if the row the first statement wrote is there, found by its exact time (as the claim's statements do).
FOLLOW = (
    "INSERT INTO kernel_statusrecord (kind, object_id, parent_id, from_status, to_status, at, by, reason)"
    " SELECT 'node', %(id)s, '', 'RUNNING', 'OK', %(at)s, 'test', '' WHERE EXISTS ("
    "SELECT 1 FROM kernel_statusrecord WHERE object_id = %(id)s AND to_status = 'RUNNING' AND at = %(at)s)"
)
COUNT = "SELECT count(*) FROM kernel_statusrecord WHERE object_id = %(id)s"


def test_each_statement_sees_the_earlier_ones_and_answers_its_rows() -> None:
    """A later statement acts on what an earlier one wrote (an aware datetime matched exactly); every statement's rows come back."""
    results = sqlbatch.run([INSERT, FOLLOW, COUNT], {"id": "a@x", "at": AT})
    assert results == [[], [], [(2,)]]
    assert list(StatusRecord.objects.filter(object_id="a@x").order_by("id").values_list("to_status", "at")) == [
        ("RUNNING", AT), ("OK", AT),
    ]
    # Without the first statement's row, the second does nothing.
    assert sqlbatch.run([FOLLOW, COUNT], {"id": "b@x", "at": AT}) == [[], [(0,)]]


def test_an_error_in_any_statement_undoes_them_all() -> None:
    """One unit: a failing last statement leaves nothing of the earlier ones."""
    with pytest.raises(DatabaseError):
        sqlbatch.run([INSERT, FOLLOW, "SELECT * FROM no_such_table"], {"id": "c@x", "at": AT})
    assert not StatusRecord.objects.filter(object_id="c@x").exists()


def test_postgresql_sends_the_batch_in_one_round_trip() -> None:
    """On PostgreSQL the statements are one query (one round trip); SQLite runs them one by one in a transaction."""
    with CaptureQueriesContext(connection) as queries:
        sqlbatch.run([INSERT, FOLLOW, COUNT], {"id": "d@x", "at": AT})
    executed = [query["sql"] for query in queries.captured_queries if "kernel_statusrecord" in query["sql"]]
    assert len(executed) == (1 if connection.vendor == "postgresql" else 3)


def test_json_and_locking_fragments_follow_the_database() -> None:
    """jsonb casts and FOR UPDATE only where PostgreSQL needs them."""
    postgres = connection.vendor == "postgresql"
    assert sqlbatch.json_param("h") == ("CAST(%(h)s AS jsonb)" if postgres else "%(h)s")
    assert sqlbatch.for_update(skip_locked=True) == (" FOR UPDATE SKIP LOCKED" if postgres else "")
    assert sqlbatch.json_value([{"a": 1}]) == '[{"a": 1}]'


def test_load_reads_a_row_as_the_orm_reads_it() -> None:
    """`columns` + `load`: the same values (JSON decoded, aware datetimes) as a queryset, and the status it was loaded with."""
    workflow = WorkflowJob.objects.create(
        id="0000001-261127000000000-W", app_name="a", app_path="task:examples.noop", configuration={"k": "v"},
        status="RUNNING", created_at=AT, started_at=AT,
    )
    WorkflowNode.objects.create(
        id=f"{workflow.id}@task", workflow=workflow, name="task", task_name="examples.noop", status="PREP",
        task_ids=["t1"], history=[{"attempt": 1}], spec={"a": [1, 2]}, dispatched_at=AT,
    )
    row = sqlbatch.run([
        f"SELECT {sqlbatch.columns(WorkflowNode, 'n')} FROM workflows_workflownode n WHERE n.id = %(id)s",  # noqa: S608
    ], {"id": f"{workflow.id}@task"})[0][0]
    loaded = sqlbatch.load(WorkflowNode, row)
    expected = WorkflowNode.objects.get(pk=f"{workflow.id}@task")
    fields = [field.attname for field in WorkflowNode._meta.concrete_fields]
    assert [getattr(loaded, name) for name in fields] == [getattr(expected, name) for name in fields]
    assert loaded.dispatched_at == AT and loaded.history == [{"attempt": 1}]
    loaded.transition_to("RUNNING")
    loaded.save(update_fields=["status"])  # recorded from the status it was loaded with
    assert StatusRecord.objects.filter(object_id=loaded.id, from_status="PREP", to_status="RUNNING").exists()


def test_update_many_writes_each_row_its_own_values() -> None:
    """One UPDATE for many rows: JSON, times, NULLs and numbers each land in their row, other rows and fields untouched."""
    workflow = WorkflowJob.objects.create(
        id="0000002-261127000000000-W", app_name="a", app_path="task:examples.noop", status="RUNNING",
        created_at=AT, started_at=AT,
    )
    nodes = [
        WorkflowNode.objects.create(id=f"{workflow.id}@n{i}", workflow=workflow, name=f"n{i}", status="PREP",
                                    dispatched_at=AT, error_message="kept")
        for i in range(3)
    ]
    for i, node in enumerate(nodes[:2]):
        node.history = [{"attempt": i, "note": "ü'\""}]
        node.dispatches = 10 + i
        node.dispatched_at = None if i else AT.replace(second=i + 5)
        node.error_message = f"changed {i}"  # not among the fields written: stays
    assert sqlbatch.update_many(WorkflowNode, nodes[:2], ["history", "dispatches", "dispatched_at"]) == 2
    stored = {n.name: n for n in WorkflowNode.objects.filter(workflow=workflow)}
    assert (stored["n0"].history, stored["n0"].dispatches, stored["n0"].dispatched_at) == (
        [{"attempt": 0, "note": "ü'\""}], 10, AT.replace(second=5))
    assert (stored["n1"].history, stored["n1"].dispatches, stored["n1"].dispatched_at) == ([{"attempt": 1, "note": "ü'\""}], 11, None)
    assert (stored["n2"].history, stored["n2"].dispatches, stored["n2"].dispatched_at) == ([], 0, AT)
    assert {n.error_message for n in stored.values()} == {"kept"}
