"""kernel.sqlbatch: statements run as one unit, each seeing what the earlier ones wrote; an error undoes them all."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext

from batches.models import BatchJob
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


def test_the_batch_is_one_logged_query_on_postgresql_and_one_per_statement_on_sqlite() -> None:
    """DEBUG's query log (and the tests' query counts) show a PostgreSQL batch as one entry."""
    with CaptureQueriesContext(connection) as queries:
        sqlbatch.run([INSERT, FOLLOW, COUNT], {"id": "d@x", "at": AT})
    executed = [query["sql"] for query in queries.captured_queries if "kernel_statusrecord" in query["sql"]]
    assert len(executed) == (1 if connection.vendor == "postgresql" else 3)


def _wire(tmp_path, action) -> list[list[str]]:
    """The protocol messages libpq sent (F) and received (B) while `action` ran: [direction, message, rest]."""
    trace = tmp_path / "libpq.trace"
    connection.ensure_connection()
    with trace.open("wb") as sink:
        connection.connection.pgconn.trace(sink.fileno())
        try:
            action()
        finally:
            connection.connection.pgconn.untrace()
    return [line.split("\t")[1:] for line in trace.read_text().splitlines()]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's wire protocol")
def test_postgresql_sends_every_statement_before_it_waits_for_any_answer(tmp_path) -> None:
    """One round trip: libpq's own trace shows all three statements and one Sync sent before the first answer."""
    messages = _wire(tmp_path, lambda: sqlbatch.run([INSERT, FOLLOW, COUNT], {"id": "e@x", "at": AT}))
    sent = [index for index, message in enumerate(messages) if message[0] == "F"]
    received = [index for index, message in enumerate(messages) if message[0] == "B"]
    assert [message[2] for message in messages if message[0] == "F" and message[2].startswith(("Execute", "Sync"))] == [
        "Execute", "Execute", "Execute", "Sync",
    ]
    assert max(sent) < min(received)
    assert StatusRecord.objects.filter(object_id="e@x").count() == 2


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's wire protocol")
def test_a_batch_that_opens_the_callers_transaction_sends_its_begin_in_the_same_round_trip(tmp_path) -> None:
    """BEGIN goes in the pipeline (no round trip of its own); the block stays open for the caller, who commits it."""

    def opened_by_the_batch() -> None:
        with transaction.atomic():
            sqlbatch.run([INSERT, FOLLOW], {"id": "b1@x", "at": AT})
            assert connection.connection.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
            StatusRecord.objects.create(kind="node", object_id="b1@x", to_status="KILLED", at=AT)

    messages = _wire(tmp_path, opened_by_the_batch)
    sent = [" ".join(message[2:]).strip() for message in messages if message[0] == "F"]
    first_answer = next(index for index, message in enumerate(messages) if message[0] == "B")
    before = [message[2].split(" ")[0] for message in messages[:first_answer] if message[0] == "F"]
    assert before.count("Execute") == 3 and before.count("Sync") == 1  # BEGIN and both statements, one Sync
    assert sent[0].startswith('Parse  "" "BEGIN"') and sum("BEGIN" in line for line in sent) == 1
    assert sent[-1] == 'Query  "COMMIT"'  # the caller's commit ends the block
    assert connection.connection.autocommit and connection.get_autocommit()  # Django set it back, as always
    assert list(StatusRecord.objects.filter(object_id="b1@x").order_by("id").values_list("to_status", flat=True)) == [
        "RUNNING", "OK", "KILLED",
    ]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's transaction status")
def test_a_failing_batch_that_opened_the_transaction_leaves_nothing_and_the_connection_usable() -> None:
    """The caller's rollback ends the block the batch's BEGIN opened; the next transaction starts clean."""
    with pytest.raises(DatabaseError), transaction.atomic():
        sqlbatch.run([INSERT, "SELECT * FROM no_such_table"], {"id": "b2@x", "at": AT})
    assert connection.connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert not StatusRecord.objects.filter(object_id="b2@x").exists()
    with transaction.atomic():
        sqlbatch.run([INSERT], {"id": "b3@x", "at": AT})
    assert StatusRecord.objects.filter(object_id="b3@x").count() == 1


