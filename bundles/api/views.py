"""Bundle API: submit, dry-run, list, read (with its coordinators' progress), and the verbs start/suspend/resume/kill/change/rerun.

Views parse input and call the domain actions in `bundles.services` (the same ones the CLI and
the Oozie API call); those check permissions (owner, ACL, admins) and refuse illegal transitions.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, QuerySet
from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from bundles import services
from bundles.api.filters import BundleJobFilterSet
from bundles.api.serializers import (
    BundleChangeSerializer,
    BundleDryRunResultSerializer,
    BundleDryRunSerializer,
    BundleJobDetailSerializer,
    BundleJobSerializer,
    BundleRerunResultSerializer,
    BundleRerunSerializer,
    BundleSubmissionSerializer,
)
from bundles.models import BundleAction, BundleJob
from coordinators.api.serializers import CoordinatorActionSerializer
from coordinators.choices import IllegalTransition
from kernel.api import ERROR_BODY, DomainViewSet, accepted
from kernel.permissions import readable_jobs, submitter_properties
from oozie.properties import BUNDLE_APP_PATH, BUNDLE_EXTERNAL_ID
from operations.api.bulk import bulk_schema, start_from_request

ERRORS = {400: ERROR_BODY, 403: ERROR_BODY, 404: ERROR_BODY}
VERB_ERRORS = {**ERRORS, 409: ERROR_BODY}


def _valid(serializer_class: type[BaseSerializer[Any]], request: Request) -> dict[str, Any]:
    incoming = serializer_class(data=request.data)
    incoming.is_valid(raise_exception=True)
    return dict(incoming.validated_data)


def _verb_schema(summary: str, request: Any = None) -> Any:
    """A verb's schema; one that reads a body answers 415 to a media type no parser reads."""
    unsupported = {415: ERROR_BODY} if request is not None else {}
    return extend_schema(summary=summary, request=request, responses={202: BundleJobSerializer, **VERB_ERRORS, **unsupported})


def with_coordinators(queryset: QuerySet[BundleJob]) -> QuerySet[BundleJob]:
    """Bundles with their owner and coordinators (by name) read up front: a detail costs the same queries for 1 or 100."""
    actions = Prefetch("actions", queryset=BundleAction.objects.order_by("coord_name"))
    return queryset.select_related("owner").defer("applications").prefetch_related(actions)


