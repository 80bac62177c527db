"""Serializers of the batch API: batches, jobs, reports, collections and profiles out; submissions and verbs in."""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.reverse import reverse

from batches.choices import (
    JOB_ENDED,
    PRIORITY_MAX,
    PRIORITY_MIN,
    JobStatus,
    SubmissionMode,
    SubmissionType,
)
from batches.models import Batch, BatchJob, BatchReport, Collection, Profile

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def one_line(value: str) -> None:
    """Refuse control characters (line breaks, NUL ...) in a one-line field: they would forge log and report lines."""
    if _CONTROL.search(value):
        raise serializers.ValidationError("control characters (line breaks, tabs, NUL) are not allowed")


def progress_of(counts: dict[str, int]) -> dict[str, int]:
    """{"total": jobs, "ended": completed, failed or deleted}."""
    return {"total": sum(counts.values()), "ended": sum(n for status, n in counts.items() if status in JOB_ENDED)}


class BatchProgressSerializer(serializers.Serializer[dict[str, int]]):
    """How far a batch got."""

    total = serializers.IntegerField(help_text="its jobs (0 until it started)")
    ended = serializers.IntegerField(help_text="its jobs completed, failed or deleted")


class ReportSummarySerializer(serializers.ModelSerializer[BatchReport]):
    """One report of a batch: number, kind, when, counts, and where to read it whole."""

    counts = serializers.SerializerMethodField(help_text="jobs, completed, failed, deleted, unresolved")
    url = serializers.SerializerMethodField(help_text="the report as JSON (`?format=text` or `?format=csv` for those)")
    text_url = serializers.SerializerMethodField(help_text="the readable text, as e-mailed")
    csv_url = serializers.SerializerMethodField(help_text="one CSV line per job listed")

    class Meta:
        model = BatchReport
        fields = ["number", "kind", "created_at", "counts", "url", "text_url", "csv_url"]
        read_only_fields = fields

    @extend_schema_field({"type": "object", "additionalProperties": {"type": "integer"}})
    def get_counts(self, obj: BatchReport) -> dict[str, int]:
        """The counts of the report's body."""
        return dict(obj.body.get("counts", {}))

    def _url(self, obj: BatchReport, suffix: str = "") -> str:
        url = reverse("batch-report", args=[obj.batch_id, obj.number], request=self.context.get("request"))
        return url + suffix

    def get_url(self, obj: BatchReport) -> str:
        """The report as JSON."""
        return self._url(obj)

    def get_text_url(self, obj: BatchReport) -> str:
        """The report as text."""
        return self._url(obj, "?format=text")

    def get_csv_url(self, obj: BatchReport) -> str:
        """The report as CSV."""
        return self._url(obj, "?format=csv")


class ReportSerializer(ReportSummarySerializer):
    """A report whole: its JSON body (jobs by outcome with identifiers and errors)."""

    batch = serializers.IntegerField(source="batch_id", read_only=True)

    class Meta(ReportSummarySerializer.Meta):
        fields = ["batch", *ReportSummarySerializer.Meta.fields, "body"]
        read_only_fields = fields


