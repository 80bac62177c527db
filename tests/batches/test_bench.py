"""`bench batch`: the inversion count and the batch split it relies on, a tiny run end to end, and its refusal before migrate.

Not a timed test: the figures themselves are for the benchmark's runs, not for CI.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from batches.models import (
    Batch,
    BatchJob,
    Collection,
    IngestSettings,
    InventoryObject,
    MintedIdentifier,
    Profile,
    Slot,
)
from operations.models import Operation, OperationTarget
from tests.support.processes import ROOT
from tooling.benchmarks.batch import (
    count_inversions,
    data_files,
    object_content,
    parallel_copy,
    run_batch_bench,
    split,
    write_deposit,
)
from tooling.benchmarks.batch_memory import run_batch_memory_bench
from xcommands.models import Command, CommandKey

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        pytest.param(20, [(5, 10), (8, 4), (2, 4), (0, 2)], id="the-mix"),
        pytest.param(10_000, [(5, 5000), (8, 2000), (2, 2000), (0, 1000)], id="ten-thousand"),
        pytest.param(5, [(5, 2), (8, 1), (2, 1), (0, 1)], id="one-each-at-least"),
        pytest.param(3, [(5, 3)], id="too-few-to-split"),
    ],
)
def test_objects_are_split_over_batches_of_each_priority(objects: int, expected: list[tuple[int, int]]) -> None:
    """Every object is in exactly one batch; the default-priority batch takes what the others leave."""
    assert split(objects) == expected
    assert sum(n for _, n in split(objects)) == objects


def test_an_inversion_is_a_better_job_runnable_at_a_dispatch() -> None:
    """Counted at each dispatch: jobs of a lower priority number runnable then; equal or worse ones, or ones already dispatched, are not."""
    runnable = {
        0: [(at(0), at(10))],  # a priority-0 job waits from 0 s to its dispatch at 10 s
        2: [(at(5), at(6))],
        5: [(at(0), at(1))],
    }
    events = [
        (at(0.5), 5),  # the priority-0 job waits: one inversion
        (at(5.5), 5),  # priority 0 and 2 wait: two
        (at(5.5), 2),  # only priority 0 is better: one
        (at(6), 8),  # the priority-2 job was dispatched at 6 s: it no longer counts
        (at(10), 0),  # nothing is better than 0
        (at(11), 9),  # nobody waits any more
    ]
    assert count_inversions(runnable, events) == [1, 2, 1, 1, 0, 0]


@pytest.mark.integration
def test_a_tiny_batch_bench_reports_every_figure_and_cleans_up(
    worker_env: Callable[..., dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twenty objects in four batches through every stage with a real worker and beat; nothing of the run is left behind."""
    env = worker_env()
    monkeypatch.setenv("DATABASE_URL", env["DATABASE_URL"])  # its worker and beat use the test database
    monkeypatch.setenv("REDIS_URL", env["REDIS_URL"])  # and the test Redis
    lines: list[str] = []
    with override_settings(REDIS_URL=env["REDIS_URL"]):
        figures = run_batch_bench(20, 2, lines.append)
    assert {"objects_per_s", "raw_celery_per_s", "ratio", "inversions", "stages", "commands", "batches", "slots",
            "workers", "mb_per_s", "copy_objects_per_s", "copy_mb_per_s", "copy_ratio", "object_bytes"} <= set(figures)
    assert figures["copy_objects_per_s"] > 0 and figures["mb_per_s"] > 0
    assert figures["copy_ratio"] == pytest.approx(figures["objects_per_s"] / figures["copy_objects_per_s"], rel=0.01)
    assert figures["objects"] == 20 and figures["objects_per_s"] > 0 and figures["raw_celery_per_s"] > 0
    assert [(row["priority"], row["objects"]) for row in figures["batches"]] == [(5, 10), (8, 4), (2, 4), (0, 2)]
    assert all(row["done_s"] is not None for row in figures["batches"])
    assert figures["inversions"]["dispatches"] == 20 * 7 and figures["inversions"]["max"] >= 0
    assert sorted(figures["stages"]) == sorted(
        ["pending", "estimating", "provisioning", "downloading", "processing", "recording", "notify"])
    assert all(row["count"] == 20 for row in figures["stages"].values())
    assert 20 <= figures["commands"]["BatchJobStageXCommand"]["count"] <= 20 * 7  # stages chain in a kept slot
    assert figures["commands"]["BatchStartXCommand"]["count"] == 4
    assert any("objects/s" in line for line in lines) and any("plain parallel copy" in line for line in lines)
    for model in (Batch, BatchJob, Collection, Profile, InventoryObject, MintedIdentifier, Operation, OperationTarget,
                  Command, CommandKey, Slot, IngestSettings):
        assert not model.objects.exists(), model.__name__
    assert not User.objects.filter(username="bench").exists()


@pytest.mark.parametrize("size", [0, 1, 100, 4096], ids=["a-line", "one-byte", "short", "longer-than-a-line"])
def test_an_object_file_has_the_size_asked_for_and_names_its_object(size: int) -> None:
    """0 is the short line alone; any other size is that many bytes, starting with the line that names the object."""
    content = object_content("run1", 7, size)
    line = b"bench run1 object 7\n"
    assert len(content) == (size or len(line))
    assert content[: len(line)] == line[: len(content)]


def test_the_copy_baseline_copies_every_file_of_the_deposit_and_counts_its_bytes(tmp_path: Path) -> None:
    """The plain parallel copy reads the same files the pipeline ingests; its copies are removed after."""
    write_deposit(tmp_path / "deposit", "run1", [(5, 3), (0, 2)], object_bytes=1000)
    files = data_files(tmp_path / "deposit")
    assert len(files) == 5
    seconds, copied = parallel_copy(files, tmp_path / "copy", 2)
    assert seconds > 0 and copied == 5000
    assert not (tmp_path / "copy").exists()


@pytest.mark.integration
def test_the_memory_bench_runs_a_small_and_a_large_object_and_reports_their_peaks(
    worker_env: Callable[..., dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each object in a fresh process through every stage: both complete, peaks reported, nothing left behind."""
    env = worker_env()
    monkeypatch.setenv("DATABASE_URL", env["DATABASE_URL"])  # the runs use the test database
    lines: list[str] = []
    figures = run_batch_memory_bench(8 * 1024 * 1024, lines.append)
    assert figures["small"]["bytes"] == 1024 and figures["large"]["bytes"] == 8 * 1024 * 1024
    assert figures["small"]["status"] == figures["large"]["status"] == "completed"
    assert figures["peak_rss_mb_small"] > 10 and figures["peak_rss_mb_large"] > 10
    assert figures["peak_rss_growth_mb"] == pytest.approx(figures["peak_rss_mb_large"] - figures["peak_rss_mb_small"],
                                                          abs=0.2)
    assert any("peak RSS" in line for line in lines)
    for model in (Batch, BatchJob, Collection, Profile, InventoryObject, MintedIdentifier, Operation, OperationTarget,
                  Command, CommandKey, Slot, IngestSettings):
        assert not model.objects.exists(), model.__name__


def test_before_migrate_it_says_so(tmp_path: Path) -> None:
    """On a database without tables the benchmark refuses in one line, naming `migrate`; no traceback."""
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'empty.sqlite3'}", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(  # noqa: S603
        [sys.executable, "manage.py", "bench", "batch", "--objects", "20"], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 1
    assert "run `python manage.py migrate` first" in done.stderr and "Traceback" not in done.stderr