@extend_schema_view(
    list=extend_schema(summary="List bundle jobs (newest first)",
                       responses={200: BundleJobSerializer(many=True), 400: ERROR_BODY}),
    retrieve=extend_schema(summary="A bundle job with its definition, properties and coordinators (with progress)",
                           responses={200: BundleJobDetailSerializer, 400: ERROR_BODY, 404: ERROR_BODY}),
)
class BundleJobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, DomainViewSet):
    """Bundle jobs: everybody authenticated reads (unless COORD_RESTRICT_READS); owner, ACL and admins act."""

    serializer_class = BundleJobSerializer
    filtersets = {"list": BundleJobFilterSet}
    conflict_errors = (IllegalTransition,)

    def get_queryset(self) -> QuerySet[BundleJob]:
        """Readable bundles; lists newest first without the large columns, details with their coordinators."""
        queryset = readable_jobs(BundleJob.objects.all(), self.request.user)
        if self.action == "bulk":
            return queryset
        if self.action == "list":
            return (
                queryset.select_related("owner").defer("definition", "configuration", "applications")
                .order_by("-created_at", "-id")
            )
        return with_coordinators(queryset)

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        """Details carry the definition, the configuration and the coordinators."""
        return BundleJobDetailSerializer if self.action == "retrieve" else BundleJobSerializer

    @extend_schema(
        summary="Submit a bundle job", request=BundleSubmissionSerializer,
        description="Every coordinator is validated now; a refusal stores nothing. Submitting an `external_id` "
        "again answers 200 with the bundle stored the first time.",
        responses={201: BundleJobDetailSerializer, 200: BundleJobDetailSerializer, **ERRORS},
    )
    def create(self, request: Request) -> Response:
        """Validate and store a bundle (and start it unless start=false); nothing is stored on refusal."""
        data = _valid(BundleSubmissionSerializer, request)
        properties = submitter_properties(data["merged_properties"], request.user)
        external_id = (data.get("external_id") or properties.get(BUNDLE_EXTERNAL_ID, "")).strip()
        stored = BundleJob.objects.filter(owner_id=request.user.pk, external_id=external_id).first() if external_id else None
        answer: int = status.HTTP_200_OK  # the same submission again (a retry): the bundle stored the first time
        if stored is None:
            if "definition" in data:
                definition, app_path = data["definition"], properties.get(BUNDLE_APP_PATH, "").strip()
            else:
                definition, app_path = services.read_bundle(properties)
            stored = services.submit_bundle(
                definition, properties, owner=request.user, app_path=app_path, start=data["start"],
                external_id=external_id,
            )
            answer = status.HTTP_201_CREATED
        bundle = with_coordinators(BundleJob.objects.all()).get(pk=stored.pk)
        return Response(BundleJobDetailSerializer(bundle, context={"request": request}).data, status=answer)

    @bulk_schema("bundle")
    @action(detail=False, methods=["post"])
    def bulk(self, request: Request) -> Response:
        """202 with the operation carrying the verb out on every selected bundle (Oozie's `jobs -jobtype bundle -kill`)."""
        return start_from_request(self, request, "bundle")

    @extend_schema(summary="What a bundle would start: each coordinator's configuration and first actions; nothing stored",
                   request=BundleDryRunSerializer, responses={200: BundleDryRunResultSerializer, **ERRORS})
    @action(detail=False, methods=["post"])
    def dryrun(self, request: Request) -> Response:
        """The bundle as it would start (the definition inline or read from app_path)."""
        data = _valid(BundleDryRunSerializer, request)
        properties = submitter_properties(data["merged_properties"], request.user)
        result = services.dryrun_bundle(
            data.get("definition"), properties, owner=request.user, now=timezone.now(), max_actions=data["max_actions"],
        )
        return Response(result)

    @_verb_schema("Start a PREP bundle now, whatever its kick-off time")
    @action(detail=True, methods=["post"])
    def start(self, request: Request, pk: str) -> Response:
        """Queue the start."""
        return accepted(BundleJobSerializer, services.start_bundle(pk, actor=request.user), request)

    @_verb_schema("Suspend a bundle and its coordinators")
    @action(detail=True, methods=["post"])
    def suspend(self, request: Request, pk: str) -> Response:
        """Queue the suspension."""
        return accepted(BundleJobSerializer, services.control_bundle(pk, "suspend", actor=request.user), request)

    @_verb_schema("Resume a suspended bundle and its suspended coordinators")
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: str) -> Response:
        """Queue the resumption."""
        return accepted(BundleJobSerializer, services.control_bundle(pk, "resume", actor=request.user), request)

    @_verb_schema("Kill a bundle and every coordinator it started")
    @action(detail=True, methods=["post"])
    def kill(self, request: Request, pk: str) -> Response:
        """Queue the kill."""
        return accepted(BundleJobSerializer, services.control_bundle(pk, "kill", actor=request.user), request)

    @_verb_schema("Change the bundle's end time and/or pause time (and its coordinators')", request=BundleChangeSerializer)
    @action(detail=True, methods=["post"])
    def change(self, request: Request, pk: str) -> Response:
        """Queue the change (no end before the kick-off time, no pause time in the past, no change of a KILLED bundle)."""
        data = _valid(BundleChangeSerializer, request)
        return accepted(BundleJobSerializer, services.change_bundle(pk, data["value"], actor=request.user), request)

    @extend_schema(summary="Run finished actions of named coordinators again, in nominal-time ranges",
                   request=BundleRerunSerializer, responses={202: BundleRerunResultSerializer, **VERB_ERRORS})
    @action(detail=True, methods=["post"])
    def rerun(self, request: Request, pk: str) -> Response:
        """Queue the rerun; answers the actions that will run again, by coordinator."""
        data = _valid(BundleRerunSerializer, request)
        planned = services.rerun_bundle(
            pk, actor=request.user, coordinators=data.get("coordinators") or None, dates=data.get("dates") or None,
            refresh=data["refresh"], nocleanup=data["nocleanup"],
        )
        context = self.get_serializer_context()
        body = {"actions": {name: CoordinatorActionSerializer(actions, many=True, context=context).data
                            for name, actions in planned.items()}}
        return Response(body, status=status.HTTP_202_ACCEPTED)
