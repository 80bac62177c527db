"""Operations in the native API: list, detail (progress and failures while it runs), cancel."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from kernel.api import ERROR_BODY, Conflict, DomainViewSet, Filter, FilterSet
from kernel.permissions import is_admin
from operations.api.serializers import OperationSerializer
from operations.choices import OperationStatus
from operations.models import Operation
from operations.services import cancel_operation


class OperationFilters(FilterSet):
    """`?status=RUNNING,FAILED&type=bulk-kill&target=...`."""

    filters: ClassVar[dict[str, Filter]] = {
        "status": Filter("status", choices=tuple(OperationStatus.values), multiple=True, upper=True,
                         description="comma-separated statuses"),
        "type": Filter("type", description="operation type, e.g. bulk-kill"),
        "target": Filter("target", description="the target, e.g. coordinators:ann"),
    }


@extend_schema_view(
    list=extend_schema(summary="Operations you started (all of them for job admins), newest first",
                       responses={200: OperationSerializer(many=True), 400: ERROR_BODY}),
    retrieve=extend_schema(summary="One operation: its progress while it runs, its result and failures once done",
                           responses={200: OperationSerializer, 404: ERROR_BODY}),
)
class OperationViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, DomainViewSet):
    """Resilient operations (bulk verbs and others): read them, cancel a running one."""

    serializer_class = OperationSerializer
    filtersets: ClassVar[dict[str, type[FilterSet]]] = {"list": OperationFilters}
    conflict_errors = (ValueError,)

    def get_queryset(self) -> QuerySet[Operation]:
        """The caller's operations; job admins see every one."""
        queryset = Operation.objects.select_related("started_by").order_by("-created_at", "-id")
        user = self.request.user
        return queryset if is_admin(user) else queryset.filter(started_by_id=user.pk)

    @extend_schema(summary="Cancel a running operation: unfinished jobs are cancelled and cleaned up",
                   request=None, responses={200: OperationSerializer, 404: ERROR_BODY, 409: ERROR_BODY})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: Any = None) -> Response:
        """409 when it already finished."""
        operation = self.get_object()
        try:
            cancelled = cancel_operation(operation.pk)
        except ValueError as exc:
            raise Conflict(str(exc)) from exc
        return Response(OperationSerializer(cancelled, context={"request": request}).data)