@pytest.mark.skipif(connection.vendor != "postgresql", reason="server-side prepared statements")
def test_postgresql_prepares_a_batch_it_runs_again(tmp_path) -> None:
    """From a connection's second run of a batch the server no longer parses or plans it: only Bind and Execute go out."""
    sqlbatch.run([INSERT, FOLLOW, COUNT], {"id": "p0@x", "at": AT})
    messages = _wire(tmp_path, lambda: sqlbatch.run([INSERT, FOLLOW, COUNT], {"id": "p@x", "at": AT}))
    kinds = [message[2].split(" ")[0] for message in messages if message[0] == "F"]
    assert "Parse" not in kinds
    assert kinds.count("Execute") == 3
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%%kernel_statusrecord%%'")
        assert cursor.fetchone()[0] >= 3
    assert list(StatusRecord.objects.filter(object_id="p@x").values_list("to_status", flat=True).order_by("id")) == [
        "RUNNING", "OK",
    ]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="server-side prepared statements")
def test_prepared_statements_can_be_turned_off_for_a_transaction_mode_pooler(tmp_path, settings) -> None:
    """COMMAND_PREPARED_STATEMENTS=false: every run parses its statements again (nothing is left prepared on the server)."""
    settings.COMMAND_PREPARED_STATEMENTS = False
    connection.close()  # a new connection: nothing prepared on it yet
    sqlbatch.run([INSERT, FOLLOW, COUNT], {"id": "u0@x", "at": AT})
    messages = _wire(tmp_path, lambda: sqlbatch.run([INSERT, FOLLOW, COUNT], {"id": "u@x", "at": AT}))
    assert [message[2].split(" ")[0] for message in messages if message[0] == "F"].count("Parse") == 3
    assert StatusRecord.objects.filter(object_id="u@x").count() == 2


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's plan cache")
def test_constants_are_sent_as_parameters_and_plans_are_generic() -> None:
    """A plan made for one status value cannot pick a partial index on it (kernel.sqlbatch)."""
    text, names, constants = sqlbatch._server_form("SELECT 1 WHERE 'a''b' = %(x)s AND 'PREP' <> %(y)s AND %(x)s = 'z'")
    assert text == "SELECT 1 WHERE %(_c0)s = %(x)s AND %(_c1)s <> %(y)s AND %(x)s = %(_c2)s"
    assert names == ("x", "y")
    assert constants == {"_c0": "a'b", "_c1": "PREP", "_c2": "z"}
    connection.close()
    with connection.cursor() as cursor:
        cursor.execute("SHOW plan_cache_mode")
        assert cursor.fetchone()[0] == "force_generic_plan"


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


def test_insert_select_writes_a_row_as_the_orm_would_and_only_when_its_condition_holds() -> None:
    """Given values (JSON, times, a foreign key by its column) and the model's defaults for the rest; a false WHERE writes nothing."""
    workflow = WorkflowJob.objects.create(
        id="0000003-261127000000000-W", app_name="a", app_path="task:examples.noop", status="RUNNING",
        created_at=AT, started_at=AT,
    )
    values = {"workflow_id": workflow.id, "name": "j", "type": ":JOIN:", "status": "RUNNING", "started_at": AT,
              "arrivals": 1, "spec": {"a": [1]}}
    absent = "NOT EXISTS (SELECT 1 FROM workflows_workflownode WHERE id = %(wanted)s)"
    statement, params = sqlbatch.insert_select(WorkflowNode, {**values, "id": f"{workflow.id}@j"}, absent,
                                               returning="arrivals")
    assert sqlbatch.run([statement], {**params, "wanted": f"{workflow.id}@j"}) == [[(1,)]]
    assert sqlbatch.run([statement], {**params, "wanted": f"{workflow.id}@j"}) == [[]]  # there now: nothing
    orm = WorkflowNode.objects.create(id=f"{workflow.id}@k", workflow=workflow, name="j", type=":JOIN:",
                                      status="RUNNING", started_at=AT, arrivals=1, spec={"a": [1]})
    written = WorkflowNode.objects.get(pk=f"{workflow.id}@j")
    fields = [field.attname for field in WorkflowNode._meta.concrete_fields if field.attname != "id"]
    assert [getattr(written, name) for name in fields] == [getattr(orm, name) for name in fields]


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


