"""Batch test fixtures: a collection and profile, deposits written to tmp_path, commands and slots run in process."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

import tests.batches.tasks  # noqa: F401 - registers the test processing tasks
from batches.commands.stage import fill_slots
from batches.definitions import (
    Digest,
    FileSpec,
    ObjectSpec,
    write_batch_manifest,
    write_object_manifest,
)
from batches.dispatch import ensure_slots
from batches.models import Batch, Collection, Profile
from batches.services import submit_batch
from tests.coordinators.runtime.conftest import in_process_engine, run_pending_commands  # noqa: F401 - fixture
from xcommands.choices import CommandStatus
from xcommands.models import Command


def settle(rounds: int = 200) -> int:
    """Run queued commands, filling slots between rounds, until nothing is left to run; how many ran."""
    ensure_slots()
    ran = 0
    for _ in range(rounds):
        Command.objects.filter(status=CommandStatus.PENDING).update(not_before=timezone.now())
        done = run_pending_commands()
        taken = fill_slots()
        ran += done
        if not done and not taken:
            break
    return ran


@dataclass
class Deposit:
    """Files written under the deposits root, and manifests of them."""

    root: Path
    urls: list[str] = field(default_factory=list)

    def file(self, name: str, content: bytes) -> str:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        return f"file://{path}"

    def objects(self, count: int, *, wrong: set[int] = frozenset(), files: int = 2, prefix: str = "obj") -> str:  # type: ignore[assignment]
        """A manifest of manifests of `count` objects (local ids obj001 ...); objects in `wrong` have a bad digest."""
        specs = []
        for n in range(1, count + 1):
            file_specs = []
            for f in range(files):
                content = f"{prefix} {n} file {f}\n".encode()
                url = self.file(f"{prefix}{n:03d}/file{f}.txt", content)
                value = hashlib.md5(content).hexdigest()  # noqa: S324 - manifests carry md5
                if n in wrong and f == 0:
                    value = "0" * 32
                file_specs.append(FileSpec(url=url, name=f"file{f}.txt", size=len(content), digest=Digest("md5", value)))
            text = write_object_manifest(file_specs, local_ids=f"{prefix}{n:03d}")
            manifest = self.file(f"{prefix}{n:03d}.checkm", text.encode())
            specs.append(ObjectSpec(local_ids=(f"{prefix}{n:03d}",), primary_id="", files=(), manifest_url=manifest))
        return self.file(f"{prefix}-batch.checkm", write_batch_manifest(specs).encode())


@dataclass
class Ingest:
    """The test's collection, profile, owner and deposit area."""

    collection: Collection
    profile: Profile
    owner: User
    deposit: Deposit
    work: Path

    def submit(self, payload_url: str, type: str = "manifest-of-manifests", **kwargs: Any) -> Batch:  # noqa: A002
        batch, _ = submit_batch(owner=self.owner, profile=kwargs.pop("profile", self.profile.name),
                                payload_url=payload_url, type=type, **kwargs)
        return batch


@pytest.fixture
def ingest(tmp_path: Path, settings: Any, in_process_engine: None, transactional_db: None) -> Iterator[Ingest]:  # noqa: F811
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


Make = Callable[..., Batch]
