"""Two incompatible operations started at the same instant: exactly one passes (PostgreSQL in CI, SQLite here)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

import tests.operations.types  # noqa: F401 - registers the test types
from operations.choices import OperationStatus
from operations.models import Operation
from operations.services import OperationConflict, start_operation

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    ("first", "second", "both_pass"),
    [
        pytest.param("test.exclusive", "test.exclusive", False, id="incompatible"),
        pytest.param("test.steps", "test.exclusive", False, id="incompatible-types"),
        pytest.param("test.steps", "test.steps", True, id="compatible"),
    ],
)
def test_racing_starts_never_both_pass_when_incompatible(first: str, second: str, both_pass: bool) -> None:
    """Threads with their own connections start on one target behind a barrier, 20 rounds."""
    for round_number in range(20):
        target = f"race-{round_number}"
        barrier = threading.Barrier(2)
        outcomes: list[str] = []

        def start(kind: str, partition: str, target: str, barrier: threading.Barrier, outcomes: list[str]) -> None:
            try:
                barrier.wait(timeout=10)
                start_operation(kind, target, {}, [partition])
                outcomes.append("started")
            except OperationConflict:
                outcomes.append("refused")
            finally:
                connection.close()

        threads = [
            threading.Thread(target=start, args=(kind, f"p{i}", target, barrier, outcomes))
            for i, kind in enumerate((first, second))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        expected = ["started", "started"] if both_pass else ["refused", "started"]
        assert sorted(outcomes) == expected, (round_number, outcomes)
        running = Operation.objects.filter(target=target, status=OperationStatus.RUNNING).count()
        assert running == (2 if both_pass else 1)
