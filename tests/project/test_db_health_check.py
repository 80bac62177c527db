"""A worker checks its database connection before a task only when the connection has been idle (ADR 0040).

Django's CONN_HEALTH_CHECKS costs one `SELECT 1` round trip before the first query of every
task. The worker's task signals (project.celery) trust a connection the previous task used
less than DB_HEALTH_CHECK_IDLE_SECONDS ago, unless it saw a database error.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from celery.signals import task_postrun, task_prerun
from django.db import OperationalError, connection, connections

from project import celery as celery_module

pytestmark = [pytest.mark.database, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Counts the health checks Django runs on the default connection (each a real `SELECT 1` on PostgreSQL)."""
    made: list[str] = []
    real = connection.is_usable

    def counted() -> bool:
        made.append("check")
        return bool(real())

    connection.ensure_connection()  # a worker's connection outlives its tasks (CONN_MAX_AGE)
    monkeypatch.setattr(connection, "is_usable", counted)
    monkeypatch.setattr(celery_module, "_last_task_ended", None)
    yield made


def run_task() -> None:
    """What one task does around its body: the prerun signal, a query, the postrun signal."""
    task_prerun.send(sender=None)
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    task_postrun.send(sender=None)


def test_a_connection_used_moments_ago_is_not_checked_again(checks: list[str], settings) -> None:
    settings.DB_HEALTH_CHECK_IDLE_SECONDS = 60.0
    run_task()  # the first task of the process: nothing says the connection is warm
    first = len(checks)
    run_task()
    run_task()
    assert first == 1
    assert len(checks) == first  # two more tasks, no more round trips


def test_a_connection_idle_longer_than_the_setting_is_checked(checks: list[str], settings, monkeypatch) -> None:
    settings.DB_HEALTH_CHECK_IDLE_SECONDS = 60.0
    run_task()
    run_task()
    warm = len(checks)
    ended = celery_module._last_task_ended
    assert ended is not None
    monkeypatch.setattr(celery_module, "_last_task_ended", ended - 61.0)
    run_task()
    assert len(checks) == warm + 1


def test_zero_checks_before_every_task_as_django_does(checks: list[str], settings) -> None:
    settings.DB_HEALTH_CHECK_IDLE_SECONDS = 0
    for _ in range(3):
        run_task()
    assert len(checks) == 3


def test_a_connection_that_saw_an_error_is_checked_even_when_warm(checks: list[str], settings) -> None:
    settings.DB_HEALTH_CHECK_IDLE_SECONDS = 60.0
    run_task()
    connection.errors_occurred = True
    before = len(checks)
    run_task()
    assert len(checks) > before
    assert connection.errors_occurred is False  # the check found it usable


@pytest.mark.skipif(connection.vendor != "postgresql", reason="a server-side disconnect needs PostgreSQL")
def test_a_warm_connection_the_server_dropped_fails_once_then_the_next_task_reconnects(checks: list[str], settings) -> None:
    settings.DB_HEALTH_CHECK_IDLE_SECONDS = 60.0
    run_task()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    finally:
        other.close()

    task_prerun.send(sender=None)
    with pytest.raises(OperationalError), connection.cursor() as cursor:
        cursor.execute("SELECT 1")  # trusted as warm: the task meets the broken connection (its retry would reconnect)
    task_postrun.send(sender=None)  # the error is remembered: the connection is checked and dropped

    run_task()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != pid
