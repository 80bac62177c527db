"""Batch test fixtures: a collection and profile, deposits written to tmp_path, commands and slots run in process.

The helpers (`Ingest`, `settle`, batches run to a state) are in tests/support/batches.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

import tests.batches.tasks  # noqa: F401 - registers the test processing tasks
from batches.models import Collection, Profile
from tests.support.batches import Deposit, Ingest


@pytest.fixture
def ingest(tmp_path: Path, settings: Any, in_process_engine: None, transactional_db: None) -> Iterator[Ingest]:
    """A collection `demo` with profile `demo` (task tests.batches.flaky, reports to ops@example.com)."""
    work = tmp_path / "work"
    deposits = tmp_path / "deposits"
    deposits.mkdir()
    settings.BATCH_WORK_ROOT = str(work)
    settings.BATCH_PAYLOAD_ROOTS = [f"file://{deposits}", "memory://"]
    settings.BATCH_RESERVE_BYTES = 0
    settings.BATCH_SLOTS = 4
    collection = Collection.objects.create(name="demo")
    profile = Profile.objects.create(name="demo", collection=collection, task="tests.batches.flaky",
                                     notify_emails="ops@example.com")
    owner = User.objects.get_or_create(username="ann")[0]
    yield Ingest(collection, profile, owner, Deposit(deposits), work)
