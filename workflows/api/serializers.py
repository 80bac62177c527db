"""Serializers of the workflow API: jobs and their nodes out, submissions and reruns in."""

from __future__ import annotations

from typing import Any, cast

from rest_framework import serializers
from rest_framework.reverse import reverse

from kernel.api import reader, siblings
from kernel.secrets import masker, may_see_secrets
from oozie.properties import WF_APP_PATH
from workflows.choices import WorkflowStatus
from workflows.models import WorkflowJob, WorkflowNode

CONFIGURATIONS_READ = "_secret_workflows"  # context key: configurations of the workflows read so far

MAX_PROPERTIES = 1000
MAX_VALUE_CHARS = 65_536


class WorkflowNodeSerializer(serializers.ModelSerializer[WorkflowNode]):
    """One node of a run: status, the transition it took, attempts, error, captured output, external id, times."""

    retries = serializers.SerializerMethodField(help_text="relaunches of this run after lost workers or transient errors")

    class Meta:
        model = WorkflowNode
        fields = [
            "id", "name", "type", "status", "transition", "attempt", "retries", "user_retries", "retry_at",
            "started_at", "ended_at", "error_code", "error_message", "data", "external_id", "external_status",
            "task_name", "task_id", "worker", "history", "spec",
        ]
        read_only_fields = fields

    def get_retries(self, obj: WorkflowNode) -> int:
        """Attempts after the first."""
        return max(0, obj.attempt - 1)


class WorkflowJobSerializer(serializers.ModelSerializer[WorkflowJob]):
    """A workflow job: application, status, times, parent (coordinator action or workflow) and error."""

    user = serializers.CharField(source="owner.username", read_only=True, allow_null=True, default=None,
                                 help_text="the owner (who submitted it, or its coordinator's owner)")
    url = serializers.SerializerMethodField(help_text="this workflow in the native API")
    kind = serializers.SerializerMethodField(help_text="application (a workflow.xml) or task (a one-task run)")
    coord_action = serializers.CharField(source="coord_action_id", read_only=True, allow_null=True,
                                         help_text="the coordinator action that launched it")

    class Meta:
        model = WorkflowJob
        fields = [
            "id", "url", "kind", "app_name", "app_path", "user", "group", "status", "run", "coord_action",
            "parent_workflow", "parent_node", "created_at", "started_at", "ended_at", "last_modified",
            "error_code", "error_message",
        ]
        read_only_fields = fields

    def get_url(self, obj: WorkflowJob) -> str:
        """Absolute URL of the workflow."""
        return reverse("workflow-job-detail", args=[obj.pk], request=self.context.get("request"))

    def get_kind(self, obj: WorkflowJob) -> str:
        """`application` when a workflow.xml runs, else `task`."""
        return "application" if obj.definition else "task"

    def to_representation(self, instance: WorkflowJob) -> dict[str, Any]:
        """The workflow; its configuration's secrets masked (kernel.secrets) for readers other than the owner and job admins.

        Sub-workflows and coordinator runs carry their parent's owner, so the owner rule is the parent's.
        """
        data = dict(super().to_representation(instance))
        if may_see_secrets(reader(self.context), instance.owner_id):
            return data
        if "configuration" not in data and not data.get("error_message"):
            return data  # a list row: only its error message can hold a secret value
        masked: dict[str, Any] = masker(*self.secret_sources(instance), data).data(data)
        return masked

    def secret_sources(self, instance: WorkflowJob) -> list[Any]:
        """Its configuration and its parents' (WorkflowJob.secret_sources); a list page reads all its rows' in one query."""
        if "configuration" in instance.__dict__:
            return instance.secret_sources()
        known: dict[str, list[Any]] = cast(dict[str, Any], self.context).setdefault(CONFIGURATIONS_READ, {})
        if instance.pk not in known:
            wanted = {instance.pk} | {item.pk for item in siblings(self) if getattr(item, "error_message", "")}
            rows = WorkflowJob.objects.filter(pk__in=sorted(wanted - set(known))).values_list(
                "pk", "configuration", "coord_action__job__configuration", "parent_workflow__configuration")
            known.update({pk: [found for found in sources if found] for pk, *sources in rows})
        return list(known.get(instance.pk, []))


class WorkflowJobDetailSerializer(WorkflowJobSerializer):
    """A workflow job with its configuration, definition (the parsed DAG), workflow.xml, nodes and sub-workflows."""

    nodes = WorkflowNodeSerializer(many=True, read_only=True)
    sub_workflows = serializers.SerializerMethodField(help_text="ids of the workflows its sub-workflow nodes started")

    class Meta(WorkflowJobSerializer.Meta):
        fields = [*WorkflowJobSerializer.Meta.fields, "configuration", "definition", "app_xml", "nodes", "sub_workflows"]
        read_only_fields = fields

    def get_sub_workflows(self, obj: WorkflowJob) -> list[str]:
        """Child workflow ids, oldest first."""
        return list(obj.sub_workflows.order_by("created_at", "id").values_list("id", flat=True))


