"""A batch's payload as objects: one job per object (seed: "Batch: Pending --> Processing").

- `file`: the payload is one file: one object.
- `container`: one zip or tar: one object (unpacked when downloaded).
- `object-manifest`: the payload lists the files of one object.
- `manifest-of-manifests`: each line names an object manifest (read by the job's pending stage).
- `container-manifest`: each line names a container of one object.

The batch manifest was read and checked at submission and stored with the batch; this reads
the stored text again (the same parser), so expansion never depends on the file still being there.
"""

from __future__ import annotations

import posixpath
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from batches.choices import SubmissionType as T
from batches.definitions import Manifest, ObjectSpec, parse_manifest
from batches.models import Batch
from batches.stages import file_entry

MANIFEST_TYPES = (T.OBJECT_MANIFEST, T.MANIFEST_OF_MANIFESTS, T.CONTAINER_MANIFEST)


@dataclass
class JobSpec:
    """What one job starts with."""

    payload_url: str
    payload_type: str
    files: list[dict[str, Any]] = field(default_factory=list)
    local_ids: list[str] = field(default_factory=list)
    primary_id: str = ""
    title: str = ""
    creator: str = ""
    date: str = ""
    payload_digest: dict[str, str] | None = None


def url_name(url: str) -> str:
    """The last path segment of a URL, percent-decoded (a file's name in the working directory)."""
    path = urllib.parse.urlsplit(url).path if "://" in url else url
    name = posixpath.basename(urllib.parse.unquote(path.rstrip("/")))
    return name or "payload"


def parse_batch_manifest(batch_type: str, text: str, base_url: str, *, max_bytes: int | None = None) -> Manifest:
    """The batch's manifest parsed as its type says (ManifestError when corrupt)."""
    kwargs: dict[str, Any] = {} if max_bytes is None else {"max_bytes": max_bytes}
    return parse_manifest(text, base_url=base_url, kind=str(batch_type), **kwargs)


def _from_object(spec: ObjectSpec, payload_type: str, payload_url: str) -> JobSpec:
    return JobSpec(
        payload_url=payload_url, payload_type=payload_type, local_ids=list(spec.local_ids), primary_id=spec.primary_id,
        title=spec.title, creator=spec.creator, date=spec.date,
        files=[{**file_entry(f), **({"container": True} if spec.container else {})} for f in spec.files],
    )


def job_specs(batch: Batch) -> list[JobSpec]:
    """One JobSpec per object of the batch's payload."""
    kind = batch.type
    if kind == T.FILE:
        return [JobSpec(batch.payload_url, kind, files=[{"url": batch.payload_url, "name": url_name(batch.payload_url),
                                                           "size": None}])]
    if kind == T.CONTAINER:
        return [JobSpec(batch.payload_url, kind, files=[{"url": batch.payload_url, "name": url_name(batch.payload_url),
                                                           "size": None, "container": True}])]
    manifest = parse_batch_manifest(kind, batch.manifest, batch.payload_url)
    if kind == T.OBJECT_MANIFEST:
        return [_from_object(manifest.objects[0], kind, batch.payload_url)]
    if kind == T.MANIFEST_OF_MANIFESTS:
        return [
            JobSpec(spec.manifest_url, kind, local_ids=list(spec.local_ids), primary_id=spec.primary_id,
                    title=spec.title, creator=spec.creator, date=spec.date,
                    payload_digest=({"algorithm": spec.manifest_digest.algorithm, "value": spec.manifest_digest.value}
                                    if spec.manifest_digest is not None else None))
            for spec in manifest.objects
        ]
    return [_from_object(spec, kind, spec.files[0].url) for spec in manifest.objects]


def object_key(collection: str, spec: JobSpec) -> str:
    """The command key of the object's stages: its primary id, else its first local id (None: the job's own)."""
    if spec.primary_id:
        return f"object:{collection}:{spec.primary_id}"[:255]
    if spec.local_ids:
        return f"object:{collection}:local:{spec.local_ids[0]}"[:255]
    return ""
