"""`bench keyed-queue` end to end at a tiny size: it runs, reports every figure, finds no violation.

Not a timed test: the figures themselves are for the benchmark's runs, not for CI.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import override_settings

from tooling.benchmarks.keyed_queue import run_keyed_queue_bench
from xcommands.models import Command, CommandKey

pytestmark = pytest.mark.integration

FIGURES = {
    "raw_celery_per_s", "keyed_per_s", "ratio", "order_violations", "overlap_violations",
    "cold_key_p99_ms_idle", "cold_key_p99_ms_hot_backlog", "hot_backlog_left_after_sampling",
}


def test_keyed_queue_bench_reports_every_figure(
    worker_env: Callable[..., dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The benchmark starts its worker on the configured database and Redis, and cleans up after itself."""
    env = worker_env()
    monkeypatch.setenv("DATABASE_URL", env["DATABASE_URL"])  # its worker uses the test database
    monkeypatch.setenv("REDIS_URL", env["REDIS_URL"])  # and the test Redis
    lines: list[str] = []
    with override_settings(REDIS_URL=env["REDIS_URL"]):
        figures = run_keyed_queue_bench(60, 3, 2, lines.append, samples=5, hot_backlog=200)
    assert FIGURES <= set(figures)
    assert (figures["order_violations"], figures["overlap_violations"]) == (0, 0)
    assert figures["raw_celery_per_s"] > 0 and figures["keyed_per_s"] > 0
    assert not Command.objects.filter(key__startswith="bench:").exists()
    assert not CommandKey.objects.filter(key__startswith="bench:").exists()
