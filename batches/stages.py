"""What each stage of a job does (seed 002: "State Description" of each job state).

A stage function gets the job (with its batch, profile and collection) and answers an
`Outcome`: the queue the job moves to (or that it stays and waits), the fields it changed,
and why. It writes nothing itself, except where the seed says to store at once: a minted
primary identifier (so a restarted processing stage never mints twice) and each downloaded
file (so a restarted download skips what arrived whole). `batches.commands.stage` records the
outcome with a compare-and-set on the job's status and stage token.

Stages raise `StageFailed` for a failure retrying cannot fix (digest mismatch, corrupt
manifest, a processing task's error, a refused identifier): the job fails at once. Other
exceptions (storage or network trouble) are retried by the command engine with backoff;
when the retries are spent the job fails with the last error.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tarfile
import time
import urllib.request
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from celery import current_app as app  # project.celery's app, set up by this process
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from batches.choices import JobStatus as J
from batches.choices import SubmissionType
from batches.config import ingest_settings
from batches.definitions import ManifestError, parse_manifest
from batches.models import (
    BatchJob,
    InventoryFile,
    InventoryLocalId,
    InventoryObject,
    MintedIdentifier,
)
from batches.sources import (
    PayloadError,
    PayloadRefused,
    check_payload_url,
    copy_to,
    read_bytes,
    size_of,
)
from kernel import sqlbatch
from xcommands.errors import TransientError

log = logging.getLogger(__name__)

DEFAULT_DIGEST = "md5"  # what the inventory records when a manifest gives no digest


class StageFailed(Exception):  # noqa: N818 - reads as the outcome
    """The job fails now, without retry (the reason is the message)."""


@dataclass
class Outcome:
    """Where the job goes after a stage: `status` (None: it stays and waits `wait_seconds`), fields, a note."""

    status: str | None
    fields: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    wait_seconds: float = 0.0


def trusted(job: BatchJob) -> bool:
    """URLs a job reads are checked as its batch's were: CLI submissions are trusted."""
    return bool(job.batch.trusted)


# ---- pending ----------------------------------------------------------------------------------


def pending(job: BatchJob) -> Outcome:
    """Held when its collection is; an object manifest is read into files (corrupt: failed); else estimating."""
    if job.batch.collection.held:
        return Outcome(J.HELD, note=f"collection {job.batch.collection.name} is held")
    if job.payload_type == SubmissionType.MANIFEST_OF_MANIFESTS and not job.files:
        try:
            opened = check_payload_url(job.payload_url, trusted=trusted(job), what="object manifest")
            data = read_bytes(opened, max_bytes=int(settings.BATCH_MANIFEST_MAX_BYTES))
            if job.payload_digest:  # the seed's Pending -> Failed: the depositor's digest does not match
                algorithm, expected = job.payload_digest["algorithm"], job.payload_digest["value"]
                actual = hashlib.new(algorithm, data).hexdigest()
                if actual != expected:
                    raise StageFailed(
                        f"object manifest {job.payload_url}: {algorithm} digest {actual} does not match the "
                        f"batch manifest's {expected}"
                    )
            manifest = parse_manifest(data, base_url=job.payload_url, kind="object-manifest")
        except PayloadRefused as exc:
            raise StageFailed(str(exc)) from exc
        except ManifestError as exc:
            raise StageFailed(f"object manifest {job.payload_url}: {exc}") from exc
        spec = manifest.objects[0] if manifest.objects else None
        if spec is None or not spec.files:
            raise StageFailed(f"object manifest {job.payload_url} lists no files")
        for url in (f.url for f in spec.files):
            try:
                check_payload_url(url, trusted=trusted(job), what="file")
            except PayloadRefused as exc:
                raise StageFailed(str(exc)) from exc
        fields: dict[str, Any] = {"files": [file_entry(f) for f in spec.files]}
        if spec.primary_id and job.supplied_primary_id and spec.primary_id != job.supplied_primary_id:
            raise StageFailed(
                f"the object manifest names primary id {spec.primary_id}, the batch manifest {job.supplied_primary_id}"
            )
        if spec.primary_id and not job.supplied_primary_id:
            fields["supplied_primary_id"] = spec.primary_id
        if spec.local_ids and not job.local_ids:
            fields["local_ids"] = list(spec.local_ids)
        return Outcome(J.ESTIMATING, fields, note=f"{len(spec.files)} file(s) listed")
    return Outcome(J.ESTIMATING)


