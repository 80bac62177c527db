"""Serializers of the coordinator API: jobs and actions out, submissions and verbs in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.reverse import reverse

from coordinators.choices import ActionStatus, JobStatus
from coordinators.models import CoordinatorAction, CoordinatorJob, StatusChange
from kernel.api import reader, siblings
from kernel.secrets import masker, may_see_secrets
from oozie.definitions import load_configuration
from oozie.properties import COORD_APP_PATH
from workflows.models import WorkflowJob

MAX_DEFINITION_CHARS = 1_048_576
JOBS_READ = "_secret_jobs"  # context key: (owner id, configuration) of the coordinator jobs read so far


# ---- secret properties (kernel.secrets): masked for readers other than the owner and job admins ----


def job_secrets(serializer: serializers.BaseSerializer[Any], job_id: str) -> tuple[Any, dict[str, Any]]:
    """(owner id, configuration) of a coordinator job, read once per response for every job of the page."""
    known: dict[str, tuple[Any, dict[str, Any]]] = cast(dict[str, Any], serializer.context).setdefault(JOBS_READ, {})
    if job_id not in known:
        wanted = {job_id} | {str(item.job_id) for item in siblings(serializer) if getattr(item, "job_id", None)}
        rows = CoordinatorJob.objects.filter(pk__in=sorted(wanted - set(known))).values_list("pk", "owner_id", "configuration")
        known.update({pk: (owner_id, configuration or {}) for pk, owner_id, configuration in rows})
    return known.get(job_id, (None, {}))


def knowing(context: Mapping[str, Any], job: CoordinatorJob) -> dict[str, Any]:
    """The serializer context, told the owner and configuration of the job whose actions it serializes (no query)."""
    return {**context, JOBS_READ: {job.pk: (job.owner_id, job.configuration or {})}}


def mask_for_reader(serializer: serializers.BaseSerializer[Any], data: Any, job_id: str, owner_id: Any = None) -> Any:
    """The representation of something of coordinator job `job_id`, masked unless the reader is its owner or a job admin.

    The owner is checked first (`owner_id` when the row carries it, else read once for the
    whole page): the owner's own pages cost no query more, another reader's one.
    """
    user = reader(serializer.context)
    if owner_id is None:
        owner_id = job_secrets(serializer, job_id)[0]
    if may_see_secrets(user, owner_id):
        return data
    return masker(job_secrets(serializer, job_id)[1], data).data(data)


class CoordinatorJobSerializer(serializers.ModelSerializer[CoordinatorJob]):
    """A coordinator job: controls, status and progress (lists leave out definition and configuration)."""

    user = serializers.CharField(source="owner.username", read_only=True, help_text="the owner (who submitted it)")
    url = serializers.SerializerMethodField(help_text="this job in the native API")
    actions_url = serializers.SerializerMethodField(help_text="the job's actions, paginated")

    class Meta:
        model = CoordinatorJob
        fields = [
            "id", "url", "actions_url", "app_name", "app_path", "user", "acl", "status", "pending",
            "frequency", "time_unit", "timezone", "start_time", "end_time", "pause_time", "timeout",
            "concurrency", "execution", "throttle", "last_action_number", "next_materialize_at",
            "done_materializing", "bundle_id", "created_at", "last_modified",
        ]
        read_only_fields = fields

    def get_url(self, obj: CoordinatorJob) -> str:
        """Absolute URL of the job."""
        return reverse("coordinator-job-detail", args=[obj.pk], request=self.context.get("request"))

    def get_actions_url(self, obj: CoordinatorJob) -> str:
        """Absolute URL of the job's actions."""
        return reverse("coordinator-job-actions", args=[obj.pk], request=self.context.get("request"))


