"""Workflow API: submit an application, list and read workflow jobs (with their nodes), kill/suspend/resume/start/rerun,
and clear or mark one node.

Views parse input and call `workflows.services` (the same actions the CLI, the Oozie API and
the admin's buttons call), with the permission check of `workflows.api.access`: a workflow
answers to its parent coordinator job's rules, an unparented one to its owner and admins.
Verbs are queued as commands (202); a verb the workflow's (or node's) status does not allow is
409, as everywhere in this API; a node the workflow does not have is 404.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import F, Prefetch, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from kernel.api import ERROR_BODY, Conflict, DomainViewSet, TaskTrySerializer, accepted, tries_page
from kernel.models import TaskTry
from kernel.permissions import submitter_properties
from kernel.secrets import masker_for
from oozie.properties import WF_RERUN_FAIL_NODES, WF_RERUN_SKIP_NODES
from workflows.api.access import may_modify, readable_workflows
from workflows.api.filters import WorkflowJobFilterSet
from workflows.api.serializers import (
    NodeClearResultSerializer,
    NodeClearSerializer,
    NodeMarkSerializer,
    NodeVerbResultSerializer,
    WorkflowJobDetailSerializer,
    WorkflowJobSerializer,
    WorkflowRerunSerializer,
    WorkflowSubmissionSerializer,
)
from workflows.choices import WORKFLOW_TERMINAL
from workflows.models import WorkflowJob, WorkflowNode
from workflows.node_verbs import NodeVerbRefused, UnknownNode
from workflows.services import (
    VERB_FROM,
    VerbNotSupported,
    request_control,
    request_node_clear,
    request_node_mark,
    request_rerun,
    submit_workflow,
)

ERRORS = {400: ERROR_BODY, 403: ERROR_BODY, 404: ERROR_BODY}
VERB_ERRORS = {**ERRORS, 409: ERROR_BODY}
NODE = OpenApiParameter("node", OpenApiTypes.STR, OpenApiParameter.PATH,
                        description="the node's name in the workflow (an action node)")


def with_nodes(queryset: QuerySet[WorkflowJob]) -> QuerySet[WorkflowJob]:
    """Workflows with their owner and nodes (in the order they were entered) read up front."""
    order = (F("started_at").asc(nulls_last=True), F("dispatched_at").asc(nulls_last=True), "id")
    nodes = Prefetch("nodes", queryset=WorkflowNode.objects.order_by(*order))
    return queryset.select_related("owner").prefetch_related(nodes)


def _verb_schema(summary: str, request: Any = None) -> Any:
    unsupported = {415: ERROR_BODY} if request is not None else {}
    return extend_schema(summary=summary, request=request,
                         responses={202: WorkflowJobSerializer, **VERB_ERRORS, **unsupported})


@extend_schema_view(
    list=extend_schema(summary="List workflow jobs (newest first): applications and coordinator runs",
                       responses={200: WorkflowJobSerializer(many=True), 400: ERROR_BODY}),
    retrieve=extend_schema(summary="A workflow job with its definition, configuration and nodes",
                           responses={200: WorkflowJobDetailSerializer, 400: ERROR_BODY, 404: ERROR_BODY}),
)
class WorkflowJobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, DomainViewSet):
    """Workflow jobs: readers of the parent (or the owner) read; who may modify the parent (or the owner, admins) acts."""

    serializer_class = WorkflowJobSerializer
    filtersets = {"list": WorkflowJobFilterSet}
    conflict_errors = (VerbNotSupported, NodeVerbRefused)
    missing_errors = (UnknownNode,)

    def get_queryset(self) -> QuerySet[WorkflowJob]:
        """Readable workflows; lists newest first without the large columns, details with their nodes."""
        queryset = readable_workflows(WorkflowJob.objects.all(), self.request.user)
        if self.action == "list":
            return (queryset.select_related("owner").defer("configuration", "definition", "app_xml")
                    .order_by("-created_at", "-id"))
        return with_nodes(queryset)

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        """Details carry the definition, the configuration and the nodes."""
        return WorkflowJobDetailSerializer if self.action in ("retrieve", "create") else WorkflowJobSerializer

    @extend_schema(
        summary="Submit a workflow application (workflow.xml) and run it",
        request=WorkflowSubmissionSerializer,
        description="The application is read and validated now (schema, DAG, every variable); a refusal is a 400 "
        "naming the problem and stores nothing. `start: false` keeps it PREP until the `start` verb.",
        responses={201: WorkflowJobDetailSerializer, **ERRORS},
    )
    def create(self, request: Request) -> Response:
        """Validate and store the workflow job (running unless start=false)."""
        incoming = WorkflowSubmissionSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        properties = submitter_properties(incoming.validated_data["properties"], request.user)
        stored = submit_workflow(properties, owner=request.user, trusted=False, start=incoming.validated_data["start"])
        workflow = with_nodes(WorkflowJob.objects.all()).get(pk=stored.pk)
        return Response(WorkflowJobDetailSerializer(workflow, context={"request": request}).data,
                        status=status.HTTP_201_CREATED)

    def _check(self, request: Request) -> Callable[[WorkflowJob], None]:
        """The permission check the services run on the workflow: may the caller modify it (its parent's rules)."""

        def check(run: WorkflowJob) -> None:
            may_modify(request.user, run)

        return check

    def _control(self, request: Request, pk: str, verb: str) -> Response:
        workflow = self.get_object()  # 404 unless readable
        who = request.user.get_username()
        check = self._check(request)

        queued = request_control(workflow.pk, verb, check=check, reason=f"killed by {who} through the API")
        if not queued:
            raise Conflict(f"workflow {workflow.pk} is {workflow.status}: {verb} applies to "
                           f"{', '.join(sorted(VERB_FROM[verb]))} workflows")
        workflow.refresh_from_db()
        return accepted(WorkflowJobSerializer, workflow, request)

    @extend_schema(summary="The workflow's node tries, newest first, paginated: how each ended, its traceback and log",
                   responses={200: TaskTrySerializer(many=True), **ERRORS})
    @action(detail=True, methods=["get"])
    def tries(self, request: Request, pk: str) -> Response:
        """Every try of every node, every run (a rerun adds tries; the earlier ones stay)."""
        found = self.get_object()
        return tries_page(self, TaskTry.objects.filter(job_id=found.pk),
                          masker_for(request.user, found.owner_id, *found.secret_sources()))

    @_verb_schema("Kill a workflow: its running nodes are stopped, its sub-workflows killed")
    @action(detail=True, methods=["post"])
    def kill(self, request: Request, pk: str) -> Response:
        """Queue the kill."""
        return self._control(request, pk, "kill")

    @_verb_schema("Suspend a running workflow: nothing new starts; running nodes finish, their transitions wait")
    @action(detail=True, methods=["post"])
    def suspend(self, request: Request, pk: str) -> Response:
        """Queue the suspension."""
        return self._control(request, pk, "suspend")

    @_verb_schema("Resume a suspended workflow")
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: str) -> Response:
        """Queue the resumption."""
        return self._control(request, pk, "resume")

    @_verb_schema("Start a PREP workflow application (submitted with start=false)")
    @action(detail=True, methods=["post"])
    def start(self, request: Request, pk: str) -> Response:
        """Queue the start."""
        return self._control(request, pk, "start")

    @_verb_schema("Rerun an ended workflow application: skipping nodes that succeeded, or from its failed nodes",
                  request=WorkflowRerunSerializer)
    @action(detail=True, methods=["post"])
    def rerun(self, request: Request, pk: str) -> Response:
        """Queue the rerun (409 unless the workflow ended; 400 for skip nodes that did not succeed)."""
        incoming = WorkflowRerunSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        workflow = self.get_object()
        properties = {str(k): str(v) for k, v in (data.get("properties") or {}).items()}
        properties.pop(WF_RERUN_SKIP_NODES, None)
        properties.pop(WF_RERUN_FAIL_NODES, None)
        if data.get("skip_nodes"):
            properties[WF_RERUN_SKIP_NODES] = ",".join(data["skip_nodes"])
        if data["fail_nodes"]:
            properties[WF_RERUN_FAIL_NODES] = "true"

        def check(run: WorkflowJob) -> None:
            may_modify(request.user, run)
            if run.parent_workflow_id:
                raise Conflict(f"workflow {run.pk} is a sub-workflow of {run.parent_workflow_id}: rerun that one")
            if run.status not in WORKFLOW_TERMINAL:
                raise Conflict(f"workflow {run.pk} is {run.status}: only an ended workflow can be rerun")

        request_rerun(workflow.pk, properties, check=check)
        workflow.refresh_from_db()
        return accepted(WorkflowJobSerializer, workflow, request)

    # ---- one node: clear, mark OK or ERROR (the admin's node buttons call the same services) ----------

    def _node_result(self, workflow: WorkflowJob, node: str, command: Any, effect: list[str],
                     **plan: list[str]) -> Response:
        """202: the workflow as it was when queued, the node, the command and what it will do."""
        workflow.refresh_from_db()
        body = {"workflow": WorkflowJobSerializer(workflow, context=self.get_serializer_context()).data,
                "node": node, "command": command.pk, "effect": effect, **plan}
        return Response(body, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        summary="Clear a node: it runs again (a new attempt) and the workflow continues from it",
        description="An ended action node runs again; the nodes after it that ended OK keep their run unless "
        "`downstream` is true (then they run again too, and those still running are stopped: KILLED). A running "
        "node after it refuses a clear without downstream (409); so do a node that has not ended, a control node, "
        "and a workflow whose coordinator action or parent was told it ended. An unknown node is 404. "
        "The node's runs name who cleared it.",
        parameters=[NODE], request=NodeClearSerializer, responses={202: NodeClearResultSerializer, **VERB_ERRORS},
    )
    @action(detail=True, methods=["post"], url_path=r"nodes/(?P<node>[^/]+)/clear", url_name="node-clear")
    def node_clear(self, request: Request, pk: str, node: str) -> Response:
        """Queue the clear (with or without downstream) as the caller."""
        incoming = NodeClearSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        workflow = self.get_object()  # 404 unless readable
        command, plan = request_node_clear(workflow.pk, node, downstream=incoming.validated_data["downstream"],
                                           check=self._check(request), actor=request.user)
        return self._node_result(workflow, node, command, plan.describe(), rerun=list(plan.rerun),
                                 kept=list(plan.kept), stopped=list(plan.stopped))

    @extend_schema(
        summary="Mark a node OK or ERROR: it ends so and the workflow takes that transition",
        description="A node that has not ended (PREP, RUNNING, USER_RETRY) of a RUNNING or SUSPENDED workflow; a "
        "running attempt is fenced off (its late report is discarded) and its task revoked. A marked ERROR takes "
        "the error transition at once (no user retry). An ended node, a control node or an ended workflow: 409; "
        "an unknown node: 404. The node's runs name who marked it.",
        parameters=[NODE], request=NodeMarkSerializer, responses={202: NodeVerbResultSerializer, **VERB_ERRORS},
    )
    @action(detail=True, methods=["post"], url_path=r"nodes/(?P<node>[^/]+)/mark", url_name="node-mark")
    def node_mark(self, request: Request, pk: str, node: str) -> Response:
        """Queue the mark as the caller."""
        incoming = NodeMarkSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        workflow = self.get_object()  # 404 unless readable
        command, effect = request_node_mark(workflow.pk, node, incoming.validated_data["status"],
                                            check=self._check(request), actor=request.user)
        return self._node_result(workflow, node, command, effect)