def file_entry(spec: Any) -> dict[str, Any]:
    """A manifest FileSpec as stored in `BatchJob.files`."""
    entry: dict[str, Any] = {"url": spec.url, "name": spec.name, "size": spec.size}
    if spec.digest is not None:
        entry["digest"] = {"algorithm": spec.digest.algorithm, "value": spec.digest.value}
    return entry


# ---- estimating -------------------------------------------------------------------------------


def estimating(job: BatchJob) -> Outcome:
    """Sizes by manifest, HEAD or fsspec info; never fails (unknown counts 0). A very large job gets the large-job priority."""
    total = 0
    unknown = 0
    for entry in job.files:
        size = entry.get("size")
        if size is None:
            try:
                size = size_of(check_payload_url(entry["url"], trusted=trusted(job), what="file"))
            except Exception:  # noqa: BLE001 - estimating never fails (a refused URL fails its download)
                size = None
        if size is None:
            unknown += 1
            continue
        total += int(size) * (2 if entry.get("container") else 1)  # a container is kept while it is unpacked
    config = ingest_settings()
    fields: dict[str, Any] = {"space_needed": total}
    note = f"{total} bytes" + (f", {unknown} file(s) of unknown size" if unknown else "")
    if total > config.large_job_bytes and job.priority < config.large_job_priority:
        fields["priority"] = config.large_job_priority
        note += f"; larger than {config.large_job_bytes} bytes: priority {job.priority} -> {config.large_job_priority}"
    return Outcome(J.PROVISIONING, fields, note=note)


# ---- provisioning -----------------------------------------------------------------------------


def work_root() -> str:
    """BATCH_WORK_ROOT, created if missing."""
    root = str(settings.BATCH_WORK_ROOT)
    os.makedirs(root, exist_ok=True)
    return root


def free_bytes() -> int:
    """Free space on the working volume."""
    return int(shutil.disk_usage(work_root()).free)


def provisioning(job: BatchJob) -> Outcome:
    """Downloading once free space minus what it needs stays above the reserve; else it waits and is looked at again."""
    config = ingest_settings()
    needed = int(job.space_needed or 0)
    try:
        free = free_bytes()
    except OSError as exc:  # provisioning never fails: it waits
        return Outcome(None, note=f"cannot measure free space: {exc}", wait_seconds=config.provision_sleep_seconds)
    if free - needed >= config.reserve_bytes:
        return Outcome(J.DOWNLOADING, note=f"{free} bytes free, {needed} needed, reserve {config.reserve_bytes}")
    return Outcome(
        None, wait_seconds=config.provision_sleep_seconds,
        note=f"waits for space: {free} bytes free, needs {needed} + reserve {config.reserve_bytes}",
    )


# ---- downloading ------------------------------------------------------------------------------


def producer_dir(job: BatchJob) -> str:
    """Where the object's files are written."""
    return os.path.join(job.working_dir, "producer")


def safe_join(directory: str, name: str) -> str:
    """directory/name, refused (StageFailed) if name escapes the directory."""
    target = os.path.realpath(os.path.join(directory, name))
    root = os.path.realpath(directory)
    if target != root and not target.startswith(root + os.sep):
        raise StageFailed(f"file name {name!r} escapes the working directory")
    return target


