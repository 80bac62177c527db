"""`bench scale`'s big phase is measured on a database kept as a service's is: vacuumed, analyzed, checkpointed.

Apart from tests/project/test_bench_scale.py (whose tests CI runs once, on SQLite) so that CI's
PostgreSQL pass runs it.
"""

from __future__ import annotations

import pytest
from django.db import connection

from coordinators.models import CoordinatorAction, CoordinatorJob, StatusChange
from kernel.models import StatusRecord, TaskTry
from tooling.benchmarks.scale import analyze
from workflows.models import WorkflowJob, WorkflowNode


@pytest.mark.django_db(transaction=True)  # VACUUM runs outside a transaction
def test_the_history_is_vacuumed_and_analyzed_before_the_big_phase() -> None:
    """PostgreSQL: every table the history fills is vacuumed and analyzed, then checkpointed, as a service's over a year."""
    if connection.vendor != "postgresql":
        pytest.skip("VACUUM: PostgreSQL (SQLite's write-ahead log is checkpointed instead)")
    tables = [model._meta.db_table for model in
              (CoordinatorJob, CoordinatorAction, WorkflowJob, WorkflowNode, TaskTry, StatusChange, StatusRecord)]
    checkpoints = "SELECT checkpoints_req FROM pg_stat_bgwriter"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT now(), ({checkpoints})")
        before, requested = cursor.fetchone()
    said: list[str] = []
    analyze(said.append)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT relname FROM pg_stat_user_tables WHERE relname = ANY(%s) AND last_vacuum >= %s"
                       " AND last_analyze >= %s", [tables, before, before])
        done = {row[0] for row in cursor.fetchall()}
        cursor.execute(checkpoints)
        assert cursor.fetchone()[0] > requested  # and the pages it dirtied written out before measuring
    assert done == set(tables) and said == []