class CoordinatorJobDetailSerializer(CoordinatorJobSerializer):
    """A coordinator job with its definition and job properties (secret ones masked but for its owner and job admins)."""

    class Meta(CoordinatorJobSerializer.Meta):
        fields = [*CoordinatorJobSerializer.Meta.fields, "configuration", "definition"]
        read_only_fields = fields

    def to_representation(self, instance: CoordinatorJob) -> dict[str, Any]:
        """The job, its secret properties masked for other readers (kernel.secrets)."""
        data = dict(super().to_representation(instance))
        if may_see_secrets(reader(self.context), instance.owner_id):
            return data
        masked: dict[str, Any] = masker(instance.configuration, data).data(data)
        return masked


class WaitingSerializer(serializers.Serializer[dict[str, Any]]):
    """What a WAITING action waits for."""

    missing = serializers.IntegerField(help_text="inputs still missing (with input logic: what it still waits for)")
    first_missing = serializers.CharField(allow_null=True, help_text="the first missing instance's URI")
    done_flag = serializers.CharField(allow_null=True, allow_blank=True, help_text="the flag checked in it ('' = the directory)")
    next_check_at = serializers.DateTimeField(allow_null=True, help_text="when its inputs are checked next")
    timeout_at = serializers.DateTimeField(allow_null=True, help_text="when it times out (null: never)")
    checks = serializers.IntegerField(help_text="input checks so far")


class CoordinatorActionSerializer(serializers.ModelSerializer[CoordinatorAction]):
    """One materialized action: nominal time, status, resolved inputs and outputs, the launched task."""

    job = serializers.CharField(source="job_id", read_only=True, help_text="the coordinator job's id")
    created_at = serializers.DateTimeField(source="created_time", read_only=True, help_text="when it was materialized")
    waiting = serializers.SerializerMethodField(help_text="what a WAITING action waits for (null otherwise)")

    class Meta:
        model = CoordinatorAction
        fields = [
            "id", "job", "number", "nominal_time", "created_time", "status", "pending", "waiting",
            "created_at", "ready_at", "submitted_at", "started_at", "ended_at",
            "missing_dependencies", "data_in", "data_out", "run_conf", "external_id",
            "error_message", "sla", "last_modified",
        ]
        read_only_fields = fields

    @extend_schema_field(WaitingSerializer(allow_null=True))
    def get_waiting(self, obj: CoordinatorAction) -> dict[str, Any] | None:
        """How many inputs are missing, the first, the next check and the timeout (WAITING actions only)."""
        info = obj.waiting()
        return None if info is None else dict(WaitingSerializer(info).data)

    def to_representation(self, instance: CoordinatorAction) -> dict[str, Any]:
        """The action (its runs too), its job's secret properties masked for readers other than the owner and job admins."""
        data = dict(super().to_representation(instance))
        masked: dict[str, Any] = mask_for_reader(self, data, instance.job_id, getattr(instance, "job_owner_id", None))
        return masked


class StatusChangeSerializer(serializers.ModelSerializer[StatusChange]):
    """One status change: from, to, when, by which command, service or user, and why."""

    class Meta:
        model = StatusChange
        fields = ["object_id", "from_status", "to_status", "at", "by", "reason"]
        read_only_fields = fields

    def to_representation(self, instance: StatusChange) -> dict[str, Any]:
        """The change; its reason (often an error message) masked as the job's other texts are."""
        masked: dict[str, Any] = mask_for_reader(self, dict(super().to_representation(instance)), instance.job_id)
        return masked


class WorkflowRunSerializer(serializers.ModelSerializer[WorkflowJob]):
    """One run of an action: its workflow job (`...-W`, Oozie's externalId), status, times, Celery task ids, error."""

    task_ids = serializers.SerializerMethodField(help_text="the Celery task id of every attempt of its node(s)")

    class Meta:
        model = WorkflowJob
        fields = [
            "id", "run", "status", "app_path", "created_at", "started_at", "ended_at", "task_ids",
            "error_code", "error_message",
        ]
        read_only_fields = fields

    def get_task_ids(self, obj: WorkflowJob) -> list[str]:
        """Every attempt's task id, node by node."""
        return [str(task_id) for node in obj.nodes.all() for task_id in node.task_ids]


