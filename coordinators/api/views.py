"""Coordinator API: submit, dry-run, list, read, and the verbs start/suspend/resume/kill/change/rerun/ignore/update.

kill takes an optional scope (`{"type": "action", "scope": "1,3-4"}`): then only those live actions are killed.

Views parse input and call the domain actions in `coordinators.services` (the same ones the CLI
and the admin call); those check permissions and refuse illegal transitions.
"""

from __future__ import annotations

from typing import Any

from django.db.models import F, QuerySet
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from coordinators import services
from coordinators.api.filters import (
    AllCoordinatorActionFilterSet,
    CoordinatorActionFilterSet,
    CoordinatorJobFilterSet,
)
from coordinators.api.serializers import (
    ChangeSerializer,
    CoordinatorActionDetailSerializer,
    CoordinatorActionSerializer,
    CoordinatorJobDetailSerializer,
    CoordinatorJobSerializer,
    DryRunResultSerializer,
    DryRunSerializer,
    IgnoreSerializer,
    KillSerializer,
    RerunResultSerializer,
    RerunSerializer,
    StatusChangeSerializer,
    SubmissionSerializer,
    UpdateResultSerializer,
    UpdateSerializer,
    knowing,
)
from coordinators.choices import IllegalTransition
from coordinators.models import CoordinatorAction, CoordinatorJob, StatusChange
from kernel.api import ERROR_BODY, DomainViewSet, TaskTrySerializer, accepted, tries_page
from kernel.models import TaskTry
from kernel.permissions import readable_jobs, submitter_properties
from kernel.secrets import masker_for
from operations.api.bulk import bulk_schema, start_from_request

ERRORS = {400: ERROR_BODY, 403: ERROR_BODY, 404: ERROR_BODY}
VERB_ERRORS = {**ERRORS, 409: ERROR_BODY}
ORDER = OpenApiParameter(
    "order", OpenApiTypes.STR, OpenApiParameter.QUERY, enum=["asc", "desc"],
    description="by action number: asc (default, @1 first) or desc (latest first)",
)


def _valid(serializer_class: type[BaseSerializer[Any]], request: Request) -> dict[str, Any]:
    incoming = serializer_class(data=request.data)
    incoming.is_valid(raise_exception=True)
    return dict(incoming.validated_data)


def _verb_schema(summary: str, request: Any = None) -> Any:
    return extend_schema(summary=summary, request=request, responses={202: CoordinatorJobSerializer, **VERB_ERRORS})


