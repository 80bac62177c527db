"""Batch test helpers: deposits written to disk, the test's ingest (collection, profile, owner), batches run to a state.

The `ingest` fixture that builds an `Ingest` is tests/batches/conftest.py's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone

from batches.choices import BatchStatus as B
from batches.choices import JobStatus as J
from batches.commands.stage import fill_slots
from batches.definitions import (
    Digest,
    FileSpec,
    ObjectSpec,
    write_batch_manifest,
    write_object_manifest,
)
from batches.dispatch import ensure_slots
from batches.models import Batch, BatchJob, Collection, Profile
from batches.services import submit_batch
from tests.support.engine import run_pending_commands
from xcommands import engine
from xcommands.choices import CommandStatus
from xcommands.models import Command

#: The `make_batch` fixture (tests/batches/admin/conftest.py): stored batches with jobs in chosen states.
MakeBatch = Callable[..., Batch]


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


def failed_batch(ingest: Ingest, count: int = 3, wrong: frozenset[int] = frozenset({2}), *, expect: str = "",
                 **kwargs: Any) -> Batch:
    """A batch run to its report: the objects in `wrong` failed (bad digest), the others completed; failed (if any did)."""
    batch = ingest.submit(ingest.deposit.objects(count, wrong=set(wrong), prefix=kwargs.pop("prefix", "obj")), **kwargs)
    settle()
    batch.refresh_from_db()
    assert batch.status == (expect or (B.FAILED if wrong else B.COMPLETED)), batch.error
    return batch


def held_batch(ingest: Ingest, **kwargs: Any) -> Batch:
    """A batch submitted while its collection is held: held (the collection stays held)."""
    Collection.objects.filter(pk=ingest.collection.pk).update(held=True, held_reason="maintenance")
    batch = ingest.submit(ingest.deposit.objects(2, prefix=kwargs.pop("prefix", "held")), **kwargs)
    settle()
    batch.refresh_from_db()
    assert batch.status == B.HELD
    return batch


def batch_with_held_jobs(ingest: Ingest, count: int = 2, **kwargs: Any) -> Batch:
    """A processing batch whose jobs are held: the collection was held after the batch started, before its jobs ran."""
    batch = ingest.submit(ingest.deposit.objects(count, prefix=kwargs.pop("prefix", "hj")), **kwargs)
    start = Command.objects.filter(status=CommandStatus.PENDING).order_by("seq").first()
    assert start is not None
    Command.objects.filter(pk=start.pk).update(not_before=timezone.now())
    engine.process(start.pk)  # the start alone: jobs pending, none of their stages ran yet
    Collection.objects.filter(pk=ingest.collection.pk).update(held=True)
    settle()
    batch.refresh_from_db()
    assert batch.status == B.PROCESSING
    assert set(BatchJob.objects.filter(batch=batch).values_list("status", flat=True)) == {J.HELD}
    return batch