def _download_one(entry: dict[str, Any], destination: str, retries: int, *, trusted: bool) -> dict[str, Any]:
    """Fetch one file with retries; its size and digest. StageFailed on a refused URL, a digest or size mismatch (no retry).

    The URL is checked against the payload roots again here, where it is opened (it was checked
    at submission; what a path resolves to can change since).
    """
    try:
        opened = check_payload_url(entry["url"], trusted=trusted, what="file")
    except PayloadRefused as exc:
        raise StageFailed(str(exc)) from exc
    expected = entry.get("digest") or {}
    algorithm = expected.get("algorithm") or DEFAULT_DIGEST
    last: Exception | None = None
    for attempt in range(1, retries + 2):
        digest = hashlib.new(algorithm)
        try:
            size = copy_to(opened, destination, update=digest.update)
        except (PayloadError, OSError) as exc:
            last = exc
            time.sleep(min(0.2 * attempt, 2.0))
            continue
        value = digest.hexdigest()
        if expected.get("value") and value != expected["value"]:
            os.unlink(destination)
            raise StageFailed(f"{entry['name']}: {algorithm} digest {value} does not match the manifest's {expected['value']}")
        if entry.get("size") is not None and int(entry["size"]) != size:
            os.unlink(destination)
            raise StageFailed(f"{entry['name']}: {size} bytes, the manifest says {entry['size']}")
        return {"size": size, "computed": {"algorithm": algorithm, "value": value}, "done": True}
    raise StageFailed(f"{entry['name']}: download failed after {retries + 1} attempt(s): {last}")


def _save_files(job: BatchJob) -> None:
    with transaction.atomic():
        BatchJob.objects.filter(pk=job.pk, status=J.DOWNLOADING).update(files=job.files)


def downloading(job: BatchJob) -> Outcome:
    """Every file into the working directory (bounded retries and parallelism), digests checked, sizes recomputed.

    Each file that arrives whole is recorded at once, so a download restarted after its worker
    died fetches only what is missing. A container is unpacked (zip, tar) into the object's files.
    """
    directory = producer_dir(job)
    os.makedirs(directory, exist_ok=True)
    retries = max(0, int(settings.BATCH_DOWNLOAD_RETRIES))
    todo = [
        i for i, entry in enumerate(job.files)
        if not (entry.get("done") and os.path.exists(safe_join(directory, entry["name"])))
    ]
    failure: StageFailed | None = None
    with ThreadPoolExecutor(max_workers=max(1, int(settings.BATCH_DOWNLOAD_PARALLELISM))) as pool:
        futures = {
            pool.submit(_download_one, job.files[i], safe_join(directory, job.files[i]["name"]), retries,
                        trusted=trusted(job)): i
            for i in todo
        }
        containers = any(entry.get("container") for entry in job.files)
        remaining = len(futures)
        for future in as_completed(futures):
            i = futures[future]
            remaining -= 1
            try:
                job.files[i] = {**job.files[i], **future.result()}
            except StageFailed as exc:
                failure = failure or exc
                continue
            if remaining or failure is not None or containers:
                _save_files(job)  # the last file of a download that goes on is recorded with its outcome, next
    if failure is not None:
        raise failure
    files = job.files
    if any(entry.get("container") for entry in files):
        files = _unpack(job, directory)
    total = sum(int(entry.get("size") or 0) for entry in files)
    return Outcome(J.PROCESSING, {"files": files, "space_needed": total}, note=f"{len(files)} file(s), {total} bytes")


def _unpack(job: BatchJob, directory: str) -> list[dict[str, Any]]:
    """Unpack the container(s) into the working directory; the object's files with their md5 digests."""
    files: list[dict[str, Any]] = []
    content = os.path.join(job.working_dir, "content")
    shutil.rmtree(content, ignore_errors=True)
    os.makedirs(content)
    for entry in job.files:
        archive = safe_join(directory, entry["name"])
        if not entry.get("container"):
            continue
        try:
            if zipfile.is_zipfile(archive):
                with zipfile.ZipFile(archive) as zipped:
                    for info in zipped.infolist():
                        if info.is_dir():
                            continue
                        target = safe_join(content, info.filename)
                        os.makedirs(os.path.dirname(target), exist_ok=True)
                        with zipped.open(info) as source, open(target, "wb") as out:
                            shutil.copyfileobj(source, out)
            elif tarfile.is_tarfile(archive):
                with tarfile.open(archive) as tarred:
                    tarred.extractall(content, filter="data")  # noqa: S202 - the data filter refuses escapes and links out
            else:
                raise StageFailed(f"{entry['name']}: not a zip or tar container")
        except (zipfile.BadZipFile, tarfile.TarError, OSError) as exc:
            raise StageFailed(f"{entry['name']}: cannot unpack: {exc}") from exc
    for root, _, names in os.walk(content):
        for name in sorted(names):
            path = os.path.join(root, name)
            digest = hashlib.md5()  # noqa: S324 - a checksum, as Merritt records
            with open(path, "rb") as handle:
                for chunk in iter(lambda: handle.read(1024 * 1024), b""):
                    digest.update(chunk)
            relative = os.path.relpath(path, content)
            files.append({
                "url": f"file://{path}", "name": relative, "size": os.path.getsize(path), "done": True,
                "computed": {"algorithm": "md5", "value": digest.hexdigest()}, "from_container": True,
            })
    if not files:
        raise StageFailed("the container holds no files")
    return files


