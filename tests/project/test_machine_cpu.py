"""The machine's CPU over a benchmark's windows (/proc/stat), and what the RUNNING heading allows an action."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tooling.benchmarks.machine_cpu import (
    STAT,
    MachineCpu,
    Snapshots,
    busy_seconds,
    cores,
    cpu_by_group,
    process_cpu,
)
from tooling.benchmarks.runtime import minute_cpu, percentile, running_budget, steady_by_process

TICK = os.sysconf("SC_CLK_TCK")
SPIN = "import sys, time\nend = time.process_time() + float(sys.argv[1])\nwhile time.process_time() < end:\n    pass\n"
linux = pytest.mark.skipif(not STAT.exists(), reason="/proc is Linux's")


def test_busy_is_every_state_but_idle_and_iowait_of_the_aggregate_line() -> None:
    text = ("cpu  100 20 30 5000 70 4 6 10 99 0\n"
            "cpu0 1 1 1 1 1 1 1 1 1 1\n")
    assert busy_seconds(text) == (100 + 20 + 30 + 4 + 6 + 10) / TICK  # guest (99) is already in user
    assert busy_seconds("cpu 1 2 3 4\n") == (1 + 2 + 3) / TICK  # an old kernel's shorter line
    with pytest.raises(ValueError, match="no aggregate cpu line"):
        busy_seconds("cpu0 1 2 3 4 5 6 7 8\n")


def _sampled(points: list[tuple[float, float]]) -> MachineCpu:
    cpu = MachineCpu()
    cpu.available = True
    cpu.times = [at for at, _ in points]
    cpu.busy = [busy for _, busy in points]
    return cpu


def test_busy_between_interpolates_between_samples_and_says_nothing_outside_them() -> None:
    cpu = _sampled([(100.0, 10.0), (101.0, 11.5), (103.0, 12.5)])
    assert cpu.busy_between(100.0, 103.0) == 2.5
    assert cpu.busy_between(100.5, 102.0) == pytest.approx(12.0 - 10.75)
    assert cpu.busy_between(99.0, 101.0) is None  # before the first sample
    assert cpu.busy_between(101.0, 104.0) is None  # after the last
    assert cpu.busy_between(102.0, 101.0) is None  # an empty window


@linux
def test_a_child_spinning_a_second_of_cpu_is_seen_in_the_machines_busy_time() -> None:
    with MachineCpu(interval=0.02) as cpu:
        start = time.time()
        subprocess.run([sys.executable, "-c", SPIN, "1.0"], check=True)  # noqa: S603
        end = time.time()
        time.sleep(0.1)  # a sample after the window's end
    busy = cpu.busy_between(start, end)
    assert busy is not None
    assert 0.95 <= busy <= cores() * (end - start) + 0.1  # the child's second, and no more than the cores offered


def test_each_minutes_cpu_runs_from_its_nominal_time_to_its_last_actions_end() -> None:
    nominal = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    second = nominal + timedelta(minutes=1)
    base = nominal.timestamp()
    cpu = _sampled([(base, 100.0), (base + 2, 103.0), (base + 60, 110.0), (base + 64, 116.0)])
    rows: list[tuple[datetime, datetime | None, datetime | None, datetime | None]] = [
        (nominal, nominal, nominal, nominal + timedelta(seconds=1)),
        (nominal, nominal, nominal, nominal + timedelta(seconds=2)),
        (nominal, nominal, nominal, nominal + timedelta(seconds=0.5)),
        (second, second, None, None),  # never ended: the minute says nothing
        (second, second, second, second + timedelta(seconds=4)),
    ]
    first, other = minute_cpu(list(reversed(rows)), cpu)
    assert first == {"cpu_s": 3.0, "window_s": 2.0, "cpu_busy_pct": round(100 * 3 / (cores() * 2), 1),
                     "cpu_ms_per_action": 1000.0, "cpu_busy_pct_to_submitted": None}  # SUBMITTED at its nominal time
    assert other == {"cpu_s": None, "window_s": None, "cpu_busy_pct": None, "cpu_ms_per_action": None,
                     "cpu_busy_pct_to_submitted": None}


def test_the_share_until_the_last_submitted_says_whether_the_due_start_had_idle_cores() -> None:
    nominal = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    base = nominal.timestamp()
    cpu = _sampled([(base, 50.0), (base + 1, 50.5), (base + 3, 54.5)])
    rows: list[tuple[datetime, datetime | None, datetime | None, datetime | None]] = [
        (nominal, nominal + timedelta(seconds=1), nominal + timedelta(seconds=1), nominal + timedelta(seconds=3)),
            (nominal, nominal + timedelta(seconds=0.5), nominal + timedelta(seconds=1), nominal + timedelta(seconds=2))]
    (figures,) = minute_cpu(rows, cpu)
    assert figures["cpu_busy_pct_to_submitted"] == round(100 * 0.5 / cores(), 1)  # 0.5 s busy in its first second
    assert figures["cpu_s"] == 4.5 and figures["cpu_ms_per_action"] == 2250.0
    rows[1] = (nominal, None, None, nominal + timedelta(seconds=2))  # one never SUBMITTED
    assert minute_cpu(rows, cpu)[0]["cpu_busy_pct_to_submitted"] is None


def test_the_budget_is_the_cores_second_shared_by_the_actions_ended_before_the_99th_percentile_starts() -> None:
    budget = running_budget(500, 4, 2)
    k = percentile([float(n) for n in range(1, 501)], 99)  # the 99th percentile is the k-th start
    assert k == 495 and budget["before_p99"] == k - 4
    assert budget["ms_per_action"] == pytest.approx(2000 / 491)
    assert running_budget(5000, 4, 2)["before_p99"] == 4946
    assert running_budget(2, 4, 2) == {"before_p99": 1, "cores": 2, "ms_per_action": 2000.0}


def test_a_groups_cpu_is_what_its_processes_spent_between_two_snapshots() -> None:
    before = {10: ("postgresql", 5.0), 11: ("workers", 2.0), 12: ("workers", 1.0), 13: ("other", 9.0)}
    after = {10: ("postgresql", 5.75), 11: ("workers", 2.5), 12: ("workers", 1.25), 14: ("workers", 0.5)}
    # 13 ended in between (its time is gone with it), 14 is new and counts whole
    assert cpu_by_group(before, after) == {"postgresql": 0.75, "workers": 1.25}


@linux
def test_each_process_is_seen_with_its_part_of_the_service() -> None:
    spin_then_wait = SPIN + "print('spun', flush=True)\ntime.sleep(60)\n"
    commands = {"workers": [sys.executable, "-c", spin_then_wait, "0.6", "-A", "project", "celery", "worker"],
                "beat": [sys.executable, "-c", spin_then_wait, "0.3", "-m", "celery", "beat"]}
    children: dict[str, subprocess.Popen[str]] = {}
    try:
        with Snapshots([time.time()]) as snapshots:
            deadline = time.monotonic() + 10
            while not snapshots.taken and time.monotonic() < deadline:  # the first, before anything below
                time.sleep(0.01)
            for group, command in commands.items():
                children[group] = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)  # noqa: S603
            for child in children.values():
                assert child.stdout is not None and child.stdout.readline() == "spun\n"
            x = 0
            end = time.process_time() + 0.4
            while time.process_time() < end:
                x += 1
            mine = process_cpu()
            assert mine[os.getpid()][0] == "benchmark"
            assert {group: mine[child.pid][0] for group, child in children.items()} == {"workers": "workers", "beat": "beat"}
    finally:
        for child in children.values():
            child.kill()
            child.wait()
    ((start, stop, groups),) = snapshots.windows()
    assert stop > start
    assert groups["benchmark"] >= 0.38  # the loop above, in this process
    assert groups["workers"] >= 0.58 and groups["beat"] >= 0.28  # started after the first snapshot: their whole time


def test_the_steady_minutes_by_process_is_each_groups_median() -> None:
    steady: list[dict[str, Any]] = [{"process_cpu_ms_per_action": {"workers": 6.0, "postgresql": 2.0}},
              {"process_cpu_ms_per_action": {"workers": 8.0, "postgresql": 1.0, "redis": 0.5}},
              {"process_cpu_ms_per_action": {"workers": 7.0, "postgresql": 3.0}},
              {"p99_s_to_running": 1.0}]  # a minute without the figure is left out
    assert steady_by_process(steady) == {"postgresql": 2.0, "redis": 0.0, "workers": 7.0}
    assert steady_by_process([{"p99_s_to_running": 1.0}]) is None


def test_around_a_window_is_from_the_last_snapshot_before_it_to_the_first_after_it() -> None:
    snapshots = Snapshots([])
    snapshots.taken = [(10.0, {1: ("workers", 1.0)}), (10.5, {1: ("workers", 1.5)}),
                       (11.0, {1: ("workers", 2.25)}), (11.5, {1: ("workers", 4.0)})]
    assert snapshots.around(10.2, 10.9) == (10.0, 11.0, {"workers": 1.25})
    assert snapshots.around(10.5, 11.5) == (10.5, 11.5, {"workers": 2.5})  # a snapshot on either end is used
    assert snapshots.around(9.0, 10.5) is None and snapshots.around(10.0, 12.0) is None  # nothing before, nothing after
    snapshots.taken.insert(2, (12.0, {1: ("workers", 6.0)}))  # taken by another thread, appended out of order
    assert snapshots.around(11.6, 11.9) == (11.5, 12.0, {"workers": 2.0})
    assert [(start, stop) for start, stop, _ in snapshots.windows()] == [(10.0, 10.5), (10.5, 11.0), (11.0, 11.5), (11.5, 12.0)]