@extend_schema_view(
    list=extend_schema(summary="List coordinator jobs (newest first)", responses={200: CoordinatorJobSerializer(many=True), 400: ERROR_BODY}),
    retrieve=extend_schema(summary="A coordinator job with its definition and properties", responses={200: CoordinatorJobDetailSerializer, 400: ERROR_BODY, 404: ERROR_BODY}),
)
class CoordinatorJobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, DomainViewSet):
    """Coordinator jobs: everybody authenticated reads (unless COORD_RESTRICT_READS); owner, ACL and admins act."""

    serializer_class = CoordinatorJobSerializer
    filtersets = {"list": CoordinatorJobFilterSet, "actions": CoordinatorActionFilterSet}
    conflict_errors = (IllegalTransition,)

    def get_queryset(self) -> QuerySet[CoordinatorJob]:
        """Readable jobs; lists newest first without the large text columns."""
        queryset = readable_jobs(CoordinatorJob.objects.select_related("owner"), self.request.user)
        if self.action == "list":
            queryset = queryset.defer("definition", "configuration").order_by("-created_at", "-id")
        return queryset

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        """Details carry the definition and configuration."""
        return CoordinatorJobDetailSerializer if self.action == "retrieve" else CoordinatorJobSerializer

    @extend_schema(summary="Submit a coordinator job", request=SubmissionSerializer,
                   responses={201: CoordinatorJobDetailSerializer, **ERRORS})
    def create(self, request: Request) -> Response:
        """Validate, resolve and store a job (and start it unless start=false); nothing is stored on refusal."""
        data = _valid(SubmissionSerializer, request)
        properties = submitter_properties(data["merged_properties"], request.user)
        if "definition" in data:
            job = services.submit_coordinator(data["definition"], properties, owner=request.user, start=data["start"])
        else:
            job = services.submit_from_properties(properties, owner=request.user, start=data["start"])
        job = CoordinatorJob.objects.select_related("owner").get(pk=job.pk)
        return Response(CoordinatorJobDetailSerializer(job, context={"request": request}).data, status=status.HTTP_201_CREATED)

    @extend_schema(summary="Plan a submission's first actions without storing anything", request=DryRunSerializer,
                   responses={200: DryRunResultSerializer, **ERRORS})
    @action(detail=False, methods=["post"])
    def dryrun(self, request: Request) -> Response:
        """The plans of the first `max_actions` actions (the definition inline or read from app_path)."""
        data = _valid(DryRunSerializer, request)
        properties = submitter_properties(data["merged_properties"], request.user)
        result = services.dryrun_submission(
            data.get("definition"), properties, owner=request.user, now=timezone.now(), max_actions=data["max_actions"],
        )
        return Response(result)

    @bulk_schema("coordinator")
    @action(detail=False, methods=["post"])
    def bulk(self, request: Request) -> Response:
        """202 with the operation carrying the verb out on every selected job (Oozie's `jobs -kill -filter`)."""
        return start_from_request(self, request, "coordinator")

    @extend_schema(summary="The job's actions, paginated", parameters=[ORDER],
                   responses={200: CoordinatorActionSerializer(many=True), **ERRORS})
    @action(detail=True, methods=["get"])
    def actions(self, request: Request, pk: str) -> Response:
        """Actions of one job by number, filtered by status and nominal time."""
        job = self.get_object()
        order = request.query_params.get("order", "asc")
        if order not in ("asc", "desc"):
            raise ValidationError({"order": "asc or desc"})
        queryset = self.filter_queryset(CoordinatorAction.objects.filter(job_id=job.pk))
        page = self.paginate_queryset(queryset.order_by("number" if order == "asc" else "-number"))
        context = knowing(self.get_serializer_context(), job)
        return self.get_paginated_response(CoordinatorActionSerializer(page, many=True, context=context).data)

    @extend_schema(summary="The job's status changes, oldest first, paginated (its actions' are on each action)",
                   responses={200: StatusChangeSerializer(many=True), **ERRORS})
    @action(detail=True, methods=["get"])
    def history(self, request: Request, pk: str) -> Response:
        """Every status change of the job: from, to, when, by whom, why."""
        job = self.get_object()
        return _history(self, StatusChange.objects.filter(object_id=job.pk, kind=StatusChange.Kind.JOB))

    @_verb_schema("Start a job submitted with start=false (PREP)")
    @action(detail=True, methods=["post"])
    def start(self, request: Request, pk: str) -> Response:
        """Queue the start."""
        return accepted(CoordinatorJobSerializer, services.start_job(pk, actor=request.user), request)

    @_verb_schema("Suspend a job (no new actions, running ones go on)")
    @action(detail=True, methods=["post"])
    def suspend(self, request: Request, pk: str) -> Response:
        """Queue the suspension."""
        return accepted(CoordinatorJobSerializer, services.control(pk, "suspend", actor=request.user), request)

    @_verb_schema("Resume a suspended job (missed actions are created)")
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: str) -> Response:
        """Queue the resumption."""
        return accepted(CoordinatorJobSerializer, services.control(pk, "resume", actor=request.user), request)

    @extend_schema(summary="Kill a job and its unfinished actions, or only the live actions a scope names",
                   description="No body: 202 with the job, queued to be KILLED. `{\"type\": \"action\"|\"date\", \"scope\": ...}`: "
                   "202 with the WAITING, READY, SUBMITTED, RUNNING or SUSPENDED actions of the scope, queued to be "
                   "KILLED (their runs too); the job goes on. A finished job, or no live action in the scope: 409.",
                   request=KillSerializer, responses={202: RerunResultSerializer, **VERB_ERRORS})
    @action(detail=True, methods=["post"])
    def kill(self, request: Request, pk: str) -> Response:
        """Queue the kill of the job (202 with it), or of the live actions a scope names (202 with them)."""
        data = _valid(KillSerializer, request)
        if "scope" not in data:
            return accepted(CoordinatorJobSerializer, services.control(pk, "kill", actor=request.user), request)
        actions = services.kill_actions(pk, actor=request.user, kill_type=data.get("type", "action"), scope=data["scope"])
        body = {"actions": CoordinatorActionSerializer(actions, many=True, context=self.get_serializer_context()).data}
        return Response(body, status=status.HTTP_202_ACCEPTED)

    @_verb_schema("Change end time, concurrency or pause time", request=ChangeSerializer)
    @action(detail=True, methods=["post"])
    def change(self, request: Request, pk: str) -> Response:
        """Queue the change (Oozie's rules: no end before the last action, no change of a KILLED job ...)."""
        data = _valid(ChangeSerializer, request)
        return accepted(CoordinatorJobSerializer, services.change_job(pk, data["value"], actor=request.user), request)

    @extend_schema(summary="Run actions again, by number or nominal-time range", request=RerunSerializer,
                   responses={202: RerunResultSerializer, **VERB_ERRORS})
    @action(detail=True, methods=["post"])
    def rerun(self, request: Request, pk: str) -> Response:
        """Queue the rerun of the chosen actions (DG_CoordinatorRerun)."""
        data = _valid(RerunSerializer, request)
        actions = services.rerun_job(
            pk, actor=request.user, rerun_type=data["type"], scope=data["scope"],
            refresh=data["refresh"], nocleanup=data["nocleanup"], failed=data["failed"],
        )
        body = {"actions": CoordinatorActionSerializer(actions, many=True, context=self.get_serializer_context()).data}
        return Response(body, status=status.HTTP_202_ACCEPTED)

    @extend_schema(summary="Ignore FAILED, KILLED or TIMEDOUT actions (by number or nominal-time range), or a FAILED or KILLED job",
                   request=IgnoreSerializer, responses={202: RerunResultSerializer, **VERB_ERRORS})
    @action(detail=True, methods=["post"])
    def ignore(self, request: Request, pk: str) -> Response:
        """Queue IGNORED for the named actions (202 with them), or for the job when no scope is given (202 with the job)."""
        data = _valid(IgnoreSerializer, request)
        if not data.get("scope", "").strip():
            return accepted(CoordinatorJobSerializer, services.ignore_job(pk, actor=request.user), request)
        actions = services.ignore_actions(pk, actor=request.user, ignore_type=data["type"], scope=data["scope"])
        body = {"actions": CoordinatorActionSerializer(actions, many=True, context=self.get_serializer_context()).data}
        return Response(body, status=status.HTTP_202_ACCEPTED)

    @extend_schema(summary="Update the definition (read again from the app path) and properties; dryrun shows the diff",
                   request=UpdateSerializer, responses={200: UpdateResultSerializer, 202: UpdateResultSerializer, **VERB_ERRORS})
    @action(detail=True, methods=["post"], url_path="update", url_name="update")
    def update_definition(self, request: Request, pk: str) -> Response:
        """202 with the diff when queued, 200 with it for a dry run; a definition that does not validate changes nothing."""
        data = _valid(UpdateSerializer, request)
        # An ACL member may update another's job: the diff shows both configurations, secrets masked for them.
        owner_id, before = CoordinatorJob.objects.filter(pk=pk).values_list("owner_id", "configuration").first() or (None, {})
        plan = services.update_job(pk, actor=request.user, configuration=data.get("configuration"), dryrun=data["dryrun"])
        diff = masker_for(request.user, owner_id, before, data.get("configuration") or {}).text(plan.diff)
        body = {"diff": diff, "dryrun": data["dryrun"], "queued": plan.queued}
        return Response(body, status=status.HTTP_202_ACCEPTED if plan.queued else status.HTTP_200_OK)