# ---- processing -------------------------------------------------------------------------------


class _MintedMeanwhile(Exception):  # noqa: N818 - a signal inside mint, never raised out of it
    """Another run stored the job's primary identifier first: this mint is rolled back."""


def mint(job: BatchJob) -> str:
    """A new primary identifier, stored on the job at once (its own transaction): a restart never mints again.

    The identifier is stored only on a job that has none (a compare-and-set, which on
    PostgreSQL waits for a concurrent mint to commit); when another run minted first, this
    mint is rolled back and theirs is the job's. Two batches of raw statements (`kernel.sqlbatch`):
    the row that numbers the identifier, then the job's and the row's writes.
    """
    prefix = job.batch.profile.identifier_prefix
    now = timezone.now()
    numbered, params = sqlbatch.insert_rows(
        [MintedIdentifier(identifier=f"pending-{job.pk}-{time.monotonic_ns()}", job_id=job.pk, created_at=now)])
    try:
        with transaction.atomic():
            row = sqlbatch.run([numbered[0] + " RETURNING id"], params)[0][0][0]
            identifier = f"{prefix}{_base32(row)}"
            sets, values = sqlbatch.update_set(BatchJob, {"primary_id": identifier, "minted": True}, now)
            stored = sqlbatch.run([
                f"UPDATE batches_batchjob SET {sets} WHERE id = %(job)s AND primary_id = '' RETURNING id",  # noqa: S608 - names from the model
                "UPDATE batches_mintedidentifier SET identifier = %(identifier)s WHERE id = %(row)s",
            ], {**values, "job": job.pk, "row": row, "identifier": identifier})[0]
            if not stored:
                raise _MintedMeanwhile
    except _MintedMeanwhile:
        identifier = BatchJob.objects.filter(pk=job.pk).values_list("primary_id", flat=True).get()
        job.primary_id = identifier
        return identifier
    job.primary_id, job.minted = identifier, True
    return identifier


_ALPHABET = "0123456789bcdfghjkmnpqrstvwxz"  # NOID's betanumeric alphabet: no vowels, no l


def _base32(number: int) -> str:
    digits = ""
    while True:
        number, rest = divmod(number, len(_ALPHABET))
        digits = _ALPHABET[rest] + digits
        if not number:
            return digits.rjust(6, "0")


def identify(job: BatchJob) -> str:
    """The object's primary id: supplied, found by a local id, or minted; refused when they disagree."""
    known: dict[str, str] = {}
    if job.local_ids:
        listed, params = sqlbatch.in_list(list(dict.fromkeys(job.local_ids)), "_local")
        known = dict(sqlbatch.run([
            "SELECT l.local_id, o.primary_id FROM batches_inventorylocalid l"  # noqa: S608 - constant SQL
            " JOIN batches_inventoryobject o ON o.id = l.object_id"
            f" WHERE l.collection_id = %(collection)s AND l.local_id IN {listed}",
        ], {**params, "collection": job.batch.collection_id})[0])
    found = sorted(set(known.values()))
    if len(found) > 1:
        raise StageFailed(f"local ids {sorted(known)} belong to different objects: {', '.join(found)}")
    supplied = job.supplied_primary_id
    if supplied and found and found[0] != supplied:
        local = next(iter(known))
        raise StageFailed(f"local id {local} belongs to {found[0]}, not to the supplied {supplied}")
    if job.primary_id:
        return job.primary_id
    if supplied or found:
        identifier = supplied or found[0]
        BatchJob.objects.filter(pk=job.pk).update(primary_id=identifier)
        job.primary_id = identifier
        return identifier
    return mint(job)


