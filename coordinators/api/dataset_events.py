"""Dataset events: producers announce available instances; waiting actions wake at once."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from coordinators.api.dataset_event_serializers import (
    AvailableInstanceSerializer,
    DatasetEventResultSerializer,
    DatasetEventSerializer,
)
from coordinators.services import announce_dataset
from datasets.models import AvailableInstance
from kernel.permissions import JobPermissionDenied


class DatasetEventViewSet(mixins.CreateModelMixin, mixins.ListModelMixin, viewsets.GenericViewSet[AvailableInstance]):
    """Announce that a dataset instance is available; list known instances (newest first)."""

    serializer_class = AvailableInstanceSerializer

    def get_queryset(self) -> QuerySet[AvailableInstance]:
        """Known instances, newest first, optionally those whose URI starts with `uri_prefix`."""
        queryset = AvailableInstance.objects.select_related("announced_by").order_by("-available_at", "-id")
        prefix = self.request.query_params.get("uri_prefix")
        if prefix:
            queryset = queryset.filter(uri__startswith=prefix)
        return queryset

    @extend_schema(parameters=[OpenApiParameter("uri_prefix", str, description="only URIs starting with this")])
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Dataset instances known to be available (checked on storage or announced)."""
        return super().list(request, *args, **kwargs)

    @extend_schema(request=DatasetEventSerializer, responses={201: DatasetEventResultSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Announce an available instance (admins and holders of datasets.add_availableinstance)."""
        incoming = DatasetEventSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        try:
            result = announce_dataset(incoming.validated_data["uri"], actor=request.user)
        except JobPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from exc
        except ValueError as exc:
            raise ValidationError({"uri": [str(exc)]}) from exc
        return Response(DatasetEventResultSerializer(result).data, status=status.HTTP_201_CREATED)
