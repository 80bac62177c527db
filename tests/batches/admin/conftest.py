"""Batch admin fixtures: a logged-in job admin, batches with jobs in chosen states (staff clients: tests/support/users.py)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from batches.choices import BatchStatus as B
from batches.models import Batch, BatchJob
from tests.support.batches import Ingest, MakeBatch


@pytest.fixture
def operator(client: Client) -> Client:
    """The test client logged in as a staff superuser (a job admin)."""
    user = User.objects.create_superuser("operator", "operator@example.com", "pw")
    client.force_login(user)
    return client


@pytest.fixture
def make_batch(ingest: Ingest) -> MakeBatch:
    """A batch of the `demo` profile with one job per status given, stored as is (no command runs).

    For pages and filters: the jobs' statuses, priorities and waits are whatever the test sets.
    """

    def make(statuses: list[str] | tuple[str, ...] = (), *, status: str = B.PROCESSING, owner: User | None = None,
             submitter: str = "depositor", payload_url: str = "file:///deposits/batch.checkm",
             jobs: dict[int, dict[str, Any]] | None = None, **fields: Any) -> Batch:
        batch = Batch.objects.create(
            profile=fields.pop("profile", ingest.profile), collection=fields.pop("collection", ingest.collection),
            owner=owner or ingest.owner, submitter=submitter, type="manifest-of-manifests", payload_url=payload_url,
            status=status, **fields,
        )
        rows = []
        for n, job_status in enumerate(statuses, start=1):
            extra = dict((jobs or {}).get(n, {}))
            rows.append(BatchJob(
                batch=batch, number=n, status=job_status, payload_type="manifest-of-manifests",
                payload_url=f"file:///deposits/b{batch.pk}/obj{n:03d}.checkm",
                working_dir=str(ingest.work / str(batch.pk) / str(n)),
                object_key=extra.pop("object_key", f"object:demo:local:b{batch.pk}-obj{n:03d}"),
                local_ids=extra.pop("local_ids", [f"b{batch.pk}-obj{n:03d}"]), **extra,
            ))
        BatchJob.objects.bulk_create(rows)
        return batch

    return make