def task_arguments(job: BatchJob) -> dict[str, Any]:
    """What the profile's task is called with."""
    batch = job.batch
    return {
        "job_id": job.pk,
        "batch_id": batch.pk,
        "profile": batch.profile.name,
        "collection": batch.collection.name,
        "primary_id": job.primary_id,
        "local_ids": list(job.local_ids),
        "working_dir": job.working_dir,
        "files": [
            {"name": f["name"], "size": f.get("size"), "path": os.path.join(
                job.working_dir, "content" if f.get("from_container") else "producer", f["name"])}
            for f in job.files
        ],
        "submission_mode": batch.submission_mode,
        "erc": {"what": job.title or batch.erc_what, "who": job.creator or batch.erc_who,
                "when": job.date or batch.erc_when, "where": batch.erc_where or job.primary_id},
    }


def processing(job: BatchJob) -> Outcome:
    """Identifier lookup (and minting), then the profile's task in this worker; its error fails the job."""

    identifier = identify(job)
    name = job.batch.profile.task
    task = app.tasks.get(name)
    if task is None:
        raise StageFailed(f"processing task {name!r} is not registered in this worker (EXTRA_TASK_MODULES?)")
    try:
        result = task.run(**task_arguments(job))
    except Exception as exc:  # the task's own failure: the job fails (an admin may resume it at processing)
        raise StageFailed(f"{name}: {exc.__class__.__name__}: {exc}") from exc
    note = f"primary id {identifier}" + (" (minted)" if job.minted else "")
    if result is not None:
        note += f"; {name} returned {json.dumps(result, default=str)[:200]}"
    return Outcome(J.RECORDING, {"primary_id": identifier}, note=note)


# ---- recording --------------------------------------------------------------------------------


