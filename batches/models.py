"""Batches as stored: the seed's ZooKeeper nodes become rows (docs/adr/0011-batches.md has the mapping).

- `Collection`: where objects go; an admin puts it on hold (`/collections/NAME/hold`).
- `Profile`: a collection's ingest profile: the processing task, default priority, identifiers
  minted, notification targets (admin-edited).
- `Batch`: one submission (`/batches/BID/submission` and `/status`), its operation, reports.
- `BatchJob`: one object of a batch (`/jobs/JID/configuration`, `/identifiers`, `/status`,
  `/priority`, `/space_needed`); the seed's per-state queue folders are the (status, priority,
  id) index, its ephemeral locks the `slot` a job holds while one of its stages runs.
- `Slot`: the stages that may run at once (BATCH_SLOTS); a job takes one per stage.
- `BatchReport` and `ReportDelivery`: the seed's `/batches/BID/status-report`, and its sending.
- `InventoryObject`, `InventoryFile`: what the recording stage writes (Merritt's inventory).
- `MintedIdentifier`: every primary identifier minted, once.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from batches.choices import (
    PRIORITY_MAX,
    PRIORITY_MIN,
    QUEUES,
    BatchStatus,
    JobStatus,
    SubmissionMode,
    SubmissionType,
)
from kernel.history import RecordsStatus
from kernel.querysets import TouchingQuerySet

#: Their kinds in the status history (kernel.history).
BATCH_KIND, BATCH_JOB_KIND = "batch", "batch-job"
PRIORITY_VALIDATORS = [MinValueValidator(PRIORITY_MIN), MaxValueValidator(PRIORITY_MAX)]


class NamedManager(models.Manager[Any]):
    """Rows found by their unique `name`: fixtures (`loaddata`) update them in place instead of by pk."""

    def get_by_natural_key(self, name: str) -> Any:
        return self.get(name=name)


class Collection(models.Model):
    """A collection objects are ingested into; held, nothing new of it starts processing."""

    name = models.SlugField(max_length=100, unique=True)
    description = models.CharField(max_length=255, blank=True)
    held = models.BooleanField(default=False, help_text="no batch or job of it starts while held")
    held_reason = models.CharField(max_length=255, blank=True)
    held_at = models.DateTimeField(null=True, blank=True)
    held_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = NamedManager()

    def __str__(self) -> str:
        return self.name + (" [held]" if self.held else "")

    def natural_key(self) -> tuple[str]:
        return (self.name,)


class Profile(models.Model):
    """How a collection's submissions are processed and who hears about them."""

    name = models.SlugField(max_length=100, unique=True)
    collection = models.ForeignKey(Collection, on_delete=models.PROTECT, related_name="profiles")
    task = models.CharField(
        max_length=200, help_text="the Celery task of the processing stage, e.g. examples.ingest_store"
    )
    priority = models.PositiveSmallIntegerField(
        default=5, validators=PRIORITY_VALIDATORS, help_text="default priority of its jobs (0 runs first, 99 last)"
    )
    identifier_prefix = models.CharField(
        max_length=100, default="ark:/99999/fk4", help_text="primary identifiers minted for new objects start with this"
    )
    notify_emails = models.TextField(blank=True, help_text="report recipients, one e-mail address per line")
    webhook_url = models.URLField(blank=True, max_length=500, help_text="reports are POSTed here as JSON")
    callback_url = models.URLField(
        blank=True, max_length=500, help_text="the notify stage POSTs each completed object here (its failure fails the job)"
    )
    summary_on_queue = models.BooleanField(default=False, help_text="e-mail a summary when a batch is queued")
    enabled = models.BooleanField(default=True, help_text="submissions to a disabled profile are refused")

    objects = NamedManager()

    def __str__(self) -> str:
        return self.name

    def natural_key(self) -> tuple[str]:
        return (self.name,)

    def email_targets(self) -> list[str]:
        """The e-mail addresses, one per line."""
        return [line.strip() for line in self.notify_emails.splitlines() if line.strip()]


