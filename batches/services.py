"""What the API, the CLI and the admin call: submit a batch, hold and release collections, the admin verbs, progress.

Submission is light (seed): the payload URL is checked (protocol, roots), a manifest is read
and checked (a corrupt one is refused, nothing stored), and the batch is stored PENDING with
its start queued; objects become jobs when the start runs. Verbs are checked here (rights,
status) and queued as commands on the batch's or the object's key, which check again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils import timezone

from batches.choices import PRIORITY_MAX, PRIORITY_MIN, SubmissionMode, SubmissionType
from batches.choices import JobStatus as J
from batches.commands import (
    BATCH_COMMANDS,
    BatchJobAdminXCommand,
    BatchStartXCommand,
    ReportDeliveryXCommand,
    check_batch_verb,
    check_job_verb,
)
from batches.definitions import ManifestError
from batches.expand import MANIFEST_TYPES, parse_batch_manifest
from batches.models import Batch, BatchJob, Collection, Profile, ReportDelivery
from batches.sources import PayloadError, check_payload_url, read_bytes
from kernel.permissions import JobPermissionDenied, check_modify, check_read, is_admin
from kernel.statemachine import IllegalTransition
from xcommands.queue import enqueue

ERC_FIELDS = ("erc_what", "erc_who", "erc_when", "erc_where")


class SubmissionRefused(ValueError):
    """A submission that cannot be accepted (400), with a one-line reason; nothing was stored."""


def _manifest_text(url: str, batch_type: str, *, trusted: bool, opened: str) -> str:
    """Read and check a batch manifest (and the URLs it lists); its text. `opened`: the checked URL to read."""
    try:
        data = read_bytes(opened, max_bytes=int(settings.BATCH_MANIFEST_MAX_BYTES))
    except PayloadError as exc:
        raise SubmissionRefused(f"cannot read the manifest: {exc}") from exc
    try:
        text = data.decode("utf-8")
        manifest = parse_batch_manifest(batch_type, text, url)
    except (UnicodeDecodeError, ManifestError) as exc:
        raise SubmissionRefused(f"corrupt manifest {url}: {exc}") from exc
    if not manifest.objects:
        raise SubmissionRefused(f"manifest {url} lists no objects")
    for spec in manifest.objects:
        for listed in [spec.manifest_url, *(f.url for f in spec.files)]:
            if listed:
                try:
                    check_payload_url(listed, trusted=trusted, what="manifest entry")
                except PayloadError as exc:
                    raise SubmissionRefused(str(exc)) from exc
    return text


def submit_batch(
    *,
    owner: Any,
    profile: str,
    payload_url: str,
    type: str,  # noqa: A002 - the seed's field name
    submitter: str = "",
    submission_mode: str = SubmissionMode.ADD,
    priority: int | None = None,
    acl: str = "",
    external_id: str = "",
    trusted: bool = False,
    **erc: str,
) -> tuple[Batch, bool]:
    """Store the batch PENDING and queue its start; (batch, created). The same owner's external id returns the first."""
    if external_id:
        existing = Batch.objects.filter(owner=owner, external_id=external_id).first()
        if existing is not None:
            return existing, False
    found = Profile.objects.select_related("collection").filter(name=profile).first()
    if found is None:
        raise SubmissionRefused(f"no profile {profile!r}")
    if not found.enabled:
        raise SubmissionRefused(f"profile {profile!r} is disabled")
    if type not in SubmissionType.values:
        raise SubmissionRefused(f"type {type!r}: use {', '.join(SubmissionType.values)}")
    if submission_mode not in SubmissionMode.values:
        raise SubmissionRefused(f"submission_mode {submission_mode!r}: use {', '.join(SubmissionMode.values)}")
    if priority is not None and not PRIORITY_MIN <= priority <= PRIORITY_MAX:
        raise SubmissionRefused(f"priority {priority}: use {PRIORITY_MIN} (first) to {PRIORITY_MAX} (last)")
    unknown = sorted(set(erc) - set(ERC_FIELDS))
    if unknown:
        raise SubmissionRefused(f"unknown field {unknown[0]!r}")
    try:
        opened = check_payload_url(payload_url, trusted=trusted)
    except PayloadError as exc:
        raise SubmissionRefused(str(exc)) from exc
    manifest = _manifest_text(payload_url, type, trusted=trusted, opened=opened) if type in MANIFEST_TYPES else ""
    try:
        with transaction.atomic():
            batch = Batch.objects.create(
                profile=found, collection=found.collection, owner=owner, acl=acl[:1000],
                submitter=(submitter or owner.get_username())[:150], type=type, payload_url=payload_url,
                submission_mode=submission_mode, manifest=manifest, priority=priority, external_id=external_id[:200],
                trusted=trusted, **{name: str(value)[:500] for name, value in erc.items()},
            )
            enqueue(BatchStartXCommand(batch_id=batch.pk))
    except IntegrityError:
        existing = Batch.objects.filter(owner=owner, external_id=external_id).first() if external_id else None
        if existing is None:
            raise
        return existing, False
    return batch, True


# ---- collections ------------------------------------------------------------------------------


