"""Batch API: submit, list (jobs counted per page in one query), read, reports, and the admin verbs on batches, jobs and collections.

Views parse input and call the domain actions in `batches.services` (the same ones the CLI and
the admin call); those check rights (owner, ACL, job admins) and refuse illegal transitions.
Reports are read as JSON, or as the stored text and CSV with `?format=text|csv` (or the
matching Accept header).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Prefetch, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, renderers, status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from batches import services
from batches.api.filters import BatchFilterSet, BatchJobFilterSet
from batches.api.serializers import (
    BatchDetailSerializer,
    BatchJobDetailSerializer,
    BatchJobSerializer,
    BatchSerializer,
    BatchSubmissionSerializer,
    CollectionReleaseSerializer,
    CollectionSerializer,
    ConfirmSerializer,
    HoldSerializer,
    PrioritySerializer,
    ProfileSerializer,
    ReportSerializer,
)
from batches.models import Batch, BatchJob, BatchReport, Collection, Profile
from kernel.api import ERROR_BODY, DomainViewSet
from kernel.permissions import readable_jobs
from kernel.statemachine import IllegalTransition

ERRORS = {400: ERROR_BODY, 403: ERROR_BODY, 404: ERROR_BODY}
VERB_ERRORS = {**ERRORS, 409: ERROR_BODY}
# Verbs that read a body: one in a media type no parser reads (not JSON, form or multipart) is a 415.
UNSUPPORTED = {415: ERROR_BODY}


def _valid(serializer_class: type[BaseSerializer[Any]], request: Request) -> dict[str, Any]:
    incoming = serializer_class(data=request.data)
    incoming.is_valid(raise_exception=True)
    return dict(incoming.validated_data)


class ReportTextRenderer(renderers.BaseRenderer):
    """A report's stored text (errors: their message, one line each)."""

    media_type = "text/plain"
    format = "text"  # noqa: A003 - DRF's name
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        """Text as stored; an error body as `field: message` lines."""
        if isinstance(data, str):
            return data.encode()
        if isinstance(data, dict):
            return "\n".join(f"{name}: {value}" for name, value in data.items()).encode() + b"\n"
        return str(data).encode()


class ReportCSVRenderer(ReportTextRenderer):
    """A report's stored CSV."""

    media_type = "text/csv"
    format = "csv"  # noqa: A003 - DRF's name


REPORT_FORMAT = OpenApiParameter(
    "format", OpenApiTypes.STR, OpenApiParameter.QUERY, enum=["json", "text", "csv"],
    description="json (default): counts and jobs by outcome; text: the readable report as e-mailed; csv: one line per job",
)
REPORT_ERRORS: dict[Any, Any] = {(code, "application/json"): ERROR_BODY for code in (403, 404)}
REPORT_ERRORS.update({
    (code, media): OpenApiResponse(OpenApiTypes.STR, description="the error as `detail: message`")
    for code in (403, 404) for media in ("text/plain", "text/csv")
})


def counted(batches: Iterable[Batch]) -> dict[int, dict[str, int]]:
    """Jobs by status for every batch given, in one grouped query."""
    return services.job_counts(batch.pk for batch in batches)