class Batch(RecordsStatus):
    """One submission: what was sent (payload, type, ERC fields), where it is, and how it went.

    Every saved status change is recorded (kernel.history).
    """

    status_kind = BATCH_KIND

    profile = models.ForeignKey(Profile, on_delete=models.PROTECT, related_name="batches")
    collection = models.ForeignKey(Collection, on_delete=models.PROTECT, related_name="batches")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="batches")
    acl = models.CharField(max_length=1000, blank=True, help_text="users and groups who may act on it, as oozie.job.acl")
    submitter = models.CharField(max_length=150, help_text="who submitted it (the depositor)")
    type = models.CharField(max_length=24, choices=SubmissionType.choices)
    payload_url = models.CharField(max_length=2000)
    submission_mode = models.CharField(max_length=10, choices=SubmissionMode.choices, default=SubmissionMode.ADD)
    manifest = models.TextField(blank=True, help_text="the batch manifest as read at submission (manifest types)")
    priority = models.PositiveSmallIntegerField(null=True, blank=True, validators=PRIORITY_VALIDATORS)
    erc_what = models.CharField(max_length=500, blank=True)
    erc_who = models.CharField(max_length=500, blank=True)
    erc_when = models.CharField(max_length=100, blank=True)
    erc_where = models.CharField(max_length=500, blank=True)
    external_id = models.CharField(max_length=200, blank=True, help_text="the submitter's id: submitting it again returns this batch")
    trusted = models.BooleanField(default=False, help_text="submitted from the CLI: its URLs are not limited to BATCH_PAYLOAD_ROOTS")
    status = models.CharField(max_length=20, choices=BatchStatus.choices, default=BatchStatus.PENDING)
    operation = models.ForeignKey(
        "operations.Operation", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_modified = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True, help_text="when it last became completed or failed")

    objects = TouchingQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "batches"
        constraints = [
            models.UniqueConstraint(fields=["owner", "external_id"], condition=~Q(external_id=""), name="batch_external_id_uniq"),
        ]
        indexes = [
            models.Index(fields=["status", "created_at"], name="batch_status_idx"),
            models.Index(fields=["created_at", "id"], name="batch_created_idx"),
        ]

    kind_name = "batch"  # how permission refusals name it

    def __str__(self) -> str:
        return f"batch {self.pk} [{self.status}]"

    def status_reason(self) -> str:
        """A failed or held batch's error says why."""
        return self.error

    @property
    def id_text(self) -> str:
        """`bid0000017`, as the seed names batches."""
        return f"bid{self.pk:07d}"


def batch_key(batch_id: int) -> str:
    """The command key of a batch's transitions."""
    return f"batch:{batch_id}"


class Slot(models.Model):
    """One of BATCH_SLOTS places a stage may run in; a job holds one while a stage of it runs."""

    number = models.PositiveIntegerField(unique=True)
    job = models.OneToOneField("BatchJob", null=True, blank=True, on_delete=models.SET_NULL, related_name="slot_row")
    since = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"slot {self.number}" + (f" (job {self.job_id})" if self.job_id else "")


class BatchJob(models.Model):
    """One object of a batch walking the stages: configuration, identifiers, status, priority, space."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="jobs")
    number = models.PositiveIntegerField(help_text="its place in the batch (1, 2, ...)")
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.PENDING)
    last_successful_status = models.CharField(max_length=16, choices=JobStatus.choices, blank=True)
    retry_count = models.PositiveIntegerField(default=0)
    priority = models.PositiveSmallIntegerField(default=5, validators=PRIORITY_VALIDATORS)
    object_key = models.CharField(max_length=300, help_text="the command key of its stages: its object's identifier")
    blocked_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="an older job of the same object still in flight: this one waits for it",
    )
    not_before = models.DateTimeField(null=True, blank=True, help_text="provisioning: not tried again before this")
    dispatched = models.BooleanField(default=False, help_text="it holds a slot: a stage of it is queued or runs")
    stage_token = models.PositiveIntegerField(default=0, help_text="raised at each dispatch: a stale stage command stops")
    queued_at = models.DateTimeField(null=True, blank=True, help_text="when it entered its current queue")
    # configuration (`/jobs/JID/configuration`)
    payload_url = models.CharField(max_length=2000, help_text="its file, container or object manifest")
    payload_type = models.CharField(max_length=24, choices=SubmissionType.choices)
    payload_digest = models.JSONField(
        null=True, blank=True, help_text="the digest the depositor gave for payload_url (an object manifest's)",
    )
    working_dir = models.CharField(max_length=1000)
    files = models.JSONField(default=list, blank=True, help_text="its files: url, name, size, digest, downloaded")
    # identifiers (`/jobs/JID/identifiers`)
    primary_id = models.CharField(max_length=200, blank=True)
    supplied_primary_id = models.CharField(max_length=200, blank=True, help_text="the primary id the submitter gave")
    local_ids = models.JSONField(default=list, blank=True)
    minted = models.BooleanField(default=False, help_text="its primary id was minted for it")
    title = models.CharField(max_length=500, blank=True)
    creator = models.CharField(max_length=500, blank=True)
    date = models.CharField(max_length=100, blank=True)
    space_needed = models.BigIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    history = models.JSONField(default=list, blank=True, help_text="stage by stage: when it queued, ran, ended, and why")
    inventory_version = models.PositiveIntegerField(null=True, blank=True)
    cleaned_at = models.DateTimeField(null=True, blank=True, help_text="its working directory was removed")
    created_at = models.DateTimeField(auto_now_add=True)
    last_modified = models.DateTimeField(auto_now=True)

    objects = TouchingQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["batch", "number"], name="batch_job_number_uniq")]
        indexes = [
            # The seed's queue folders: runnable jobs in taking order (lowest priority number, then oldest).
            models.Index(
                fields=["priority", "id"], name="batch_job_runnable_idx",
                condition=Q(status__in=sorted(QUEUES), dispatched=False, blocked_by__isnull=True),
            ),
            models.Index(fields=["batch", "status"], name="batch_job_status_idx"),
            models.Index(fields=["object_key", "id"], name="batch_job_object_idx"),
            models.Index(fields=["status", "priority"], name="batch_job_filter_idx"),
        ]

    kind_name = "batch job"  # how permission refusals name it

    def __str__(self) -> str:
        return f"job {self.pk} of batch {self.batch_id} [{self.status}]"

    @property
    def id_text(self) -> str:
        """`jid0000042`, as the seed names jobs."""
        return f"jid{self.pk:07d}"

    # OwnedJob (kernel.permissions): a job is acted on with its batch's rights.
    @property
    def owner_id(self) -> Any:
        return self.batch.owner_id

    @property
    def acl(self) -> str:
        return self.batch.acl


class BatchReport(models.Model):
    """A report of a batch (the seed's status-report): the first one, then one per update-reporting."""

    class Kind(models.TextChoices):
        INITIAL = "initial"
        UPDATE = "update"

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="reports")
    number = models.PositiveIntegerField()
    kind = models.CharField(max_length=10, choices=Kind.choices)
    created_at = models.DateTimeField(auto_now_add=True)
    body = models.JSONField(help_text="completed, failed and unresolved jobs with identifiers and errors")
    text = models.TextField(help_text="the same, readable")
    csv = models.TextField(help_text="the same, one line per job")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["batch", "number"], name="batch_report_number_uniq")]

    def __str__(self) -> str:
        return f"report {self.number} of batch {self.batch_id}"


