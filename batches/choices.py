"""Batch and job statuses, their transition tables, and the stage order (seed 002, `transition.md`).

A job's status is the queue it is in (the seed's `/jobs/states/STATUS/XX-JID`): `estimating`
means waiting for, or running, the estimating stage. Each stage, when it succeeds, moves the
job to the next queue and records itself as `last_successful_status`; a failure keeps the
last success, which says where an admin resume restarts.
"""

from __future__ import annotations

from django.db import models


class BatchStatus(models.TextChoices):
    """Where a batch is (seed: Batch states)."""

    PENDING = "pending"
    HELD = "held"
    PROCESSING = "processing"
    REPORTING = "reporting"
    COMPLETED = "completed"
    FAILED = "failed"
    UPDATE_REPORTING = "update-reporting"
    DELETED = "deleted"


class JobStatus(models.TextChoices):
    """Where a job is (seed: Job states); the stages in between are queues."""

    PENDING = "pending"
    HELD = "held"
    ESTIMATING = "estimating"
    PROVISIONING = "provisioning"
    DOWNLOADING = "downloading"
    PROCESSING = "processing"
    RECORDING = "recording"
    NOTIFY = "notify"
    COMPLETED = "completed"
    FAILED = "failed"
    DELETED = "deleted"


class SubmissionType(models.TextChoices):
    """What the payload URL names."""

    FILE = "file", "one file: one object"
    CONTAINER = "container", "one zip or tar: one object"
    OBJECT_MANIFEST = "object-manifest", "a manifest of the files of one object"
    MANIFEST_OF_MANIFESTS = "manifest-of-manifests", "a manifest of object manifests: one object each"
    CONTAINER_MANIFEST = "container-manifest", "a manifest of containers: one object each"


class SubmissionMode(models.TextChoices):
    """Merritt's submission modes: a new version adds to (add) or replaces (update) the object's files."""

    ADD = "add"
    UPDATE = "update"


B = BatchStatus
J = JobStatus

BATCH_TRANSITIONS: dict[str, frozenset[str]] = {
    B.PENDING: frozenset({B.HELD, B.PROCESSING}),
    B.HELD: frozenset({B.PENDING, B.DELETED}),
    B.PROCESSING: frozenset({B.REPORTING}),
    B.REPORTING: frozenset({B.COMPLETED, B.FAILED}),
    B.FAILED: frozenset({B.UPDATE_REPORTING, B.DELETED}),
    B.UPDATE_REPORTING: frozenset({B.COMPLETED, B.FAILED}),
    B.COMPLETED: frozenset(),  # removed (rows and all) by the retention service
    B.DELETED: frozenset(),
}
#: A batch in one of these has an outcome its submitter hears of (`batches.signals.batch_finished`);
#: failed is not final (update-reporting may complete it), the others are.
BATCH_OUTCOMES = frozenset({B.COMPLETED, B.FAILED, B.DELETED})

#: The pipeline: each stage's queue and the queue a success moves the job to.
STAGES: tuple[str, ...] = (J.PENDING, J.ESTIMATING, J.PROVISIONING, J.DOWNLOADING, J.PROCESSING, J.RECORDING, J.NOTIFY)
NEXT_STAGE: dict[str, str] = {
    J.PENDING: J.ESTIMATING,
    J.ESTIMATING: J.PROVISIONING,
    J.PROVISIONING: J.DOWNLOADING,
    J.DOWNLOADING: J.PROCESSING,
    J.PROCESSING: J.RECORDING,
    J.RECORDING: J.NOTIFY,
    J.NOTIFY: J.COMPLETED,
}
QUEUES = frozenset(STAGES)  # a job in one of these waits for (or runs) that stage
JOB_ENDED = frozenset({J.COMPLETED, J.FAILED, J.DELETED})
#: A newer job of the same object waits while an older one is in one of these (not ended).
IN_FLIGHT = frozenset(QUEUES | {J.HELD})

#: The seed's four admin resumes: a failed job restarts at the stage after its last success.
#: Pending and estimating never end in failure with a success behind them (a corrupt
#: manifest fails from pending with none, and cannot be resumed: requeue it, or submit again).
RESUME_STAGE: dict[str, str] = {
    J.PROVISIONING: J.DOWNLOADING,
    J.DOWNLOADING: J.PROCESSING,
    J.PROCESSING: J.RECORDING,
    J.RECORDING: J.NOTIFY,
}

JOB_TRANSITIONS: dict[str, frozenset[str]] = {
    J.PENDING: frozenset({J.FAILED, J.HELD, J.ESTIMATING}),
    J.HELD: frozenset({J.PENDING, J.DELETED}),
    J.ESTIMATING: frozenset({J.PROVISIONING}),  # never fails: an unknown size is 0
    J.PROVISIONING: frozenset({J.DOWNLOADING}),  # never fails: waits while space is short
    J.DOWNLOADING: frozenset({J.PROCESSING, J.FAILED}),
    J.PROCESSING: frozenset({J.RECORDING, J.FAILED}),
    J.RECORDING: frozenset({J.NOTIFY, J.FAILED}),
    J.NOTIFY: frozenset({J.COMPLETED, J.FAILED}),
    # Admin: resume (the four above), requeue from the start (ours), delete.
    J.FAILED: frozenset({J.DOWNLOADING, J.PROCESSING, J.RECORDING, J.NOTIFY, J.PENDING, J.DELETED}),
    J.COMPLETED: frozenset(),  # its working directory is removed at once; its rows go with its batch
    J.DELETED: frozenset(),
}

PRIORITY_MIN = 0
PRIORITY_MAX = 99