@extend_schema_view(
    list=extend_schema(summary="List batches (newest first), each with its jobs counted by status",
                       responses={200: BatchSerializer(many=True), 400: ERROR_BODY}),
    retrieve=extend_schema(summary="A batch: its submission, status, operation, job counts and reports",
                           responses={200: BatchDetailSerializer, 400: ERROR_BODY, 403: ERROR_BODY, 404: ERROR_BODY}),
)
class BatchViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, DomainViewSet):
    """Batches: everybody authenticated reads (unless COORD_RESTRICT_READS); owner, ACL and job admins act."""

    serializer_class = BatchSerializer
    filtersets = {"list": BatchFilterSet}
    conflict_errors = (IllegalTransition,)

    def get_queryset(self) -> QuerySet[Batch]:
        """Readable batches with their profile, collection and owner; lists newest first without the manifest."""
        queryset = readable_jobs(Batch.objects.select_related("profile", "collection", "owner"), self.request.user)
        if self.action == "list":
            return queryset.defer("manifest").order_by("-created_at", "-id")
        return queryset.prefetch_related(Prefetch("reports", queryset=BatchReport.objects.order_by("number")))

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        """Details carry the ERC fields, the manifest, the operation and the reports."""
        return BatchDetailSerializer if self.action == "retrieve" else BatchSerializer

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """One page of batches; their jobs counted for the whole page in one query (no N+1)."""
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        rows = list(page or [])
        context = {**self.get_serializer_context(), "counts": counted(rows)}
        return self.get_paginated_response(BatchSerializer(rows, many=True, context=context).data)

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """The batch with its counts and reports."""
        return self._answer(self.get_object(), status.HTTP_200_OK, detail=True)

    def _answer(self, batch: Batch, code: int, *, detail: bool = False) -> Response:
        serializer = BatchDetailSerializer if detail else BatchSerializer
        context = {**self.get_serializer_context(), "counts": counted([batch])}
        return Response(serializer(batch, context=context).data, status=code)

    @extend_schema(
        summary="Submit a batch", request=BatchSubmissionSerializer,
        description="The payload URL (and, for manifests, every URL listed) must lie under BATCH_PAYLOAD_ROOTS; a "
        "manifest is read and checked now. A refusal stores nothing. Submitting an `external_id` again answers "
        "200 with the batch stored the first time.",
        responses={201: BatchDetailSerializer, 200: BatchDetailSerializer, **ERRORS, **UNSUPPORTED},
    )
    def create(self, request: Request) -> Response:
        """Check and store the batch PENDING, its start queued; nothing is stored on refusal."""
        data = _valid(BatchSubmissionSerializer, request)
        batch, created = services.submit_batch(owner=request.user, trusted=False, **data)
        stored = self.get_queryset().get(pk=batch.pk)
        return self._answer(stored, status.HTTP_201_CREATED if created else status.HTTP_200_OK, detail=True)

    def _verb(self, request: Request, verb: str, confirmed: bool = False) -> Response:
        batch = self.get_object()  # 404 for ids that name no batch (or one the caller may not read)
        services.batch_verb(batch.pk, verb, actor=request.user, confirmed=confirmed)
        return self._answer(self.get_queryset().get(pk=batch.pk), status.HTTP_202_ACCEPTED)

    @extend_schema(summary="Release a held batch (its collection must no longer be held); it starts", request=None,
                   responses={202: BatchSerializer, **VERB_ERRORS})
    @action(detail=True, methods=["post"])
    def release(self, request: Request, pk: str) -> Response:
        """Queue the release."""
        return self._verb(request, "release")

    @extend_schema(summary="Report a failed batch again (after its failed jobs were resumed or deleted)", request=None,
                   responses={202: BatchSerializer, **VERB_ERRORS})
    @action(detail=True, methods=["post"], url_path="update-report", url_name="update-report")
    def update_report(self, request: Request, pk: str) -> Response:
        """Queue the update-reporting."""
        return self._verb(request, "update-report")

    @extend_schema(
        summary="Delete a failed or held batch and its jobs",
        description='Its depositor is never told: without `{"confirm": true}` the answer is 409 saying so.',
        request=ConfirmSerializer, responses={202: BatchSerializer, **VERB_ERRORS, **UNSUPPORTED},
    )
    @action(detail=True, methods=["post"], url_path="delete", url_name="delete")
    def delete_batch(self, request: Request, pk: str) -> Response:
        """Queue the deletion (confirmed); not named `delete`, which DRF would also route HTTP DELETE to."""
        data = _valid(ConfirmSerializer, request)
        return self._verb(request, "delete", confirmed=data["confirm"])

    @extend_schema(
        summary="One stored report of the batch: JSON, or its text or CSV (`?format=`)", parameters=[REPORT_FORMAT],
        responses={
            (200, "application/json"): ReportSerializer,
            (200, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description="the readable report"),
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="one line per job listed"),
            **REPORT_ERRORS,
        },
    )
    @action(detail=True, methods=["get"], url_path=r"reports/(?P<number>[^/]+)", url_name="report",
            renderer_classes=[renderers.JSONRenderer, ReportTextRenderer, ReportCSVRenderer])
    def report(self, request: Request, pk: str, number: str) -> Response:
        """The report numbered `number` (1 is the first)."""
        batch = self.get_object()
        found = None
        if number.isdecimal() and len(number) <= 9:
            found = BatchReport.objects.filter(batch=batch, number=int(number)).first()
        if found is None:
            raise NotFound(f"batch {batch.pk} has no report {number[:20]!r}")
        chosen = getattr(request.accepted_renderer, "format", "json")
        if chosen == "text":
            return Response(found.text)
        if chosen == "csv":
            return Response(found.csv)
        return Response(ReportSerializer(found, context=self.get_serializer_context()).data)