class ReportDelivery(models.Model):
    """One report to one target (mailto: or a webhook URL): sent once, retried until it is."""

    class Status(models.TextChoices):
        PENDING = "PENDING"
        SENDING = "SENDING"
        SENT = "SENT"
        FAILED = "FAILED"

    report = models.ForeignKey(BatchReport, on_delete=models.CASCADE, related_name="deliveries")
    target = models.CharField(max_length=500)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["report", "target"], name="report_delivery_uniq")]

    def __str__(self) -> str:
        return f"{self.report} to {self.target} [{self.status}]"


class InventoryObject(models.Model):
    """An object of a collection, by primary identifier, with its local ids and its current version."""

    collection = models.ForeignKey(Collection, on_delete=models.PROTECT, related_name="inventory_objects")
    primary_id = models.CharField(max_length=200)
    local_ids = models.JSONField(default=list, blank=True)
    version = models.PositiveIntegerField(default=0)
    title = models.CharField(max_length=500, blank=True)
    creator = models.CharField(max_length=500, blank=True)
    date = models.CharField(max_length=100, blank=True)
    last_modified = models.DateTimeField(auto_now=True)

    objects = TouchingQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["collection", "primary_id"], name="inventory_object_uniq")]

    def __str__(self) -> str:
        return f"{self.primary_id} v{self.version}"


class InventoryLocalId(models.Model):
    """A local identifier of an object in its collection (the identifier lookup of the processing stage)."""

    collection = models.ForeignKey(Collection, on_delete=models.PROTECT, related_name="+")
    local_id = models.CharField(max_length=200)
    object = models.ForeignKey(InventoryObject, on_delete=models.CASCADE, related_name="local_id_rows")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["collection", "local_id"], name="inventory_local_id_uniq")]

    def __str__(self) -> str:
        return f"{self.local_id} -> {self.object.primary_id}"


class InventoryFile(models.Model):
    """One file of one version of an object, as recorded."""

    object = models.ForeignKey(InventoryObject, on_delete=models.CASCADE, related_name="files")
    version = models.PositiveIntegerField()
    name = models.CharField(max_length=1000)
    size = models.BigIntegerField()
    digest_algorithm = models.CharField(max_length=10)
    digest_value = models.CharField(max_length=128)
    job = models.ForeignKey(BatchJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["object", "version", "name"], name="inventory_file_uniq")]

    def __str__(self) -> str:
        return f"{self.object.primary_id} v{self.version} {self.name}"


class MintedIdentifier(models.Model):
    """Every primary identifier minted: the row's id makes it unique; the job it was minted for."""

    identifier = models.CharField(max_length=200, unique=True)
    job = models.ForeignKey(BatchJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.identifier


class IngestSettings(models.Model):
    """Working-volume rules operators change at run time (one row; defaults from the BATCH_* settings)."""

    reserve_bytes = models.BigIntegerField(help_text="provisioning lets a job download only if free space stays above this")
    provision_sleep_seconds = models.PositiveIntegerField(help_text="a job that must wait is looked at again after this")
    large_job_bytes = models.BigIntegerField(help_text="a job estimated above this gets the large-job priority")
    large_job_priority = models.PositiveSmallIntegerField(validators=PRIORITY_VALIDATORS)

    class Meta:
        verbose_name = verbose_name_plural = "ingest settings"

    def __str__(self) -> str:
        return "ingest settings"