@extend_schema_view(
    list=extend_schema(summary="List coordinator actions (by job, then number)", responses={200: CoordinatorActionSerializer(many=True), 400: ERROR_BODY}),
    retrieve=extend_schema(summary="One coordinator action (`<job id>@<number>`) with its workflow runs", responses={200: CoordinatorActionDetailSerializer, 400: ERROR_BODY, 404: ERROR_BODY}),
)
class CoordinatorActionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, DomainViewSet):
    """Coordinator actions of the jobs the caller may read."""

    serializer_class = CoordinatorActionSerializer
    filtersets = {"list": AllCoordinatorActionFilterSet}

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        """The detail adds the action's runs (one workflow job per launch)."""
        return CoordinatorActionDetailSerializer if self.action == "retrieve" else CoordinatorActionSerializer

    def get_queryset(self) -> QuerySet[CoordinatorAction]:
        """Actions of readable jobs, ordered by job and number (the unique index), with their job's owner (secrets)."""
        queryset = CoordinatorAction.objects.annotate(job_owner_id=F("job__owner_id"))
        queryset = readable_jobs(queryset, self.request.user, prefix="job__")
        return queryset.order_by("job_id", "number")

    @extend_schema(summary="The action's status changes, oldest first, paginated",
                   responses={200: StatusChangeSerializer(many=True), **ERRORS})
    @action(detail=True, methods=["get"])
    def history(self, request: Request, pk: str) -> Response:
        """Every status change of the action (reruns included): from, to, when, by whom, why."""
        found = self.get_object()
        return _history(self, StatusChange.objects.filter(object_id=found.pk, kind=StatusChange.Kind.ACTION))

    @extend_schema(summary="The tries of every run of the action, newest first, paginated: how each ended, its "
                   "traceback and log", responses={200: TaskTrySerializer(many=True), **ERRORS})
    @action(detail=True, methods=["get"])
    def tries(self, request: Request, pk: str) -> Response:
        """Every try of every node of every run (reruns, retries and relaunches each add one)."""
        found = self.get_object()
        job = found.job
        return tries_page(self, TaskTry.objects.filter(action_id=found.pk),
                          masker_for(request.user, job.owner_id, job.configuration, found.run_conf or {}))


def _history(view: DomainViewSet, changes: QuerySet[StatusChange]) -> Response:
    """A page of status changes, oldest first (the (object id, at) index)."""
    page = view.paginate_queryset(changes.order_by("at", "id"))
    return view.get_paginated_response(StatusChangeSerializer(page, many=True, context=view.get_serializer_context()).data)