@extend_schema_view(
    list=extend_schema(summary="List batch jobs (priority, then id: the order they are taken in)",
                       responses={200: BatchJobSerializer(many=True), 400: ERROR_BODY}),
    retrieve=extend_schema(summary="A job: files, identifiers, error, stage history, what it waits for",
                           responses={200: BatchJobDetailSerializer, 400: ERROR_BODY, 403: ERROR_BODY, 404: ERROR_BODY}),
)
class BatchJobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, DomainViewSet):
    """Jobs of the batches the caller may read; their batch's owner, ACL and job admins act on them."""

    serializer_class = BatchJobSerializer
    filtersets = {"list": BatchJobFilterSet}
    conflict_errors = (IllegalTransition,)

    def get_queryset(self) -> QuerySet[BatchJob]:
        """Jobs of readable batches; lists leave out files and history."""
        queryset = readable_jobs(BatchJob.objects.all(), self.request.user, prefix="batch__")
        if self.action == "list":
            return queryset.defer("files", "history").order_by("priority", "id")
        return queryset

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        """Details carry files and history."""
        return BatchJobDetailSerializer if self.action == "retrieve" else BatchJobSerializer

    def _verb(self, request: Request, verb: str, **options: Any) -> Response:
        job = self.get_object()  # 404 for ids that name no job (or one the caller may not read)
        services.job_verb(job.pk, verb, actor=request.user, **options)
        job = self.get_queryset().get(pk=job.pk)
        return Response(BatchJobSerializer(job, context=self.get_serializer_context()).data,
                        status=status.HTTP_202_ACCEPTED)

    @extend_schema(summary="Release a held job", request=None, responses={202: BatchJobSerializer, **VERB_ERRORS})
    @action(detail=True, methods=["post"])
    def release(self, request: Request, pk: str) -> Response:
        """Queue the release."""
        return self._verb(request, "release")

    @extend_schema(summary="Resume a failed job at the stage after its last success", request=None,
                   responses={202: BatchJobSerializer, **VERB_ERRORS})
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: str) -> Response:
        """Queue the resume."""
        return self._verb(request, "resume")

    @extend_schema(summary="Send a failed job back to pending (its downloads forgotten)", request=None,
                   responses={202: BatchJobSerializer, **VERB_ERRORS})
    @action(detail=True, methods=["post"])
    def requeue(self, request: Request, pk: str) -> Response:
        """Queue the requeue."""
        return self._verb(request, "requeue")

    @extend_schema(
        summary="Delete a failed or held job",
        description='While its batch is not complete its depositor is never told: without `{"confirm": true}` '
        "the answer is 409 saying so.",
        request=ConfirmSerializer, responses={202: BatchJobSerializer, **VERB_ERRORS, **UNSUPPORTED},
    )
    @action(detail=True, methods=["post"], url_path="delete", url_name="delete")
    def delete_job(self, request: Request, pk: str) -> Response:
        """Queue the deletion (not named `delete`: see BatchViewSet.delete_batch)."""
        data = _valid(ConfirmSerializer, request)
        return self._verb(request, "delete", confirmed=data["confirm"])

    @extend_schema(summary="Change a job's priority (0 runs first, 99 last)", request=PrioritySerializer,
                   responses={202: BatchJobSerializer, **VERB_ERRORS, **UNSUPPORTED})
    @action(detail=True, methods=["post"])
    def priority(self, request: Request, pk: str) -> Response:
        """Queue the change."""
        data = _valid(PrioritySerializer, request)
        return self._verb(request, "priority", priority=data["priority"])


@extend_schema_view(
    list=extend_schema(summary="List collections and their holds", responses={200: CollectionSerializer(many=True), 400: ERROR_BODY}),
    retrieve=extend_schema(summary="A collection and its hold", responses={200: CollectionSerializer, 400: ERROR_BODY, 404: ERROR_BODY}),
)
class CollectionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, DomainViewSet):
    """Collections: everybody authenticated reads; job admins hold and release them."""

    serializer_class = CollectionSerializer
    lookup_field = "name"

    def get_queryset(self) -> QuerySet[Collection]:
        """By name."""
        return Collection.objects.select_related("held_by").order_by("name")

    @extend_schema(summary="Hold a collection (job admins): its pending batches and jobs wait, held",
                   request=HoldSerializer, responses={200: CollectionSerializer, **ERRORS, **UNSUPPORTED})
    @action(detail=True, methods=["post"])
    def hold(self, request: Request, name: str) -> Response:
        """Held at once."""
        data = _valid(HoldSerializer, request)
        collection = services.hold_collection(name, actor=request.user, reason=data["reason"])
        return Response(CollectionSerializer(self.get_queryset().get(pk=collection.pk)).data)

    @extend_schema(summary="Release a collection (job admins) and queue the release of its held batches and jobs",
                   request=None, responses={200: CollectionReleaseSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def release(self, request: Request, name: str) -> Response:
        """No longer held at once; its held batches and jobs are queued for release."""
        collection, batches, jobs = services.release_collection(name, actor=request.user)
        released = self.get_queryset().get(pk=collection.pk)
        released.released_batches, released.released_jobs = batches, jobs  # type: ignore[attr-defined]
        return Response(CollectionReleaseSerializer(released).data)


@extend_schema_view(
    list=extend_schema(summary="List ingest profiles", responses={200: ProfileSerializer(many=True), 400: ERROR_BODY}),
    retrieve=extend_schema(summary="An ingest profile", responses={200: ProfileSerializer, 400: ERROR_BODY, 404: ERROR_BODY}),
)
class ProfileViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, DomainViewSet):
    """Ingest profiles (read-only here: job admins edit them in the admin site)."""

    serializer_class = ProfileSerializer
    lookup_field = "name"

    def get_queryset(self) -> QuerySet[Profile]:
        """By name."""
        return Profile.objects.select_related("collection").order_by("name")
