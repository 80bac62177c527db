"""`bench trigger-latency`'s figures per nominal time: the first minute's backlog apart from the steady minutes after it."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis
from django.core.management import CommandError, call_command

from tooling.benchmarks import keyed_queue as keyed_bench
from tooling.benchmarks.machine_cpu import STAT, MachineCpu
from tooling.benchmarks.runtime import per_minute, running_floor


def test_each_nominal_time_has_its_own_percentiles_and_counts_what_never_got_there() -> None:
    first = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
    second = first + timedelta(minutes=1)
    rows = [
        *[(first, first + timedelta(seconds=2 + n / 10), first + timedelta(seconds=5)) for n in range(10)],
        *[(second, second + timedelta(seconds=0.1 * (n + 1)), None) for n in range(4)],
        (second, None, None),
    ]
    figures = per_minute(list(reversed(rows)))  # the order read from the database does not matter
    assert [entry["nominal_time"] for entry in figures] == ["2026-11-27T12:00Z", "2026-11-27T12:01Z"]
    assert figures[0] == {"nominal_time": "2026-11-27T12:00Z", "actions": 10, "submitted": 10, "p50_s_to_submitted": 2.45,
                          "p99_s_to_submitted": 2.9, "running": 10, "p50_s_to_running": 5.0, "p99_s_to_running": 5.0}
    assert figures[1]["actions"] == 5 and figures[1]["submitted"] == 4 and figures[1]["running"] == 0
    assert figures[1]["p99_s_to_submitted"] == 0.4 and figures[1]["p50_s_to_running"] is None


def test_a_negative_lead_is_refused_in_one_line_before_anything_runs() -> None:
    with pytest.raises(CommandError) as refused:
        call_command("bench", "trigger-latency", "--json", "--jobs", "1", "--lead-seconds", "-1")
    assert str(refused.value) == "--lead-seconds must be 0 or more"


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_the_running_floor_is_raw_celery_starting_tasks_published_at_once(live_workers: Any, redis_url: str) -> None:
    live_workers(queues=("actions",), EXTRA_TASK_MODULES=f"examples.tasks,{keyed_bench.__name__}")
    lines: list[str] = []
    before = time.time()
    with MachineCpu() as cpu:
        floor = running_floor(redis_url, 40, lines.append, cpu=cpu)
    elapsed = time.time() - before
    assert floor["ran"] == 40 and lines == []  # every task started, none left out
    if STAT.exists():  # the machine's CPU while they were published and started, per task
        assert floor["cpu_ms_per_task"] is not None and floor["cpu_ms_per_task"] > 0
        parts = floor["process_cpu_ms_per_task"]
        # who started and sent them (Redis carried them too, but 40 messages may cost it less than a clock tick)
        assert parts["workers"] > 0 and parts["benchmark"] > 0 and parts["redis"] >= 0
    assert floor["p50"] is not None and floor["p99"] is not None
    assert 0 < floor["p50"] <= floor["p99"] < elapsed  # measured from the first publish, each start after it
    assert not redis.Redis.from_url(redis_url).keys("bench:*")  # its traces are gone
