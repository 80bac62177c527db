"""Collections (held and released by job admins only) and ingest profiles (read-only) in the native API."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from batches.choices import BatchStatus as B
from batches.models import Batch, Collection, Profile
from tests.coordinators.api.factories import api
from tests.support.batches import Ingest, held_batch, settle
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)

COLLECTIONS = "/api/v1/collections/"


def test_everybody_reads_collections_and_profiles(ingest: Ingest, bob: User) -> None:
    """Any authenticated user lists collections (with their hold) and profiles (name, collection, task, priority, enabled)."""
    Profile.objects.create(name="archive", collection=ingest.collection, task="tests.batches.slow", priority=40,
                           enabled=False)
    listed = api(bob).get(COLLECTIONS).json()["results"]
    assert listed == [{"name": "demo", "description": "", "held": False, "held_reason": "", "held_at": None,
                       "held_by": None}]
    profiles = api(bob).get("/api/v1/batch-profiles/").json()["results"]
    assert profiles == [
        {"name": "archive", "collection": "demo", "task": "tests.batches.slow", "priority": 40, "enabled": False},
        {"name": "demo", "collection": "demo", "task": "tests.batches.flaky", "priority": 5, "enabled": True},
    ]
    assert api(bob).get("/api/v1/batch-profiles/demo/").json()["task"] == "tests.batches.flaky"
    assert api(bob).get("/api/v1/batch-profiles/nope/").status_code == 404
    assert api(bob).post("/api/v1/batch-profiles/", {"name": "x"}, format="json").status_code == 405
    assert api(None).get(COLLECTIONS).status_code in (401, 403)


def test_only_job_admins_hold_a_collection(ingest: Ingest, ann: User, admin: User) -> None:
    """hold/ by a non-admin (even a batch owner) is 403 and changes nothing; by a job admin the collection is held, reason and all."""
    refused = api(ann).post(f"{COLLECTIONS}demo/hold/", {"reason": "disk swap"}, format="json")
    assert refused.status_code == 403 and "ann" in refused.json()["detail"]
    assert Collection.objects.get(name="demo").held is False
    held = api(admin).post(f"{COLLECTIONS}demo/hold/", {"reason": "disk swap"}, format="json")
    assert held.status_code == 200, held.content
    assert (held.json()["held"], held.json()["held_reason"], held.json()["held_by"]) == (True, "disk swap", "root")
    assert api(admin).post(f"{COLLECTIONS}demo/hold/", {"reason": "a\nb"}, format="json").status_code == 400
    assert api(admin).post(f"{COLLECTIONS}nope/hold/", {}, format="json").status_code == 404
    batch = ingest.submit(ingest.deposit.objects(1))
    settle()
    assert Batch.objects.get(pk=batch.pk).status == B.HELD


def test_releasing_a_collection_releases_its_held_batches(ingest: Ingest, ann: User, admin: User) -> None:
    """release/ by a non-admin is 403 (still held, nothing queued); by an admin, the hold goes and its held batches run."""
    batch = held_batch(ingest)
    commands = Command.objects.count()
    assert api(ann).post(f"{COLLECTIONS}demo/release/").status_code == 403
    assert Collection.objects.get(name="demo").held and Command.objects.count() == commands
    response = api(admin).post(f"{COLLECTIONS}demo/release/")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["held"], body["held_reason"], body["released_batches"], body["released_jobs"]) == (False, "", 1, 0)
    settle()
    assert Batch.objects.get(pk=batch.pk).status == B.COMPLETED