def _check_admin(actor: Any, what: str) -> None:
    if not is_admin(actor):
        name = actor.get_username() if actor is not None and hasattr(actor, "get_username") else "anonymous"
        raise JobPermissionDenied(f"user {name!r} may not {what}: job admins only")


def hold_collection(name: str, *, actor: Any, reason: str = "") -> Collection:
    """Put a collection on hold (admins): its pending batches and jobs wait, held, until it is released."""
    _check_admin(actor, f"hold collection {name}")
    collection = Collection.objects.get(name=name)
    Collection.objects.filter(pk=collection.pk).update(held=True, held_reason=reason[:255], held_at=timezone.now(),
                                                       held_by=actor)
    collection.refresh_from_db()
    return collection


def release_collection(name: str, *, actor: Any, release_held: bool = True) -> tuple[Collection, int, int]:
    """Release a collection's hold (admins), and (default) its held batches and jobs; (collection, batches, jobs) queued."""
    _check_admin(actor, f"release collection {name}")
    collection = Collection.objects.get(name=name)
    Collection.objects.filter(pk=collection.pk).update(held=False, held_reason="", held_at=None, held_by=None)
    collection.refresh_from_db()
    batches = jobs = 0
    if release_held:
        for batch_id in Batch.objects.filter(collection=collection, status="held").values_list("pk", flat=True):
            batch_verb(batch_id, "release", actor=actor)
            batches += 1
        for job_id in BatchJob.objects.filter(batch__collection=collection, status=J.HELD).values_list("pk", flat=True):
            job_verb(job_id, "release", actor=actor)
            jobs += 1
    return collection, batches, jobs


# ---- verbs ------------------------------------------------------------------------------------


def batch_verb(batch_id: int, verb: str, *, actor: Any, confirmed: bool = False) -> Batch:
    """release, update-report or delete a batch: checked now (rights, status), queued on its key, checked again."""
    batch = Batch.objects.select_related("collection", "profile").get(pk=batch_id)
    check_modify(actor, batch)
    check_batch_verb(batch, verb, confirmed=confirmed)
    command = BATCH_COMMANDS[verb]
    kwargs: dict[str, Any] = {"batch_id": batch.pk, "actor": actor.get_username()}
    if verb == "delete":
        kwargs["confirmed"] = True
    with transaction.atomic():
        enqueue(command(**kwargs))
    return batch


def job_verb(job_id: int, verb: str, *, actor: Any, priority: int | None = None, confirmed: bool = False) -> BatchJob:
    """release, resume, requeue, delete or set the priority of a job: checked now, queued on its object's key."""
    job = BatchJob.objects.select_related("batch").get(pk=job_id)
    check_modify(actor, job)
    check_job_verb(job, verb, confirmed=confirmed)
    if verb == "priority":
        if priority is None or not PRIORITY_MIN <= priority <= PRIORITY_MAX:
            raise ValueError(f"priority must be {PRIORITY_MIN} (first) to {PRIORITY_MAX} (last)")
    with transaction.atomic():
        enqueue(BatchJobAdminXCommand(
            job_id=job.pk, verb=verb, key=job.object_key, priority=priority, confirmed=confirmed,
            actor=actor.get_username(),
        ))
    return job


def jobs_verb(job_ids: Iterable[int], verb: str, *, actor: Any, priority: int | None = None,
              confirmed: bool = False) -> tuple[list[int], list[str]]:
    """The verb on many jobs; (queued ids, refusals naming each job and why)."""
    done: list[int] = []
    refused: list[str] = []
    for job_id in job_ids:
        try:
            job_verb(job_id, verb, actor=actor, priority=priority, confirmed=confirmed)
            done.append(job_id)
        except (JobPermissionDenied, IllegalTransition, ValueError, BatchJob.DoesNotExist) as exc:
            refused.append(f"job {job_id}: {exc}")
    return done, refused


def read_batch(batch_id: int, *, actor: Any) -> Batch:
    """The batch, if the actor may read it."""
    batch = Batch.objects.select_related("profile", "collection", "owner").get(pk=batch_id)
    check_read(actor, batch)
    return batch


def job_counts(batch_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """Per batch, its jobs counted by status (one grouped query)."""
    counts: dict[int, dict[str, int]] = {}
    rows = (
        BatchJob.objects.filter(batch_id__in=list(batch_ids)).values("batch_id", "status")
        .annotate(n=Count("pk")).values_list("batch_id", "status", "n")
    )
    for batch_id, status, n in rows:
        counts.setdefault(batch_id, {})[status] = n
    return counts


def resend_delivery(delivery_id: int, *, actor: Any) -> bool:
    """Send a FAILED report delivery again (job admins): PENDING and its command queued, together; False if not FAILED."""
    _check_admin(actor, f"send report delivery {delivery_id} again")
    with transaction.atomic():
        moved = ReportDelivery.objects.filter(pk=delivery_id, status=ReportDelivery.Status.FAILED).update(
            status=ReportDelivery.Status.PENDING
        )
        if moved:
            enqueue(ReportDeliveryXCommand(delivery_id=delivery_id))
    return bool(moved)
