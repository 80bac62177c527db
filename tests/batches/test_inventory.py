"""The processing and recording stages' writes: the identifier found or minted once, the inventory's versions and refusals."""

from __future__ import annotations

from typing import Any

import pytest

from batches import stages
from batches.choices import JobStatus as J
from batches.models import (
    Batch,
    BatchJob,
    InventoryFile,
    InventoryLocalId,
    InventoryObject,
    MintedIdentifier,
)
from batches.stages import StageFailed, identify, mint, recording
from tests.support.batches import Ingest

pytestmark = pytest.mark.django_db(transaction=True)


def job_of(ingest: Ingest, number: int = 1, *, local_ids: list[str] | None = None, primary_id: str = "",
           supplied: str = "", files: list[dict[str, Any]] | None = None, **batch: Any) -> BatchJob:
    """A processing job of a new batch, loaded as its stage command loads it (batch, profile, collection)."""
    owner = Batch.objects.create(
        profile=ingest.profile, collection=ingest.collection, owner=ingest.owner, submitter="ann", type="file",
        payload_url="file:///x", status="processing", **batch,
    )
    created = BatchJob.objects.create(
        batch=owner, number=number, object_key=f"batch-job:{number}", payload_url="file:///x", payload_type="file",
        working_dir="/tmp/x", status=J.RECORDING, local_ids=local_ids or [], primary_id=primary_id,
        supplied_primary_id=supplied, files=files or [],
    )
    return BatchJob.objects.select_related("batch__profile", "batch__collection").get(pk=created.pk)


def entry(name: str, size: int, value: str) -> dict[str, Any]:
    return {"name": name, "size": size, "computed": {"algorithm": "md5", "value": value}, "done": True}


def test_a_new_object_is_recorded_with_its_local_ids_and_files_and_its_next_version_keeps_what_it_had(
    ingest: Ingest,
) -> None:
    first = job_of(ingest, local_ids=["a1", "a2", "a1"], primary_id="ark:/1/x", files=[entry("f.txt", 3, "d1")],
                   erc_what="Title", erc_who="Ann")
    outcome = recording(first)
    assert (outcome.status, outcome.fields) == (J.NOTIFY, {"inventory_version": 1})
    obj = InventoryObject.objects.get(primary_id="ark:/1/x")
    assert (obj.collection_id, obj.version, obj.local_ids, obj.title, obj.creator) == (
        ingest.collection.pk, 1, ["a1", "a2"], "Title", "Ann")
    assert sorted(InventoryLocalId.objects.filter(object=obj).values_list("local_id", flat=True)) == ["a1", "a2"]
    assert list(InventoryFile.objects.values_list("object_id", "version", "name", "size", "digest_value", "job_id")) == [
        (obj.pk, 1, "f.txt", 3, "d1", first.pk)]
    assert BatchJob.objects.get(pk=first.pk).inventory_version == 1 == first.inventory_version

    second = job_of(ingest, 2, local_ids=["a2", "b1"], primary_id="ark:/1/x",
                    files=[entry("f.txt", 4, "d2"), entry("g.txt", 5, "d3")])
    before = obj.last_modified
    assert recording(second).fields == {"inventory_version": 2}
    obj.refresh_from_db()
    assert (obj.version, obj.local_ids, obj.title, obj.creator) == (2, ["a1", "a2", "b1"], "Title", "Ann")
    assert obj.last_modified > before
    assert InventoryObject.objects.count() == 1
    assert sorted(InventoryLocalId.objects.filter(object=obj).values_list("local_id", flat=True)) == ["a1", "a2", "b1"]
    assert sorted(InventoryFile.objects.filter(version=2).values_list("name", "size", "job_id")) == [
        ("f.txt", 4, second.pk), ("g.txt", 5, second.pk)]
    assert BatchJob.objects.get(pk=second.pk).inventory_version == 2
    assert recording(second).note == "recorded already as version 2"  # once per job
    assert InventoryObject.objects.get().version == 2


def test_a_local_id_of_another_object_is_refused_and_nothing_is_written(ingest: Ingest) -> None:
    recording(job_of(ingest, local_ids=["a1"], primary_id="ark:/1/x"))
    other = job_of(ingest, 2, local_ids=["b1", "a1"], primary_id="ark:/1/y", files=[entry("f.txt", 3, "d1")])
    with pytest.raises(StageFailed, match="local id a1 is recorded for another object"):
        recording(other)
    assert list(InventoryObject.objects.values_list("primary_id", flat=True)) == ["ark:/1/x"]
    assert list(InventoryLocalId.objects.values_list("local_id", flat=True)) == ["a1"]
    assert not InventoryFile.objects.exists()
    assert BatchJob.objects.get(pk=other.pk).inventory_version is None


def test_identify_finds_the_object_by_a_local_id_takes_a_supplied_id_and_refuses_a_disagreement(ingest: Ingest) -> None:
    recording(job_of(ingest, local_ids=["a1"], primary_id="ark:/1/x"))
    recording(job_of(ingest, 2, local_ids=["b1"], primary_id="ark:/1/y"))
    found = job_of(ingest, 3, local_ids=["zz", "a1"])
    assert identify(found) == "ark:/1/x" == BatchJob.objects.get(pk=found.pk).primary_id
    supplied = job_of(ingest, 4, local_ids=["new"], supplied="ark:/1/s")
    assert identify(supplied) == "ark:/1/s" == BatchJob.objects.get(pk=supplied.pk).primary_id
    with pytest.raises(StageFailed, match="belong to different objects: ark:/1/x, ark:/1/y"):
        identify(job_of(ingest, 5, local_ids=["a1", "b1"]))
    with pytest.raises(StageFailed, match="local id a1 belongs to ark:/1/x, not to the supplied ark:/1/other"):
        identify(job_of(ingest, 6, local_ids=["a1"], supplied="ark:/1/other"))
    assert not MintedIdentifier.objects.exists()


def test_a_minted_identifier_is_stored_with_its_row_once_and_a_second_mint_keeps_the_first(
    ingest: Ingest, monkeypatch: pytest.MonkeyPatch,
) -> None:
    job = job_of(ingest, local_ids=["unknown"])
    identifier = identify(job)
    row = MintedIdentifier.objects.get()
    prefix = job.batch.profile.identifier_prefix
    assert identifier == f"{prefix}{stages._base32(row.pk)}" == row.identifier  # noqa: SLF001
    stored = BatchJob.objects.get(pk=job.pk)
    assert (stored.primary_id, stored.minted, row.job_id) == (identifier, True, job.pk)
    assert identify(job) == identifier and MintedIdentifier.objects.count() == 1  # a job keeps its identifier

    late = BatchJob.objects.select_related("batch__profile", "batch__collection").get(pk=job.pk)
    late.primary_id = ""  # a run that read the job before the first mint committed
    assert mint(late) == identifier == late.primary_id
    assert list(MintedIdentifier.objects.values_list("identifier", flat=True)) == [identifier]  # its own rolled back