class CoordinatorActionDetailSerializer(CoordinatorActionSerializer):
    """One action with its runs: a workflow job per launch, reruns included (oldest first)."""

    runs = serializers.SerializerMethodField(help_text="every workflow run of the action, oldest first")

    class Meta(CoordinatorActionSerializer.Meta):
        fields = [*CoordinatorActionSerializer.Meta.fields, "runs"]
        read_only_fields = fields

    @extend_schema_field(WorkflowRunSerializer(many=True))
    def get_runs(self, obj: CoordinatorAction) -> list[dict[str, Any]]:
        """The action's workflow jobs by run number."""
        runs = WorkflowJob.objects.filter(coord_action_id=obj.pk).prefetch_related("nodes").order_by("run", "created_at")
        return list(WorkflowRunSerializer(runs, many=True).data)


class PropertiesField(serializers.DictField):
    """Job properties: string names (no NUL, at most 255 characters) to string values."""

    child = serializers.CharField(allow_blank=True, trim_whitespace=False, max_length=65_536)

    def to_internal_value(self, data: Any) -> dict[str, str]:
        """Check the names too (values are checked by the child field)."""
        values: dict[str, str] = super().to_internal_value(data)
        for name in values:
            if not name.strip() or "\x00" in name or len(name) > 255:
                raise serializers.ValidationError(f"bad property name {name[:40]!r}")
        return values


