"""`bench operation` end to end at a tiny size: every figure, nothing left behind; a clear refusal before migrate."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from operations.models import Operation
from tooling.benchmarks import operation as benchmarks
from xcommands.models import Command


@pytest.mark.integration
def test_operation_bench_reports_every_figure(
    worker_env: Callable[..., dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """It runs an operation of no-op jobs beside raw Celery tasks and cleans up after itself."""
    env = worker_env()
    monkeypatch.setenv("DATABASE_URL", env["DATABASE_URL"])
    monkeypatch.setenv("REDIS_URL", env["REDIS_URL"])
    lines: list[str] = []
    with override_settings(REDIS_URL=env["REDIS_URL"]):
        figures = benchmarks.run_operation_bench(60, 3, 2, lines.append)
    assert {"raw_celery_per_s", "operation_jobs_per_s", "ratio", "completion_after_last_job_s"} <= set(figures)
    assert figures["operation_jobs_per_s"] > 0 and figures["completion_after_last_job_s"] >= 0
    assert not Operation.objects.exists() and not Command.objects.filter(key__contains="bench:").exists()


@pytest.mark.django_db
def test_before_migrate_it_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """A database without the operations tables: one clear line, not a traceback."""
    monkeypatch.setattr(benchmarks, "_migrated", lambda: False)
    with pytest.raises(CommandError, match="run `python manage.py migrate` first"):
        call_command("bench", "operation", "--jobs", "10")
