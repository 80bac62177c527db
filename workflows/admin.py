"""Operator views of workflow jobs: the list, and a job's page with its DAG drawn and coloured and every node's runs.

Read only, as every operator page: kill, suspend, resume, start and "rerun failed nodes" are
bulk actions that call `workflows.services` with the same permission check as the APIs
(`workflows.api.access`: the parent coordinator job's rules, else the owner and admins).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from kernel.admin_kit import (
    MAX_MESSAGES,
    SHOWN,
    ReadOnlyAdmin,
    StatusHistoryAdmin,
    StatusWordsFilter,
    change_link,
    pretty,
    remember_reader,
)
from kernel.admin_tries import tries_table
from kernel.display import (
    exact_time,
    human_duration,
    short_id_html,
    status_label,
    status_words,
)
from kernel.models import TaskTry
from kernel.object_verbs import ObjectVerb, ObjectVerbsAdmin
from kernel.permissions import JobPermissionDenied
from kernel.secrets import Masker, masker
from oozie.properties import WF_RERUN_FAIL_NODES
from workflows import graph
from workflows.admin_verbs import node_verbs, workflow_verbs
from workflows.api.access import may_modify
from workflows.choices import WORKFLOW_TERMINAL, NodeStatus, WorkflowStatus
from workflows.engine import CONTROL_TYPES, WorkflowError
from workflows.models import NODE_KIND, WORKFLOW_KIND, WorkflowJob, WorkflowNode
from workflows.services import VerbNotSupported, request_control, request_rerun

#: Past this many nodes the page lists them but does not draw the graph (it would not be readable).
MAX_DRAWN_NODES = 400
MAX_HISTORY_SHOWN = 20
ERROR_CHARS = 600


class WorkflowStatusFilter(StatusWordsFilter):
    """Workflow jobs by status, in words."""

    statuses = tuple(WorkflowStatus.values)


class KindFilter(admin.SimpleListFilter):
    """Workflow applications (a workflow.xml) or one-task coordinator runs."""

    title = "kind"
    parameter_name = "kind"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]) -> list[tuple[str, str]]:
        return [("application", "workflow application"), ("task", "one-task run")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "application":
            return queryset.exclude(app_xml="")
        if self.value() == "task":
            return queryset.filter(app_xml="")
        return queryset


def _verb_action(verb: str, description: str) -> Callable[..., None]:
    """A bulk action queueing `verb` for each selected workflow through the services, reporting per workflow."""

    @admin.action(description=description, permissions=["change"])
    def act(modeladmin: WorkflowJobAdmin, request: HttpRequest, queryset: QuerySet[WorkflowJob]) -> None:
        modeladmin.run_verb(request, queryset, verb)

    act.__name__ = f"{verb}_workflows"
    return act


def _time(value: datetime | None) -> str:
    return exact_time(value) if value is not None else "-"


def node_status_label(status: str) -> str:
    """A node status as a coloured label, in the graph's colours (OK green, ERROR red, ...)."""
    return status_label(status, like=graph.NODE_PALETTE.get(status, status))


def _error_text(code: str, message: str) -> str:
    """`code: message`, without the code twice when the message starts with it."""
    if message.startswith(code):
        return message[:ERROR_CHARS]
    return f"{code}: {message}"[:ERROR_CHARS] if code or message else ""


def _attempts(node: WorkflowNode, secrets: Masker) -> list[str]:
    """The node's runs in words: `attempt 1 on w1@host: ERROR: boom` (the latest last)."""
    lines = []
    for entry in node.history[-MAX_HISTORY_SHOWN:]:
        if not isinstance(entry, dict):
            continue
        text = f"attempt {entry.get('attempt', '?')} on {entry.get('worker') or '-'}: {entry.get('outcome', '?')}"
        if entry.get("marked_by"):  # an operator's mark or clear (workflows.node_verbs)
            text = f"attempt {entry.get('attempt', '?')}: marked {entry.get('outcome')} by {entry['marked_by']}"
        elif entry.get("cleared_by"):
            text = f"cleared by {entry['cleared_by']}{' with downstream' if entry.get('downstream') else ''}"
        if entry.get("error"):  # the full error is in its own column
            error = secrets.text(str(entry["error"]))
            text += f": {error[:80]}…" if len(error) > 80 else f": {error}"
        lines.append(text)
    if node.user_retries:
        lines.append(f"user retries: {node.user_retries}")
    return lines


