"""Bulk verbs in the native API: `POST /coordinator-jobs/bulk/` and `/bundle-jobs/bulk/`.

The selection is the list's: the same query filters (`?status=RUNNING&user=ann&name=etl`),
narrowed to `ids` when the body names some. The answer comes at once (202) with the operation
that carries the verb out, one job per selected job; `/operations/{id}/` shows its progress
and, once done, which jobs failed and why (rights, status). Nothing is started when the
selection is empty, too large, or names unknown ids.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from kernel.api import ERROR_BODY, Conflict
from operations.api.serializers import OperationSerializer
from operations.bulk import VERBS, start_bulk
from operations.services import OperationConflict

DEFAULT_MAX_JOBS = 100_000
SHOWN_UNKNOWN = 10


def max_jobs() -> int:
    """BULK_MAX_JOBS: the most jobs one bulk verb may select."""
    return int(settings.BULK_MAX_JOBS)


class BulkSerializer(serializers.Serializer[Any]):
    """What to do, and optionally to which jobs among those the filters select."""

    action = serializers.ChoiceField(choices=VERBS, help_text="kill, suspend or resume")
    ids = serializers.ListField(
        child=serializers.CharField(max_length=80), required=False, allow_empty=False, max_length=DEFAULT_MAX_JOBS,
        help_text="only these jobs (each must also match the query filters, if any)",
    )


def bulk_schema(kind: str) -> Any:
    """The OpenAPI description of a kind's bulk endpoint."""
    return extend_schema(
        summary=f"Kill, suspend or resume every {kind} job the query filters (and `ids`) select, as one operation",
        description=(
            "Answers at once with the operation; follow `/api/v1/operations/{id}/` for its progress. "
            "Jobs you may not act on, or whose status refuses the verb, are reported there as failed."
        ),
        request=BulkSerializer,
        responses={202: OperationSerializer, 400: ERROR_BODY, 409: ERROR_BODY},
    )


def start_from_request(view: Any, request: Request, kind: str) -> Response:
    """Select with the list's filters (and `ids`), start the bulk operation, answer 202 with it."""
    incoming = BulkSerializer(data=request.data)
    incoming.is_valid(raise_exception=True)
    verb: str = incoming.validated_data["action"]
    ids: list[str] | None = incoming.validated_data.get("ids")
    filterset = view.filtersets["list"]
    named = [name for name in filterset.filters if any(v != "" for v in request.query_params.getlist(name))]
    if ids is None and not named:
        raise ValidationError({"detail": (
            f"name the {kind} jobs: query filters ({', '.join(filterset.filters)}) or `ids`; "
            "a bulk verb never selects every job by default"
        )})
    queryset: QuerySet[Any] = filterset.filter_queryset(request, view.get_queryset())
    if ids is not None:
        wanted = list(dict.fromkeys(ids))
        queryset = queryset.filter(pk__in=wanted)
    limit = max_jobs()
    selected = list(queryset.order_by("pk").values_list("pk", flat=True)[:limit + 1])
    if ids is not None:
        unknown = sorted(set(wanted) - set(selected))
        if unknown:
            shown = ", ".join(unknown[:SHOWN_UNKNOWN]) + (f" and {len(unknown) - SHOWN_UNKNOWN} more" if len(unknown) > SHOWN_UNKNOWN else "")
            raise ValidationError({"ids": f"no such {kind} job among those you can see and the filters select: {shown}"})
    if not selected:
        raise ValidationError({"detail": f"the filters select no {kind} job"})
    if len(selected) > limit:
        raise ValidationError({"detail": f"the filters select more than {limit} {kind} jobs (BULK_MAX_JOBS); narrow them"})
    users = request.query_params.getlist("user")
    owner = users[0] if len(users) == 1 and "," not in users[0] else None
    filter_text = ";".join(f"{name}={value}" for name in named for value in request.query_params.getlist(name))
    if ids is not None:
        filter_text = ";".join(filter(None, [filter_text, f"ids={len(selected)}"]))
    try:
        operation = start_bulk(kind, verb, selected, user=request.user, owner=owner, filter_text=filter_text)
    except OperationConflict as exc:
        raise Conflict(str(exc)) from exc
    body = OperationSerializer(operation, context={"request": request}).data
    location = reverse("operation-detail", kwargs={"pk": operation.pk})
    return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": location})
