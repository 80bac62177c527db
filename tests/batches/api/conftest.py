"""Fixtures of the batch API and CLI tests: the ingest's owner `ann` with a token, others without rights, and batches in known states."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from rest_framework.authtoken.models import Token

from batches.choices import BatchStatus as B
from batches.choices import JobStatus as J
from batches.models import Batch, BatchJob, Collection
from tests.batches.conftest import Ingest, settle
from tests.coordinators.api.factories import user
from xcommands import engine
from xcommands.choices import CommandStatus
from xcommands.models import Command


@pytest.fixture
def ann(ingest: Ingest) -> User:
    """The ingest's owner (submits the batches), with an API token."""
    Token.objects.get_or_create(user=ingest.owner, defaults={"key": "ann-token".ljust(40, "0")})
    return ingest.owner


@pytest.fixture
def bob(db: None) -> User:
    """Another user: no rights on ann's batches."""
    return user("bob")


@pytest.fixture
def carol(db: None) -> User:
    """A member of the `ops` group (named in ACLs)."""
    return user("carol", groups=("ops",))


@pytest.fixture
def admin(db: None) -> User:
    """A job admin (coordinators.change_coordinatorjob), not a superuser."""
    return user("root", staff=True)


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