def _check_properties(value: dict[str, str]) -> dict[str, str]:
    if len(value) > MAX_PROPERTIES:
        raise serializers.ValidationError(f"at most {MAX_PROPERTIES} properties")
    for name, text in value.items():
        if not name.strip():
            raise serializers.ValidationError("property names cannot be blank")
        if len(name) > 255 or len(text) > MAX_VALUE_CHARS:
            raise serializers.ValidationError(f"property {name[:60]!r}: name or value too long")
    return value


class WorkflowSubmissionSerializer(serializers.Serializer[dict[str, Any]]):
    """A workflow application to run: the job properties (naming `oozie.wf.application.path`) and whether to start."""

    properties = serializers.DictField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False),
        help_text="job.properties as a JSON object; `oozie.wf.application.path` names the directory holding workflow.xml",
    )
    start = serializers.BooleanField(default=True, help_text="run it now (true) or keep it PREP until `start` (false)")

    def validate_properties(self, value: dict[str, str]) -> dict[str, str]:
        """Bounded, named, with an application path."""
        _check_properties(value)
        if not str(value.get(WF_APP_PATH, "")).strip():
            raise serializers.ValidationError("oozie.wf.application.path is required: the workflow application to run")
        return value


class WorkflowRerunSerializer(serializers.Serializer[dict[str, Any]]):
    """How to rerun an ended application (spec 10): skip nodes that succeeded, or rerun from the failed ones."""

    skip_nodes = serializers.ListField(
        child=serializers.CharField(max_length=100), required=False, max_length=2000,
        help_text="nodes that ended OK and keep their run (oozie.wf.rerun.skip.nodes)",
    )
    fail_nodes = serializers.BooleanField(
        default=False, help_text="rerun only what did not succeed (oozie.wf.rerun.failnodes=true)")
    properties = serializers.DictField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False), required=False,
        help_text="properties to change for the new run",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Either skip_nodes or fail_nodes, not both (Oozie's E0404)."""
        if attrs.get("fail_nodes") and attrs.get("skip_nodes"):
            raise serializers.ValidationError("give either skip_nodes or fail_nodes, not both")
        _check_properties(attrs.get("properties") or {})
        return attrs


WORKFLOW_STATUSES = tuple(WorkflowStatus.values)


# ---- one node's verbs: clear, mark OK or ERROR (workflows.node_verbs) ---------------------------------


class _NodeVerbSerializer(serializers.Serializer[dict[str, Any]]):
    """A node verb's body: a field it does not know is refused (a misspelt option must not change what is done)."""

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Only the declared fields."""
        unknown = sorted(set(self.initial_data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                f"unknown field(s) {', '.join(map(repr, unknown))}; this verb takes {', '.join(self.fields)}")
        return attrs


class NodeClearSerializer(_NodeVerbSerializer):
    """Clear a node: it runs again; with `downstream`, every node after it too (those running are stopped first)."""

    downstream = serializers.BooleanField(
        default=False, help_text="run every node after it again too (false: those that ended OK keep their run)")


class NodeMarkSerializer(_NodeVerbSerializer):
    """Mark a node that has not ended as OK or ERROR: the workflow takes that transition."""

    status = serializers.ChoiceField(choices=["OK", "ERROR"], help_text="the node's end: OK or ERROR")


class NodeVerbResultSerializer(serializers.Serializer[dict[str, Any]]):
    """A node verb queued: the workflow as it was, the node, the command doing it and what it will do."""

    workflow = WorkflowJobSerializer(help_text="the workflow as it was when the verb was queued")
    node = serializers.CharField(help_text="the node's name")
    command = serializers.IntegerField(help_text="the id of the queued command (shown in the admin's commands)")
    effect = serializers.ListField(child=serializers.CharField(), help_text="what it will do, in lines")


class NodeClearResultSerializer(NodeVerbResultSerializer):
    """A clear queued, with its plan."""

    rerun = serializers.ListField(child=serializers.CharField(), help_text="the nodes that run again (the node first)")
    kept = serializers.ListField(child=serializers.CharField(),
                                 help_text="the nodes after it that keep their OK run (skipped when reached)")
    stopped = serializers.ListField(child=serializers.CharField(),
                                    help_text="the nodes after it stopped now (KILLED, tasks revoked)")