class SubmissionSerializer(serializers.Serializer[dict[str, Any]]):
    """A submission: the coordinator XML inline, or an application path; properties; start or not."""

    app_path_property = COORD_APP_PATH  # the property `app_path` sets (bundles: oozie.bundle.application.path)
    application = "coordinator"

    definition = serializers.CharField(
        required=False, trim_whitespace=False, max_length=MAX_DEFINITION_CHARS,
        help_text="the coordinator XML inline (else oozie.coord.application.path is read)",
    )
    app_path = serializers.CharField(
        required=False, max_length=1024,
        help_text="oozie.coord.application.path: the coordinator.xml or its directory (file://, or an allowed fsspec URI)",
    )
    configuration = serializers.CharField(
        required=False, trim_whitespace=False, max_length=MAX_DEFINITION_CHARS,
        help_text="job properties as a Hadoop XML <configuration> or .properties text",
    )
    properties = PropertiesField(required=False, help_text="job properties (override those of `configuration`)")
    start = serializers.BooleanField(default=True, help_text="start the job at once (else it stays PREP until `start`)")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Merge the configuration text, the properties and app_path; one source of the definition."""
        merged: dict[str, str] = {}
        if "configuration" in attrs:
            try:
                merged.update(load_configuration(attrs["configuration"], "configuration"))
            except ValueError as exc:
                raise serializers.ValidationError({"configuration": " ".join(str(exc).split())}) from None
        merged.update(attrs.get("properties", {}))
        if "app_path" in attrs:
            merged[self.app_path_property] = attrs["app_path"]
        if "definition" not in attrs and not merged.get(self.app_path_property):
            raise serializers.ValidationError(
                {"definition": f"give the {self.application} XML inline, or app_path ({self.app_path_property})"}
            )
        attrs["merged_properties"] = merged
        return attrs


class DryRunSerializer(SubmissionSerializer):
    """A dry-run: a submission that is only planned, never stored."""

    start = None  # type: ignore[assignment]
    max_actions = serializers.IntegerField(default=100, min_value=1, max_value=1000, help_text="plan at most this many actions")


class DryRunResultSerializer(serializers.Serializer[dict[str, Any]]):
    """The plans of the first actions (the dry-run JSON shape)."""

    actions = serializers.ListField(child=serializers.DictField(), help_text="number, nominal_time, data_in, data_out, app_path, configuration")


class ChangeSerializer(serializers.Serializer[dict[str, Any]]):
    """Oozie's change value (`endtime=...;concurrency=...;pausetime=...;status=RUNNING`) or its parts."""

    value = serializers.CharField(required=False, max_length=1024, help_text="endtime=2026-12-01T05:00Z;concurrency=4;pausetime=;status=RUNNING")
    endtime = serializers.CharField(required=False, allow_blank=True, max_length=64)
    concurrency = serializers.CharField(required=False, max_length=16)
    pausetime = serializers.CharField(required=False, allow_blank=True, max_length=64)
    status = serializers.CharField(required=False, max_length=32)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Exactly one form: the value string, or the parts (joined into the value string)."""
        parts = [f"{name}={attrs[name]}" for name in ("endtime", "concurrency", "pausetime", "status") if name in attrs]
        if bool(parts) == ("value" in attrs):
            raise serializers.ValidationError({"value": "give either value or endtime/concurrency/pausetime/status"})
        for text in parts:
            if ";" in text:
                raise serializers.ValidationError({"value": f"{text!r}: ';' separates parts"})
        attrs["value"] = attrs.get("value") or ";".join(parts)
        return attrs


class RerunSerializer(serializers.Serializer[dict[str, Any]]):
    """Which actions to run again (DG_CoordinatorRerun)."""

    type = serializers.ChoiceField(choices=["action", "date"], help_text="scope is action numbers or nominal-time ranges")
    scope = serializers.CharField(max_length=4096, help_text="`1,3-4` or `2009-01-01T01:00Z::2009-01-01T03:00Z`")
    refresh = serializers.BooleanField(default=False, help_text="re-resolve the input events")
    nocleanup = serializers.BooleanField(default=False, help_text="keep the output instances")
    failed = serializers.BooleanField(default=False, help_text="only actions that FAILED")


class RerunResultSerializer(serializers.Serializer[dict[str, Any]]):
    """The actions queued to run again."""

    actions = CoordinatorActionSerializer(many=True)


class IgnoreSerializer(serializers.Serializer[dict[str, Any]]):
    """Which actions to ignore (DG_CommandLineTool -ignore); no scope ignores the job itself."""

    type = serializers.ChoiceField(
        choices=["action", "date"], default="action", help_text="scope is action numbers or nominal-time ranges",
    )
    scope = serializers.CharField(
        max_length=4096, required=False, allow_blank=True,
        help_text="`1,3-4` or `2009-01-01T01:00Z::2009-01-01T03:00Z`; leave out to ignore the (FAILED or KILLED) job",
    )


class KillSerializer(serializers.Serializer[dict[str, Any]]):
    """Which actions to kill (DG_CommandLineTool `-kill ID -action|-date`); an empty body kills the job itself."""

    type = serializers.ChoiceField(
        choices=["action", "date"], required=False, help_text="scope is action numbers or nominal-time ranges (default action)",
    )
    scope = serializers.CharField(
        max_length=4096, required=False, allow_blank=True,
        help_text="`1,3-4` or `2009-01-01T01:00Z::2009-01-01T03:00Z`: only those live actions are killed",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """A type or a scope asks for a scoped kill: the scope must then name something (never the whole job by mistake)."""
        if ("type" in attrs or "scope" in attrs) and not attrs.get("scope", "").strip():
            raise serializers.ValidationError({"scope": "name the actions to kill (`1,3-4` or `A::B`); send no body to kill the job"})
        return attrs


class UpdateSerializer(serializers.Serializer[dict[str, Any]]):
    """An update of the job's definition (read again from its app path) and, optionally, its properties."""

    configuration = PropertiesField(
        required=False, help_text="new job properties, replacing the old ones (leave out to keep them)",
    )
    dryrun = serializers.BooleanField(default=False, help_text="only show the diff; change nothing")


class UpdateResultSerializer(serializers.Serializer[dict[str, Any]]):
    """The diff of definition and configuration, as Oozie prints it, and whether the update was queued."""

    diff = serializers.CharField()
    dryrun = serializers.BooleanField()
    queued = serializers.BooleanField()


JOB_STATUSES = tuple(JobStatus.values)
ACTION_STATUSES = tuple(ActionStatus.values)