def recording(job: BatchJob) -> Outcome:
    """The object, its local ids and this version's files into the inventory (once per job).

    One transaction, the object's row locked (or created), in two batches of raw statements
    (`kernel.sqlbatch`): the object and the known local ids read, then every write. Two jobs
    creating the same object or local id at once (different object keys: not expected) meet
    at the unique constraints: the loser's transaction rolls back and the stage is retried,
    and then sees the winner's rows.
    """
    if job.inventory_version is not None:
        return Outcome(J.NOTIFY, note=f"recorded already as version {job.inventory_version}")
    collection = job.batch.collection_id
    local_ids = list(dict.fromkeys(job.local_ids))
    params: dict[str, Any] = {"collection": collection, "primary": job.primary_id, "job": job.pk}
    reads = [
        f"SELECT {sqlbatch.columns(InventoryObject, 'o')} FROM batches_inventoryobject o"  # noqa: S608 - constant SQL
        " WHERE o.collection_id = %(collection)s AND o.primary_id = %(primary)s" + sqlbatch.for_update(),
    ]
    if local_ids:
        listed, values = sqlbatch.in_list(local_ids, "_local")
        params.update(values)
        reads.append("SELECT l.local_id, l.object_id FROM batches_inventorylocalid l"  # noqa: S608 - constant SQL
                      f" WHERE l.collection_id = %(collection)s AND l.local_id IN {listed}")
    # The object's key, in a batch that may create the object: read when each row is written.
    key = {"object_id": "(SELECT i.id FROM batches_inventoryobject i WHERE i.collection_id = %(collection)s"
                        " AND i.primary_id = %(primary)s)"}
    try:
        with transaction.atomic():
            answers = sqlbatch.run(reads, params)
            obj = (sqlbatch.load(InventoryObject, answers[0][0]) if answers[0]
                   else InventoryObject(collection_id=collection, primary_id=job.primary_id, version=0))
            known = dict(answers[1]) if local_ids else {}
            for local in local_ids:
                if local in known and known[local] != obj.pk:
                    raise StageFailed(f"local id {local} is recorded for another object")
            now = timezone.now()
            obj.version += 1
            obj.local_ids = sorted(set(obj.local_ids) | set(job.local_ids))
            obj.title = job.title or job.batch.erc_what or obj.title
            obj.creator = job.creator or job.batch.erc_who or obj.creator
            obj.date = job.date or job.batch.erc_when or obj.date
            obj.last_modified = now
            if obj.pk is None:
                statements, values = sqlbatch.insert_rows([obj], prefix="_obj")
            else:
                sets, values = sqlbatch.update_set(InventoryObject, {
                    name: getattr(obj, name) for name in ("version", "local_ids", "title", "creator", "date")
                }, now)
                statements = [f"UPDATE batches_inventoryobject SET {sets} WHERE id = %(object)s"]  # noqa: S608 - names from the model
                params["object"] = obj.pk
            params.update(values)
            rows: list[tuple[list[Any], str]] = [
                ([InventoryLocalId(collection_id=collection, local_id=local) for local in local_ids if local not in known],
                 "_lid"),
                ([InventoryFile(
                    version=obj.version, name=entry["name"], size=int(entry.get("size") or 0),
                    digest_algorithm=(entry.get("computed") or {}).get("algorithm", ""),
                    digest_value=(entry.get("computed") or {}).get("value", ""), job_id=job.pk,
                ) for entry in job.files], "_file"),
            ]
            for instances, prefix in rows:
                if instances:
                    inserts, values = sqlbatch.insert_rows(instances, prefix=prefix, expressions=key)
                    statements += inserts
                    params.update(values)
            sets, values = sqlbatch.update_set(BatchJob, {"inventory_version": obj.version}, now, prefix="_job_")
            statements.append(f"UPDATE batches_batchjob SET {sets} WHERE id = %(job)s")  # noqa: S608 - names from the model
            sqlbatch.run(statements, {**params, **values})
    except IntegrityError as exc:
        raise TransientError(f"recording {job.primary_id}: recorded at the same time by another job: {exc}") from exc
    job.inventory_version = obj.version
    return Outcome(J.NOTIFY, {"inventory_version": obj.version}, note=f"{job.primary_id} version {obj.version}")


# ---- notify -----------------------------------------------------------------------------------


def notify(job: BatchJob) -> Outcome:
    """The profile's callback for this object, if any (its failure fails the job); then completed."""
    url = job.batch.profile.callback_url
    if url:
        body = json.dumps({
            "job": job.pk, "batch": job.batch_id, "collection": job.batch.collection.name,
            "primary_id": job.primary_id, "local_ids": job.local_ids, "version": job.inventory_version,
            "status": "completed",
        }).encode()
        request = urllib.request.Request(  # noqa: S310 - an admin-configured http(s) URL
            url, data=body, method="POST",
            headers={"Content-Type": "application/json", "Idempotency-Key": f"job-{job.pk}-notify"},
        )
        try:
            with urllib.request.urlopen(request, timeout=float(settings.BATCH_HTTP_TIMEOUT_SECONDS)) as response:  # noqa: S310
                if response.status >= 300:
                    raise StageFailed(f"callback {url} answered {response.status}")
        except OSError as exc:
            raise StageFailed(f"callback {url}: {exc}") from exc
    return Outcome(J.COMPLETED, note="callback sent" if url else "")


STAGE_FUNCTIONS: dict[str, Callable[[BatchJob], Outcome]] = {
    J.PENDING: pending,
    J.ESTIMATING: estimating,
    J.PROVISIONING: provisioning,
    J.DOWNLOADING: downloading,
    J.PROCESSING: processing,
    J.RECORDING: recording,
    J.NOTIFY: notify,
}


def clean_working_dir(job: BatchJob) -> None:
    """Remove the job's working directory (completed or deleted jobs)."""
    shutil.rmtree(job.working_dir, ignore_errors=True)