class BatchSerializer(serializers.ModelSerializer[Batch]):
    """A batch as listed: what was submitted (not the manifest), where it is, its jobs counted by status."""

    url = serializers.SerializerMethodField(help_text="this batch in the native API")
    id_text = serializers.CharField(read_only=True, help_text="`bid0000017`, as the seed names batches")
    profile = serializers.CharField(source="profile.name", read_only=True)
    collection = serializers.CharField(source="collection.name", read_only=True)
    user = serializers.CharField(source="owner.username", read_only=True, help_text="the owner (who submitted it)")
    jobs = serializers.SerializerMethodField(help_text='its jobs by status, e.g. {"completed": 8, "failed": 2}')
    progress = serializers.SerializerMethodField(help_text="jobs in all, and how many ended")
    jobs_url = serializers.SerializerMethodField(help_text="its jobs in the native API")

    class Meta:
        model = Batch
        fields = [
            "id", "id_text", "url", "profile", "collection", "user", "submitter", "acl", "type", "payload_url",
            "submission_mode", "priority", "external_id", "status", "error", "jobs", "progress", "jobs_url",
            "created_at", "last_modified", "finished_at",
        ]
        read_only_fields = fields

    def get_url(self, obj: Batch) -> str:
        """Absolute URL of the batch."""
        return reverse("batch-detail", args=[obj.pk], request=self.context.get("request"))

    def get_jobs_url(self, obj: Batch) -> str:
        """Its jobs: the job list filtered by batch."""
        return reverse("batch-job-list", request=self.context.get("request")) + f"?batch={obj.pk}"

    def _counts(self, obj: Batch) -> dict[str, int]:
        counts: dict[int, dict[str, int]] = self.context.get("counts", {})
        return counts.get(obj.pk, {})

    @extend_schema_field({"type": "object", "additionalProperties": {"type": "integer"}})
    def get_jobs(self, obj: Batch) -> dict[str, int]:
        """From the grouped count the view read once for the whole page."""
        return dict(self._counts(obj))

    @extend_schema_field(BatchProgressSerializer)
    def get_progress(self, obj: Batch) -> dict[str, int]:
        """Total and ended, from the same counts."""
        return progress_of(self._counts(obj))


class BatchDetailSerializer(BatchSerializer):
    """A batch whole: the submission (ERC fields, the manifest as read), its operation, its reports."""

    operation = serializers.IntegerField(source="operation_id", read_only=True, allow_null=True,
                                         help_text="its operation on the collection (null before it started)")
    reports = ReportSummarySerializer(many=True, read_only=True, help_text="its reports, first first")

    class Meta(BatchSerializer.Meta):
        fields = [
            *BatchSerializer.Meta.fields, "erc_what", "erc_who", "erc_when", "erc_where", "trusted", "manifest",
            "operation", "reports",
        ]
        read_only_fields = fields


class BatchSubmissionSerializer(serializers.Serializer[dict[str, Any]]):
    """A submission: a profile, what the payload URL names, and the seed's optional fields."""

    profile = serializers.CharField(max_length=100, validators=[one_line], help_text="the ingest profile's name")
    type = serializers.ChoiceField(choices=SubmissionType.choices, help_text="what payload_url names")
    payload_url = serializers.CharField(
        max_length=2000, validators=[one_line],
        help_text="a file, container or manifest under BATCH_PAYLOAD_ROOTS (file://, memory://, s3:// ...)",
    )
    submitter = serializers.CharField(required=False, allow_blank=True, max_length=150, validators=[one_line],
                                      help_text="the depositor (default: your user name)")
    submission_mode = serializers.ChoiceField(choices=SubmissionMode.choices, default=SubmissionMode.ADD,
                                              help_text="add to the object's files, or replace them")
    priority = serializers.IntegerField(
        required=False, allow_null=True, min_value=PRIORITY_MIN, max_value=PRIORITY_MAX,
        help_text="0 runs first, 99 last (default: the profile's)",
    )
    erc_what = serializers.CharField(required=False, allow_blank=True, max_length=500, validators=[one_line])
    erc_who = serializers.CharField(required=False, allow_blank=True, max_length=500, validators=[one_line])
    erc_when = serializers.CharField(required=False, allow_blank=True, max_length=100, validators=[one_line])
    erc_where = serializers.CharField(required=False, allow_blank=True, max_length=500, validators=[one_line])
    acl = serializers.CharField(required=False, allow_blank=True, max_length=1000, validators=[one_line],
                                help_text="users and groups who may act on it too, comma-separated")
    external_id = serializers.CharField(
        required=False, allow_blank=True, max_length=200, validators=[one_line],
        help_text="your id of this submission: submitting it again answers the first batch (200)",
    )


