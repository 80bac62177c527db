"""Shared fixtures: a real Redis, real Celery workers, and the `database` marker for CI's rerun.

Fixtures that tests of several directories use live in tests/support/ modules, registered here
as plugins (pytest reads `pytest_plugins` only in this, the top conftest); their helpers are
imported from the same modules.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.core.management.commands import flush as flush_command
from django.db import connection

from project.celery import app
from tests.support.celery_app import point_celery_at
from tests.support.processes import (
    RedisServer,
    WorkerProcess,
    child_env,
    start_beat,
    start_redis,
    start_worker,
)

pytest_plugins = [
    "tests.support.engine",  # in_process_engine
    "tests.support.users",  # ann, bob, carol, admin
    "tests.support.bundles",  # make_bundle
    "tests.support.browser",  # browser, screenshots (headless chromium)
    "tests.support.sshd",  # sshd (a real OpenSSH server on loopback)
]

# The batch helpers assert on the batches they build: rewrite their asserts, as in a conftest.
pytest.register_assert_rewrite("tests.support.batches")

DB_FIXTURES = {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that touches the database `database`, so CI reruns them on PostgreSQL; and every
    test that drives Chromium `browser` (CI runs those once, on SQLite: a page renders the same from
    either database, and the queries behind each page run on PostgreSQL in the admin's client tests); and
    every benchmark's smoke test `bench` (CI runs those on SQLite: the benchmarks themselves are run on
    PostgreSQL by hand, their figures in docs/benchmarks.md)."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if item.get_closest_marker("django_db") or fixtures & DB_FIXTURES or (
            fixtures & {"live_workers", "worker_env", "live_beat"}
        ):
            item.add_marker(pytest.mark.database)
        if "browser" in fixtures:
            item.add_marker(pytest.mark.browser)
        if item.path.name.startswith("test_bench") and item.path.name != "test_bench_before_migrate.py":
            item.add_marker(pytest.mark.bench)


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: Any) -> None:
    """Tests create many users: a cheap hasher keeps them fast (production keeps PBKDF2)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _temporary_application_roots(settings: Any) -> None:
    """Tests keep applications and includes in temporary directories: let submissions read there."""
    settings.COORD_APPLICATION_ROOTS = [*settings.COORD_APPLICATION_ROOTS, f"file://{tempfile.gettempdir()}"]


#: The tasks the suite's users may run: the examples (as the README's walk-throughs allow them), the
#: suite's own tasks, and `actions.*` (the default). Tests of the default itself set it back.
TEST_ALLOWED_TASKS = ["actions.*", "examples.*", "tests.*", "chaos.*"]


@pytest.fixture(autouse=True)
def _examples_allowed(settings: Any) -> None:
    """Tests run the example tasks through keyed jobs, `task:` and `<celery>`, as the walk-throughs do."""
    settings.ALLOWED_TASKS = list(TEST_ALLOWED_TASKS)


@pytest.fixture(autouse=True)
def _empty_cache() -> None:
    """Each test starts with an empty Django cache: DRF's throttles count there, and no test is throttled by another's calls."""
    cache.clear()


#: Rows the test database's migrate writes once and no test changes: kept when a transactional test ends.
KEPT_ON_FLUSH = frozenset({"django_content_type", "auth_permission"})


@pytest.fixture(scope="session", autouse=True)
def _quick_flush() -> Iterator[None]:
    """After each transactional test Django empties every table, then sends `post_migrate`, which
    writes the content types and permissions again: 0.2 s a test on PostgreSQL (0.05 s on SQLite),
    most of the PostgreSQL pass's teardowns. Those two tables are kept instead (what `post_migrate`
    would write is what they hold: no test adds or removes one), so the signal is not sent.

    The rest are still emptied as Django does (on PostgreSQL one TRUNCATE): a DELETE would be
    quicker, but it does not wait for a killed worker's session still on its way out, whose rows
    would then outlive its test.
    """
    def sql_flush(style: Any, connection: Any, reset_sequences: bool = True, allow_cascade: bool = False) -> list[str]:
        tables = [table for table in connection.introspection.django_table_names(only_existing=True, include_views=False)
                  if table not in KEPT_ON_FLUSH]
        return list(connection.ops.sql_flush(style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade))

    def no_post_migrate(*args: Any, **kwargs: Any) -> None:
        return None

    with pytest.MonkeyPatch.context() as patch:  # the `flush` command's own names for the two
        patch.setattr(flush_command, "sql_flush", sql_flush)
        patch.setattr(flush_command, "emit_post_migrate_signal", no_post_migrate)
        yield


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One private redis-server for the whole test session."""
    server = start_redis()
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> Iterator[str]:
    """The private Redis, emptied before each test."""
    client = redis_server.client()
    client.flushall()
    client.close()
    yield redis_server.url


@pytest.fixture
def celery_to_test_redis(redis_url: str) -> Iterator[str]:
    """Point this process's Celery app (publishing side) at the private Redis."""
    old_broker, old_backend = app.conf.broker_url, app.conf.result_backend
    point_celery_at(app, redis_url, redis_url)
    yield redis_url
    point_celery_at(app, old_broker, old_backend)


@pytest.fixture(scope="session")
def _child_sessions_end_before_teardown(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """Before the test database is dropped, end the sessions killed child processes left behind.

    PostgreSQL refuses to drop a database while a session is connected, and a SIGKILLed
    worker's server process may still be on its way out when the test session ends.
    """
    yield
    with django_db_blocker.unblock():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )


@pytest.fixture
def worker_env(
    transactional_db: None, celery_to_test_redis: str, _child_sessions_end_before_teardown: None
) -> Callable[..., dict[str, str]]:
    """Build the environment of a child process sharing this test's database and Redis."""
    def build(**extra: str) -> dict[str, str]:
        return child_env(connection.settings_dict, celery_to_test_redis, extra)

    return build


@pytest.fixture
def live_workers(
    worker_env: Callable[..., dict[str, str]], tmp_path: Path
) -> Iterator[Callable[..., WorkerProcess]]:
    """Start real Celery worker processes on demand; all are killed after the test (a test that needs a warm stop calls `stop`)."""
    started: list[WorkerProcess] = []

    def start(
        name: str = "w1",
        queues: tuple[str, ...] = ("commands", "services", "actions", "default"),
        concurrency: int = 2,
        **extra: Any,
    ) -> WorkerProcess:
        worker = start_worker(
            worker_env(**{k: str(v) for k, v in extra.items()}),
            name=name,
            queues=queues,
            concurrency=concurrency,
            logdir=tmp_path,
        )
        started.append(worker)
        return worker

    yield start
    for worker in started:  # the test is over: killed at once, as production's faults kill them (no warm second each)
        worker.kill()


@pytest.fixture
def live_beat(
    worker_env: Callable[..., dict[str, str]], tmp_path: Path
) -> Iterator[Callable[..., WorkerProcess]]:
    """Start a real celery beat on demand (the recovery sweep and other services)."""
    started: list[WorkerProcess] = []

    def start(**extra: Any) -> WorkerProcess:
        beat = start_beat(worker_env(**{k: str(v) for k, v in extra.items()}), logdir=tmp_path)
        started.append(beat)
        return beat

    yield start
    for beat in started:
        beat.kill()
