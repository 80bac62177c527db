"""Serializers of the bundle API: bundles and their coordinators out, submissions and verbs in."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from django.db.models import Count, Max
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.reverse import reverse

from bundles.choices import BundleStatus
from bundles.models import BundleAction, BundleJob
from bundles.services import MAX_EXTERNAL_ID
from coordinators.api.serializers import (
    MAX_DEFINITION_CHARS,
    CoordinatorActionSerializer,
    SubmissionSerializer,
    reader,
)
from coordinators.models import CoordinatorAction
from kernel.secrets import masker, may_see_secrets
from oozie.properties import BUNDLE_APP_PATH

BUNDLE_STATUSES = tuple(BundleStatus.values)


class BundleJobSerializer(serializers.ModelSerializer[BundleJob]):
    """A bundle job: its name, owner, ACL, status and times (lists leave out definition, configuration, coordinators)."""

    user = serializers.CharField(source="owner.username", read_only=True, help_text="the owner (who submitted it)")
    url = serializers.SerializerMethodField(help_text="this bundle in the native API")

    class Meta:
        model = BundleJob
        fields = [
            "id", "url", "app_name", "app_path", "user", "acl", "external_id", "status", "pending",
            "kick_off_time", "pause_time", "end_time", "started_at", "ended_at", "created_at", "last_modified",
        ]
        read_only_fields = fields

    def get_url(self, obj: BundleJob) -> str:
        """Absolute URL of the bundle."""
        return reverse("bundle-job-detail", args=[obj.pk], request=self.context.get("request"))


class ProgressSerializer(serializers.Serializer[dict[str, Any]]):
    """How far a bundle's coordinator got: its actions by status, and the nominal time of its last one."""

    actions = serializers.DictField(child=serializers.IntegerField(), help_text="action counts by status, e.g. {\"SUCCEEDED\": 20, \"WAITING\": 1}")
    last_nominal_time = serializers.DateTimeField(allow_null=True, help_text="nominal time of its latest action (null: none yet)")


NO_PROGRESS: dict[str, Any] = {"actions": {}, "last_nominal_time": None}