class ConfirmSerializer(serializers.Serializer[dict[str, Any]]):
    """A delete: confirm it when its depositor would never be told (else 409 says so)."""

    confirm = serializers.BooleanField(default=False, help_text="delete even though the batch is not complete")


class PrioritySerializer(serializers.Serializer[dict[str, Any]]):
    """A job's new priority."""

    priority = serializers.IntegerField(min_value=PRIORITY_MIN, max_value=PRIORITY_MAX,
                                        help_text="0 runs first, 99 last")


class HoldSerializer(serializers.Serializer[dict[str, Any]]):
    """Why a collection is held."""

    reason = serializers.CharField(required=False, allow_blank=True, max_length=255, validators=[one_line], default="")


class BatchJobSerializer(serializers.ModelSerializer[BatchJob]):
    """A job as listed: its batch, place, status, priority, identifiers and error."""

    url = serializers.SerializerMethodField(help_text="this job in the native API")
    id_text = serializers.CharField(read_only=True, help_text="`jid0000042`, as the seed names jobs")
    batch = serializers.IntegerField(source="batch_id", read_only=True)
    batch_url = serializers.SerializerMethodField(help_text="its batch in the native API")
    last_successful_status = serializers.ChoiceField(
        choices=JobStatus.choices, allow_blank=True, read_only=True,
        help_text="the last stage that succeeded (empty: none yet); a resume restarts after it",
    )

    class Meta:
        model = BatchJob
        fields = [
            "id", "id_text", "url", "batch", "batch_url", "number", "status", "last_successful_status", "priority",
            "retry_count", "primary_id", "supplied_primary_id", "local_ids", "payload_url", "payload_type", "error",
            "created_at", "last_modified",
        ]
        read_only_fields = fields

    def get_url(self, obj: BatchJob) -> str:
        """Absolute URL of the job."""
        return reverse("batch-job-detail", args=[obj.pk], request=self.context.get("request"))

    def get_batch_url(self, obj: BatchJob) -> str:
        """Absolute URL of its batch."""
        return reverse("batch-detail", args=[obj.batch_id], request=self.context.get("request"))


class BatchJobDetailSerializer(BatchJobSerializer):
    """A job whole: files, identifiers, space needed, the job it waits for, its stage history."""

    blocked_by = serializers.IntegerField(source="blocked_by_id", read_only=True, allow_null=True,
                                          help_text="an older job of the same object it waits for")

    class Meta(BatchJobSerializer.Meta):
        fields = [
            *BatchJobSerializer.Meta.fields, "files", "minted", "title", "creator", "date", "space_needed",
            "blocked_by", "object_key", "dispatched", "queued_at", "inventory_version", "cleaned_at", "history",
        ]
        read_only_fields = fields


class CollectionSerializer(serializers.ModelSerializer[Collection]):
    """A collection and its hold."""

    held_by = serializers.CharField(source="held_by.username", read_only=True, allow_null=True, default=None)

    class Meta:
        model = Collection
        fields = ["name", "description", "held", "held_reason", "held_at", "held_by"]
        read_only_fields = fields


class CollectionReleaseSerializer(CollectionSerializer):
    """A released collection, and how many of its held batches and jobs were queued for release."""

    released_batches = serializers.IntegerField(read_only=True)
    released_jobs = serializers.IntegerField(read_only=True)

    class Meta(CollectionSerializer.Meta):
        fields = [*CollectionSerializer.Meta.fields, "released_batches", "released_jobs"]
        read_only_fields = fields


class ProfileSerializer(serializers.ModelSerializer[Profile]):
    """An ingest profile (admins edit them in the admin site)."""

    collection = serializers.CharField(source="collection.name", read_only=True)

    class Meta:
        model = Profile
        fields = ["name", "collection", "task", "priority", "enabled"]
        read_only_fields = fields