@admin.register(WorkflowJob)
class WorkflowJobAdmin(ObjectVerbsAdmin, StatusHistoryAdmin, ReadOnlyAdmin):
    """Workflow jobs: filters and search; a job's page draws its DAG and lists its nodes; verbs as bulk actions.

    History lists the job's status changes and its nodes'.
    """

    history_kind, history_children = WORKFLOW_KIND, NODE_KIND

    change_form_template = "admin/workflows/workflowjob/change_form.html"
    list_display = ["short_id", "app_name", "owner", "status_column", "kind", "parent_link", "created", "took"]
    nav_sidebar = False  # the columns and the filters take the width; the app list is one click away (Home)
    list_display_links = ["short_id"]
    list_filter = [WorkflowStatusFilter, KindFilter, ("owner", admin.RelatedOnlyFieldListFilter), "created_at"]
    search_fields = ["=id", "app_name", "owner__username", "=coord_action__id"]
    ordering = ["-created_at"]
    list_select_related = ["owner"]
    list_per_page = 50
    show_full_result_count = False
    actions = [
        _verb_action("kill", "Kill selected workflows"),
        _verb_action("suspend", "Suspend selected workflows"),
        _verb_action("resume", "Resume selected workflows"),
        _verb_action("start", "Start selected PREP workflows"),
        "rerun_failed_nodes",
    ]
    fieldsets = [
        (None, {"fields": ["id", "app_name", "app_path", "owner", "group", "status_text", "run", "parent_link",
                           "parent_workflow_link", "error"]}),
        ("Time", {"fields": ["created_at", "started_at", "ended_at", "last_modified"]}),
        ("Tries", {"fields": ["tries_table"]}),
        ("Definition", {"classes": ["collapse"], "fields": ["configuration_pretty", "app_xml_pre"]}),
    ]
    readonly_fields = [
        "id", "app_name", "app_path", "owner", "group", "status_text", "run", "parent_link", "parent_workflow_link",
        "error", "created_at", "started_at", "ended_at", "last_modified", "tries_table", "configuration_pretty",
        "app_xml_pre",
    ]

    @admin.display(description="tries, newest first")
    def tries_table(self, obj: WorkflowJob) -> str:
        """Every try of every node, every run of this job (a rerun adds tries; the failed run's stay)."""
        return tries_table(TaskTry.objects.filter(job_id=obj.pk), self.shown(obj))

    # ---- the page ---------------------------------------------------------------------------

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> WorkflowJob | None:
        """The workflow, noting what the reader is shown of its secret properties (owner and job admins: everything)."""
        workflow = super().get_object(request, object_id, from_field)
        if workflow is None:
            return None
        return remember_reader(workflow, request.user, workflow.owner_id, *workflow.secret_sources())

    def history_what(self, change: Any) -> str:
        """`job`, or the node's name."""
        return "job" if change.kind == WORKFLOW_KIND else f"node {change.object_id.partition('@')[2]}"

    @staticmethod
    def shown(workflow: WorkflowJob) -> Masker:
        """What the page's reader is shown of the workflow's secrets (see get_object; masked when nobody noted it)."""
        remembered: Masker | None = getattr(workflow, SHOWN, None)
        return remembered if remembered is not None else masker(*workflow.secret_sources())

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict[str, Any] | None = None) -> Any:
        """The fields, then the DAG (SVG) and the node table (see the template)."""
        workflow = self.get_object(request, unquote(object_id))
        context = {"is_nav_sidebar_enabled": False, **(extra_context or {})}  # the graph and the table take the width
        if workflow is not None:
            context.update(self.graph_context(workflow))
            shown = {node.name: node for node in workflow.nodes.exclude(type__in=sorted(CONTROL_TYPES.values()))}
            for row in context["node_rows"]:  # each action node's clear and mark buttons (kernel.object_verbs)
                if row["name"] in shown:
                    row["verbs"] = self.verb_buttons(request, workflow, {"node": row["name"]})
        return super().change_view(request, object_id, form_url, context)

    # ---- buttons (workflows.admin_verbs) ------------------------------------------------------

    verb_params = ("node",)

    def object_verbs(self, request: HttpRequest, obj: WorkflowJob, params: Mapping[str, str]) -> list[ObjectVerb]:
        """The job's verbs; with `node`, that node's clear and mark."""
        if "node" not in params:
            return workflow_verbs(obj, request.user)
        node = WorkflowNode.objects.filter(workflow=obj, name=params["node"]).first()
        if node is None or node.type in CONTROL_TYPES.values():
            return []
        return node_verbs(obj, node, request.user)

    def verb_forbidden(self, request: HttpRequest, obj: WorkflowJob) -> str:
        try:
            may_modify(request.user, obj)
        except JobPermissionDenied as exc:
            return str(exc)
        return ""

    def graph_context(self, workflow: WorkflowJob) -> dict[str, Any]:
        """What the template shows under the fields: the SVG, a legend, the node rows, the sub-workflows."""
        nodes = sorted(workflow.nodes.all(), key=lambda n: (n.name != ":start:", n.started_at or n.dispatched_at
                                                             or workflow.created_at, n.id))
        statuses = {node.name: node.status for node in nodes}
        drawn: SafeString | None = None
        note = ""
        definition = workflow.definition or {}
        count = len(definition.get("nodes", ()))
        if definition and count <= MAX_DRAWN_NODES:
            transitions = {node.name: node.transition for node in nodes if node.transition}
            # graph.svg escapes every text it writes (names, types, statuses, titles): safe to inline.
            drawn = mark_safe(graph.svg(definition, statuses, transitions=transitions,  # noqa: S308
                                        title=f"{workflow.app_name} {workflow.status}"))
        elif definition:
            note = f"{count} nodes: too many to draw ({MAX_DRAWN_NODES} at most); the table lists them"
        else:
            note = "a one-task run (task: or batch:), not a workflow.xml: nothing to draw"
        children = {child.parent_node: child for child in workflow.sub_workflows.all()}
        secrets = self.shown(workflow)
        rows = [self.node_row(node, children.get(node.id), secrets) for node in nodes]
        legend = [
            (status_words(status), graph.node_colour(status))
            for status in (NodeStatus.OK, NodeStatus.RUNNING, NodeStatus.PREP, NodeStatus.USER_RETRY,
                           NodeStatus.ERROR, NodeStatus.FAILED, NodeStatus.KILLED)
        ]
        return {"workflow_graph": drawn, "graph_note": note, "node_rows": rows, "graph_legend": legend,
                "not_reached_colour": graph.NOT_REACHED_STROKE}

    def node_row(self, node: WorkflowNode, child: WorkflowJob | None, secrets: Masker) -> dict[str, Any]:
        """One row of the node table (errors and captured data masked as the reader is shown them)."""
        external: Any = node.external_id
        if child is not None:
            external = format_html("{} {}", change_link(child, child.pk), status_label(child.status))
        elif node.external_id and node.external_id.endswith("-W"):
            external = format_html('<a href="{}">{}</a>', reverse(
                "admin:workflows_workflowjob_change", args=[quote(node.external_id)]), node.external_id)
        took = human_duration(node.ended_at - node.started_at) if node.started_at and node.ended_at else "-"
        return {
            "name": node.name, "type": node.type, "status": node_status_label(node.status),
            "transition": node.transition or "-", "attempts": _attempts(node, secrets), "attempt": node.attempt,
            "error": _error_text(node.error_code, secrets.text(node.error_message)),
            "data": sorted((str(k), str(v)) for k, v in secrets.data(node.data or {}).items()),
            "external": external, "external_status": node.external_status or "",
            "started": _time(node.started_at), "ended": _time(node.ended_at), "took": took,
            "worker": node.worker or "",
        }

    # ---- columns and fields -------------------------------------------------------------------

    @admin.display(description="id", ordering="id")
    def short_id(self, obj: WorkflowJob) -> str:
        return short_id_html(obj.pk)

    @admin.display(description="status", ordering="status")
    def status_column(self, obj: WorkflowJob) -> str:
        return status_label(obj.status)

    @admin.display(description="status")
    def status_text(self, obj: WorkflowJob) -> str:
        return format_html("{} {}", status_label(obj.status), obj.status)

    @admin.display(description="kind")
    def kind(self, obj: WorkflowJob) -> str:
        return "application" if obj.app_xml or obj.definition else "task"

    @admin.display(description="parent")
    def parent_link(self, obj: WorkflowJob) -> str:
        """The coordinator action that launched it, or the workflow whose sub-workflow node did."""
        if obj.coord_action_id:
            url = reverse("admin:coordinators_coordinatoraction_change", args=[quote(obj.coord_action_id)])
            return short_id_html(obj.coord_action_id, url)
        if obj.parent_workflow_id:
            url = reverse("admin:workflows_workflowjob_change", args=[quote(obj.parent_workflow_id)])
            return format_html("{} (node {})", short_id_html(obj.parent_workflow_id, url), obj.parent_node.rpartition("@")[2])
        return "-"

    @admin.display(description="parent workflow")
    def parent_workflow_link(self, obj: WorkflowJob) -> str:
        if not obj.parent_workflow_id:
            return "-"
        url = reverse("admin:workflows_workflowjob_change", args=[quote(obj.parent_workflow_id)])
        return format_html('<a href="{}">{}</a> node {}', url, obj.parent_workflow_id, obj.parent_node.rpartition("@")[2])

    @admin.display(description="created", ordering="created_at")
    def created(self, obj: WorkflowJob) -> str:
        return _time(obj.created_at)

    @admin.display(description="took")
    def took(self, obj: WorkflowJob) -> str:
        if obj.started_at is None:
            return "-"
        if obj.ended_at is None:
            return "running"
        return human_duration(obj.ended_at - obj.started_at)

    @admin.display(description="error")
    def error(self, obj: WorkflowJob) -> str:
        message = self.shown(obj).text(obj.error_message)
        return f"{obj.error_code}: {message}" if obj.error_code or obj.error_message else "-"

    @admin.display(description="configuration")
    def configuration_pretty(self, obj: WorkflowJob) -> str:
        return pretty(self.shown(obj).properties(obj.configuration))

    @admin.display(description="workflow.xml")
    def app_xml_pre(self, obj: WorkflowJob) -> str:
        xml = self.shown(obj).text(obj.app_xml)
        return format_html("<pre style='margin:0;white-space:pre-wrap'>{}</pre>", xml or "(a one-task run)")

    # ---- verbs --------------------------------------------------------------------------------

    def run_verb(self, request: HttpRequest, queryset: QuerySet[WorkflowJob], verb: str) -> None:
        """Queue the verb for each workflow as the operator; refusals and no-ops are reported, not raised."""
        def check(run: WorkflowJob) -> None:
            may_modify(request.user, run)

        done: list[str] = []
        refused: list[str] = []
        for workflow_id, status in queryset.order_by("pk").values_list("pk", "status"):
            try:
                if verb == "rerun":
                    if status not in WORKFLOW_TERMINAL:
                        refused.append(f"{workflow_id}: it is {status}; only an ended workflow can be rerun")
                        continue
                    request_rerun(workflow_id, {WF_RERUN_FAIL_NODES: "true"}, check=check)
                    done.append(workflow_id)
                elif request_control(workflow_id, verb, check=check, reason=f"killed by {request.user} in the admin"):
                    done.append(workflow_id)
                else:
                    refused.append(f"{workflow_id}: it is {status}, nothing to do")
            except (JobPermissionDenied, WorkflowError, VerbNotSupported, WorkflowJob.DoesNotExist) as exc:
                refused.append(f"{workflow_id}: {exc}")
        if done:
            shown = ", ".join(done[:MAX_MESSAGES]) + (f" and {len(done) - MAX_MESSAGES} more" if len(done) > MAX_MESSAGES else "")
            self.message_user(request, f"{verb} queued for {len(done)} workflow(s): {shown}", messages.SUCCESS)
        for reason in refused[:MAX_MESSAGES]:
            self.message_user(request, f"{verb} not done for {reason}", messages.WARNING)
        if len(refused) > MAX_MESSAGES:
            self.message_user(request, f"... and {len(refused) - MAX_MESSAGES} more not done", messages.WARNING)

    @admin.action(description="Rerun selected ended workflows from their failed nodes", permissions=["change"])
    def rerun_failed_nodes(self, request: HttpRequest, queryset: QuerySet[WorkflowJob]) -> None:
        self.run_verb(request, queryset, "rerun")