def coordinator_progress(job_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Action counts by status and the latest nominal time of each coordinator job, in one query."""
    progress: dict[str, dict[str, Any]] = {}
    ids = sorted(set(job_ids))
    if not ids:
        return progress
    rows = (
        CoordinatorAction.objects.filter(job_id__in=ids).order_by()
        .values("job_id", "status").annotate(count=Count("pk"), last=Max("nominal_time"))
    )
    for row in rows:
        entry = progress.setdefault(row["job_id"], {"actions": {}, "last_nominal_time": None})
        entry["actions"][row["status"]] = row["count"]
        if entry["last_nominal_time"] is None or row["last"] > entry["last_nominal_time"]:
            entry["last_nominal_time"] = row["last"]
    return progress


class BundleCoordinatorSerializer(serializers.ModelSerializer[BundleAction]):
    """One coordinator of a started bundle: its name, its coordinator job, mirrored status and progress."""

    name = serializers.CharField(source="coord_name", read_only=True, help_text="the coordinator's name in the bundle")
    coordinator = serializers.CharField(
        source="coord_job_id", read_only=True, allow_null=True,
        help_text="the coordinator job's id (null until it is submitted, or if it could not be)",
    )
    coordinator_url = serializers.SerializerMethodField(help_text="the coordinator job in the native API")
    progress = serializers.SerializerMethodField(help_text="its actions by status and its last action's nominal time")

    class Meta:
        model = BundleAction
        fields = ["name", "coordinator", "coordinator_url", "status", "critical", "pending", "error_message", "progress",
                  "last_modified"]
        read_only_fields = fields

    @extend_schema_field({"type": "string", "format": "uri", "nullable": True})
    def get_coordinator_url(self, obj: BundleAction) -> str | None:
        """Absolute URL of the coordinator job, once submitted."""
        if obj.coord_job_id is None:
            return None
        return reverse("coordinator-job-detail", args=[obj.coord_job_id], request=self.context.get("request"))

    @extend_schema_field(ProgressSerializer)
    def get_progress(self, obj: BundleAction) -> dict[str, Any]:
        """From the aggregate the bundle's serializer read once for all its coordinators."""
        progress: dict[str, dict[str, Any]] = self.context.get("progress", {})
        found = progress.get(obj.coord_job_id or "", NO_PROGRESS)
        return ProgressSerializer(found).data


class BundleJobDetailSerializer(BundleJobSerializer):
    """A bundle job with its definition, job properties and coordinators (each with its progress)."""

    coordinators = BundleCoordinatorSerializer(
        source="actions", many=True, read_only=True,
        help_text="its coordinators by name (none before it starts)",
    )

    class Meta(BundleJobSerializer.Meta):
        fields = [*BundleJobSerializer.Meta.fields, "configuration", "definition", "coordinators"]
        read_only_fields = fields

    def to_representation(self, instance: BundleJob) -> dict[str, Any]:
        """Read the progress of every coordinator in one query (no N+1); secrets masked but for the owner and job admins."""
        actions = list(instance.actions.all())  # prefetched in coord_name order by the view
        cast(dict[str, Any], self.context)["progress"] = coordinator_progress(a.coord_job_id for a in actions if a.coord_job_id)
        data = dict(super().to_representation(instance))
        if may_see_secrets(reader(self.context), instance.owner_id):
            return data
        masked: dict[str, Any] = masker(instance.configuration, data).data(data)
        return masked


class BundleSubmissionSerializer(SubmissionSerializer):
    """A bundle submission: the bundle XML inline or an application path; properties; start; an external id."""

    app_path_property = BUNDLE_APP_PATH
    application = "bundle"

    definition = serializers.CharField(
        required=False, trim_whitespace=False, max_length=MAX_DEFINITION_CHARS,
        help_text="the bundle XML inline (else oozie.bundle.application.path is read)",
    )
    app_path = serializers.CharField(
        required=False, max_length=1024,
        help_text="oozie.bundle.application.path: the bundle.xml or its directory (file://, or an allowed fsspec URI)",
    )
    start = serializers.BooleanField(
        default=True,
        help_text="start it now (or at its kick-off time, if later); false keeps it PREP until `start` or its kick-off time",
    )
    external_id = serializers.CharField(
        required=False, allow_blank=True, max_length=MAX_EXTERNAL_ID,
        help_text="your id of this submission (oozie.bundle.external.id): submitting it again gets the same bundle back",
    )


class BundleDryRunSerializer(BundleSubmissionSerializer):
    """A bundle dry-run: each coordinator's configuration and first actions, nothing stored."""

    start = None  # type: ignore[assignment]
    external_id = None  # type: ignore[assignment]
    max_actions = serializers.IntegerField(default=10, min_value=1, max_value=100, help_text="plan at most this many actions per coordinator")


class DryRunCoordinatorSerializer(serializers.Serializer[dict[str, Any]]):
    """One coordinator of a dry-run bundle."""

    name = serializers.CharField()
    app_path = serializers.CharField(help_text="its application path as resolved")
    critical = serializers.BooleanField()
    enabled = serializers.BooleanField(help_text="disabled coordinators are not started (and list no actions)")
    configuration = serializers.DictField(child=serializers.CharField(allow_blank=True), help_text="what it would be submitted with")
    actions = serializers.ListField(child=serializers.DictField(), help_text="its first actions' plans (number, nominal_time, data_in, data_out, app_path, configuration)")


class BundleDryRunResultSerializer(serializers.Serializer[dict[str, Any]]):
    """What the bundle would start (the dry-run JSON shape)."""

    name = serializers.CharField()
    kick_off_time = serializers.CharField(allow_null=True, help_text="ISO 8601; null: it starts when started")
    coordinators = DryRunCoordinatorSerializer(many=True)


class BundleChangeSerializer(serializers.Serializer[dict[str, Any]]):
    """Oozie's bundle change value (`endtime=...;pausetime=...`) or its parts."""

    value = serializers.CharField(required=False, max_length=1024, help_text="endtime=2026-12-01T05:00Z;pausetime= (empty resets)")
    endtime = serializers.CharField(required=False, max_length=64)
    pausetime = serializers.CharField(required=False, allow_blank=True, max_length=64)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Exactly one form: the value string, or the parts (joined into the value string)."""
        parts = [f"{name}={attrs[name]}" for name in ("endtime", "pausetime") if name in attrs]
        if bool(parts) == ("value" in attrs):
            raise serializers.ValidationError({"value": "give either value or endtime/pausetime"})
        for text in parts:
            if ";" in text:
                raise serializers.ValidationError({"value": f"{text!r}: ';' separates parts"})
        attrs["value"] = attrs.get("value") or ";".join(parts)
        return attrs


class BundleRerunSerializer(serializers.Serializer[dict[str, Any]]):
    """Which coordinators' finished actions to run again, in which nominal-time ranges (BundleFunctionalSpec 8)."""

    coordinators = serializers.CharField(
        required=False, allow_blank=True, max_length=4096,
        help_text="coordinator names, comma-separated (all when empty)",
    )
    dates = serializers.CharField(
        required=False, allow_blank=True, max_length=4096,
        help_text="`2026-01-01T01:00Z::2026-01-01T03:00Z, 2026-01-02T00:00Z` (each coordinator's whole span when empty)",
    )
    refresh = serializers.BooleanField(default=False, help_text="re-resolve the input events")
    nocleanup = serializers.BooleanField(default=False, help_text="keep the output instances")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """At least the coordinators or the dates (as `-rerun` needs -coordinator or -date)."""
        if not (attrs.get("coordinators", "").strip() or attrs.get("dates", "").strip()):
            raise serializers.ValidationError({"coordinators": "name the coordinators or the dates to rerun (or both)"})
        return attrs


class BundleRerunResultSerializer(serializers.Serializer[dict[str, Any]]):
    """The actions queued to run again, by coordinator name."""

    actions = serializers.DictField(child=CoordinatorActionSerializer(many=True), help_text="coordinator name -> its actions")
