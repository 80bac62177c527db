"""On SQLite the dashboard, the purge pass and the recovery sweeps read the history tables through their partial indexes.

SQLite takes a partial index only when the query's WHERE repeats the index's condition, and
Django's `status IN (%s, %s)` with bound values repeats nothing, so those queries scanned
every action (ADR 0039). Each test runs the real code, records the SQL it sends with its
parameters, and asks SQLite for the plan of exactly that: the partial index is named, and
no history table is scanned whole.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.db.models import Count
from django.test import Client
from django.utils import timezone

from coordinators.choices import ACTION_ACTIVE
from coordinators.models import CoordinatorAction
from statusservice.coordinators import recover_launches
from statusservice.purge import Policy, purge
from xcommands.recovery import expire_leases

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's planner: PostgreSQL binds and plans with the values"),
]

#: The tables that grow with the ended history (millions of rows on a busy site).
HISTORY_TABLES = ("coordinators_coordinatoraction", "workflows_workflowjob", "workflows_workflownode")

Sent = list[tuple[str, Any]]


def sent_by(work: Callable[[], object]) -> Sent:
    """The SELECTs `work` sends, each with its parameters, as the database receives them."""
    seen: Sent = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if sql.lstrip().upper().startswith("SELECT"):
            seen.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        work()
    return seen


def plan(sql: str, params: Any) -> list[str]:
    """SQLite's EXPLAIN QUERY PLAN of one statement with its own parameters: one line per step."""
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        return [str(row[3]) for row in cursor.fetchall()]


def plans(queries: Sent) -> list[str]:
    return [step for sql, params in queries for step in plan(sql, params)]


def full_scans(steps: list[str]) -> list[str]:
    """Steps that read a history table whole (`SCAN t` without an index)."""
    return [step for step in steps if any(step == f"SCAN {table}" or step.startswith(f"SCAN {table} ") and "INDEX" not in step
                                          for table in HISTORY_TABLES)]


def test_djangos_bound_status_list_scans_the_actions_and_the_constants_take_the_index() -> None:
    """Why: the launched actions counted with `status__in` scan the table; with `in_constants` (as the figures now do) they take
    `coord_action_launched_idx`."""
    bound = CoordinatorAction.objects.filter(status__in=sorted(ACTION_ACTIVE)).values("status").annotate(n=Count("pk")).order_by()
    assert full_scans(plans(sent_by(lambda: list(bound)))) == ["SCAN coordinators_coordinatoraction"]


def test_the_dashboard_counts_live_actions_and_commands_through_their_partial_indexes(settings: Any) -> None:
    """A render (ended counts reused, as in production) reads pending and launched actions, active and leased commands and
    late actions through their partial indexes, and scans no history table."""
    settings.METRICS_ENDED_ACTIONS_SECONDS = 60
    operator = Client()
    operator.force_login(User.objects.create_superuser("planner", "planner@example.com", "pw"))
    assert operator.get("/admin/dashboard/").status_code == 200  # computes the ended counts once
    steps = plans(sent_by(lambda: operator.get("/admin/dashboard/")))
    assert full_scans(steps) == []
    for index in ("coord_action_check_idx", "coord_action_launched_idx", "xcmd_active_head_idx", "xcmd_lease_idx"):
        assert any(f"USING INDEX {index}" in step for step in steps), (index, steps)


def test_the_purge_pass_finds_old_actions_and_standalone_workflows_through_their_partial_indexes() -> None:
    """The candidates of a pass: ended actions by `coord_action_ended_idx`, standalone workflows by `wf_standalone_ended_idx`
    (not the parent's foreign-key index, which holds every coordinator run); no history table scanned."""
    now = timezone.now()
    policy = Policy(workflows=now - timedelta(days=30), coordinators=now - timedelta(days=7),
                    bundles=now - timedelta(days=7))
    steps = plans(sent_by(lambda: purge(now, policy=policy)))
    assert full_scans(steps) == []
    assert any(step.startswith("SEARCH coordinators_coordinatoraction USING INDEX coord_action_ended_idx") for step in steps), steps
    assert any(step.startswith("SEARCH workflows_workflowjob USING INDEX wf_standalone_ended_idx") for step in steps), steps


def test_the_recovery_sweeps_read_launched_actions_and_leased_commands_through_their_partial_indexes() -> None:
    """Stale launched actions by `coord_action_launched_idx`, expired leases by `xcmd_lease_idx`: every tick, whatever the history."""
    now = timezone.now()
    steps = plans(sent_by(lambda: recover_launches(now)))
    assert full_scans(steps) == []
    assert any(step.startswith("SEARCH coordinators_coordinatoraction USING INDEX coord_action_launched_idx") for step in steps), steps
    leases = plans(sent_by(lambda: expire_leases(now)))
    assert any(step.startswith("SEARCH xcommands_command USING INDEX xcmd_lease_idx") for step in leases), leases
