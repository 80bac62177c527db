"""Settings come from the environment; DATABASE_URL parsing is strict and clear."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from project.celery import QUEUE_NAMES, app, route_task
from project.env import ConfigurationError, env_bool, env_processing_timezone, parse_database_url

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("url", "expected_name"),
    [
        pytest.param("sqlite:///var/db.sqlite3", str(ROOT / "var/db.sqlite3"), id="relative-sqlite"),
        pytest.param("sqlite:////tmp/x/db.sqlite3", "/tmp/x/db.sqlite3", id="absolute-sqlite"),
    ],
)
def test_sqlite_urls_use_wal_and_immediate_transactions(url: str, expected_name: str) -> None:
    """A SQLite DATABASE_URL maps to a file, WAL journal and BEGIN IMMEDIATE transactions."""
    entry = parse_database_url(url, ROOT)
    assert entry["NAME"] == expected_name
    assert entry["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert "journal_mode=WAL" in entry["OPTIONS"]["init_command"]


def test_postgres_url_parts() -> None:
    """A PostgreSQL URL yields user, password, host, port and database."""
    entry = parse_database_url("postgres://u:p%40ss@db.example:6543/sched?sslmode=require", ROOT)
    assert entry["ENGINE"] == "django.db.backends.postgresql"
    assert (entry["USER"], entry["PASSWORD"], entry["HOST"], entry["PORT"], entry["NAME"]) == (
        "u", "p@ss", "db.example", "6543", "sched",
    )
    assert entry["OPTIONS"] == {"sslmode": "require"}


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("mysql://x/y", id="unsupported-scheme"),
        pytest.param("postgres://host/", id="no-database-name"),
        pytest.param("sqlite://", id="no-sqlite-path"),
    ],
)
def test_bad_database_urls_are_refused(url: str) -> None:
    """An unusable DATABASE_URL is a ConfigurationError naming the problem."""
    with pytest.raises(ConfigurationError, match="DATABASE_URL"):
        parse_database_url(url, ROOT)


def test_env_bool_refuses_garbage(monkeypatch: pytest.MonkeyPatch) -> None:
    """DEBUG=maybe is an error, not silently false."""
    monkeypatch.setenv("SOME_FLAG", "maybe")
    with pytest.raises(ConfigurationError, match="SOME_FLAG"):
        env_bool("SOME_FLAG", False)
    monkeypatch.setenv("SOME_FLAG", "Yes")
    assert env_bool("SOME_FLAG", False) is True


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("", "UTC", id="default-utc"),
        pytest.param("GMT+05:30", "GMT+05:30", id="gmt-offset"),
        pytest.param("GMT-0800", "GMT-0800", id="gmt-offset-no-colon"),
    ],
)
def test_processing_timezone_is_utc_or_a_fixed_offset(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: str
) -> None:
    """OOZIE_PROCESSING_TIMEZONE defaults to UTC and takes fixed GMT offsets."""
    monkeypatch.setenv("OOZIE_PROCESSING_TIMEZONE", value)
    assert env_processing_timezone("OOZIE_PROCESSING_TIMEZONE", "UTC") == expected


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("Europe/Paris", id="zone-with-dst"),
        pytest.param("GMT+25:00", id="offset-out-of-range"),
        pytest.param("utc+1", id="garbage"),
    ],
)
def test_processing_timezone_refuses_zones_with_rules(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """A processing time zone with DST rules, or an unreadable one, is a start-up error."""
    monkeypatch.setenv("OOZIE_PROCESSING_TIMEZONE", value)
    with pytest.raises(ConfigurationError, match="OOZIE_PROCESSING_TIMEZONE"):
        env_processing_timezone("OOZIE_PROCESSING_TIMEZONE", "UTC")


PRODUCTION = {
    "DEBUG": "false",
    "SECRET_KEY": "x" * 30 + "-production-secret-" + "y" * 30,
    "ALLOWED_HOSTS": "scheduler.example.com",
    "SECURE_SSL_REDIRECT": "true",
    "SESSION_COOKIE_SECURE": "true",
    "CSRF_COOKIE_SECURE": "true",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
    "REDIS_URL": "redis://redis.example.com:6379/0",
    "OOZIE_PROCESSING_TIMEZONE": "UTC",
}


def _check_deploy(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )


def test_check_deploy_is_clean_with_production_values(tmp_path: Path) -> None:
    """With production values `manage.py check --deploy` reports nothing."""
    env = dict(os.environ)
    env.update(PRODUCTION)
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'deploy.sqlite3'}"
    result = _check_deploy(env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_check_deploy_reports_a_forgotten_secret_key(tmp_path: Path) -> None:
    """Production values but the embedded SECRET_KEY: `check --deploy` says so (security.W009)."""
    env = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    env.update({k: v for k, v in PRODUCTION.items() if k != "SECRET_KEY"})
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'deploy.sqlite3'}"
    result = _check_deploy(env)
    assert result.returncode != 0
    assert "security.W009" in result.stderr + result.stdout


def test_celery_app_is_json_only_and_durable() -> None:
    """The Celery app refuses pickle, acks late, requeues on worker loss, prefetches one."""
    assert app.conf.accept_content == ["json"]
    assert app.conf.task_serializer == "json"
    assert app.conf.result_serializer == "json"
    assert app.conf.task_acks_late is True
    assert app.conf.task_reject_on_worker_lost is True
    assert app.conf.worker_prefetch_multiplier == 1
    assert app.conf.result_accept_content == ["json"]
    visibility = app.conf.broker_transport_options["visibility_timeout"]
    assert visibility > settings.COMMAND_LEASE_SECONDS


def test_queues_are_declared_in_one_place() -> None:
    """Every queue is declared by project.celery; task routes come from task names only."""
    assert [queue.name for queue in app.conf.task_queues] == list(QUEUE_NAMES)
    assert app.conf.task_default_queue in QUEUE_NAMES
    assert tuple(app.conf.task_routes) == (route_task,)


@pytest.mark.parametrize(
    ("task_name", "queue"),
    [
        pytest.param("coordinators.CoordMaterializeXCommand", "commands", id="command"),
        pytest.param("statusservice.materialization_trigger", "services", id="service"),
        pytest.param("examples.pipeline.produce_hour", "actions", id="launched-action"),
        pytest.param("project.healthcheck", "default", id="other"),
    ],
)
def test_tasks_are_routed_by_name(task_name: str, queue: str) -> None:
    """Routes depend on the task name only."""
    assert route_task(task_name, (), {}, {}) == {"queue": queue}


def test_postgres_sessions_end_idle_transactions_after_two_leases() -> None:
    """On PostgreSQL a zombie's open transaction is ended by the server after 2 x lease."""
    env = dict(os.environ, DATABASE_URL="postgres://u@db.example:5432/sched", COMMAND_LEASE_SECONDS="45")
    code = "from django.conf import settings; print(settings.DATABASES['default']['OPTIONS']['options'])"
    result = subprocess.run(  # noqa: S603
        [sys.executable, "-c", f"import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'project.settings'); django.setup(); {code}"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "-c idle_in_transaction_session_timeout=90000"