def test_a_planned_statement_keeps_its_constants_and_the_same_text_unmarked_does_not() -> None:
    """`Planned`: constants stay in the text the server plans (a partial index's condition); the cache tells the two apart."""
    text = "SELECT 1 FROM kernel_statusrecord WHERE to_status IN ('OK', 'FAILED') AND object_id = %(id)s"
    assert sqlbatch._server_form(sqlbatch.Planned(text)) == (text, ("id",), {})
    assert sqlbatch._server_form(text)[2] == {"_c0": "OK", "_c1": "FAILED"}
    assert sqlbatch.run([sqlbatch.Planned(text)], {"id": "none"}) == [[]]


def status_row(object_id: str, to: str) -> StatusRecord:
    return StatusRecord(kind="node", object_id=object_id, parent_id="p", from_status="PREP", to_status=to, at=AT,
                        by="test", reason="why 'quoted'")


def test_insert_rows_writes_unsaved_rows_as_bulk_create_would() -> None:
    """One INSERT of several rows, each value as the ORM saves it; read back equal to the instances."""
    rows = [status_row("r@x", "RUNNING"), status_row("r@x", "OK")]
    statements, params = sqlbatch.insert_rows(rows, prefix="_s")
    assert len(statements) == 1 and "id" not in statements[0].split("(")[1].split(")")[0].replace('"', "").split(", ")
    sqlbatch.run(statements, params)
    stored = list(StatusRecord.objects.filter(object_id="r@x").order_by("id").values_list(
        "kind", "parent_id", "from_status", "to_status", "at", "by", "reason"))
    assert stored == [("node", "p", "PREP", to, AT, "test", "why 'quoted'") for to in ("RUNNING", "OK")]
    with pytest.raises(ValueError, match="no row"):
        sqlbatch.insert_rows([])


def test_insert_rows_with_a_condition_writes_each_row_only_where_it_holds() -> None:
    """`where`: an INSERT ... SELECT a row, acting only if the condition holds when it runs (what an earlier statement wrote)."""
    where = "EXISTS (SELECT 1 FROM kernel_statusrecord WHERE object_id = %(id)s AND to_status = 'RUNNING')"
    statements, params = sqlbatch.insert_rows([status_row("w@x", "OK"), status_row("w@x", "FAILED")], where=where)
    assert len(statements) == 2
    sqlbatch.run(statements, {**params, "id": "w@x"})
    assert not StatusRecord.objects.filter(object_id="w@x").exists()
    sqlbatch.run([INSERT, *statements], {**params, "id": "w@x", "at": AT})
    assert sorted(StatusRecord.objects.filter(object_id="w@x").values_list("to_status", flat=True)) == [
        "FAILED", "OK", "RUNNING"]


def test_update_set_prepares_values_as_the_orm_and_touches_the_last_change() -> None:
    """JSON and datetimes prepared for the database; an `auto_now` field not named takes `now`, a named one keeps its value."""
    now = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)
    sets, params = sqlbatch.update_set(BatchJob, {"history": [{"a": 1}], "status": "notify"}, now)
    quote = connection.ops.quote_name
    assert sets == (f"{quote('history')} = %(_set_history)s, {quote('status')} = %(_set_status)s,"
                    f" {quote('last_modified')} = %(_set_last_modified)s")
    field = BatchJob._meta.get_field("last_modified")
    assert params["_set_last_modified"] == field.get_db_prep_save(now, connection)
    assert params["_set_status"] == "notify"
    earlier = datetime(2026, 1, 1, tzinfo=UTC)
    _, named = sqlbatch.update_set(BatchJob, {"last_modified": earlier}, now)
    assert named == {"_set_last_modified": field.get_db_prep_save(earlier, connection)}


def test_converted_reads_one_column_as_the_orm_does() -> None:
    """A JSON column read raw comes back decoded, as the queryset gives it."""
    WorkflowJob.objects.create(id="0000002-261127000000000-W", app_name="a", app_path="task:examples.noop",
                               configuration={"k": ["v", 1]}, created_at=AT)
    with connection.cursor() as cursor:
        cursor.execute("SELECT configuration FROM workflows_workflowjob WHERE id = %s", ["0000002-261127000000000-W"])
        raw = cursor.fetchone()[0]
    assert sqlbatch.converted(WorkflowJob, "configuration", raw) == {"k": ["v", 1]}
