"""Keyed-job API: queue a Celery task under a key; read its status, attempts and errors."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from xcommands.api.serializers import KeyedJobCreateSerializer, KeyedJobSerializer
from xcommands.keyed import KeyedJobXCommand, TaskNotAllowed, enqueue_job
from xcommands.models import Command


class KeyedJobViewSet(
    mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet[Command]
):
    """Keyed jobs: one at a time per key, in submission order, with retries and rollback.

    Users see their own jobs; staff see all.
    """

    serializer_class = KeyedJobSerializer

    def get_queryset(self) -> QuerySet[Command]:
        """Keyed jobs visible to the caller, newest first, optionally filtered."""
        queryset = Command.objects.filter(name=KeyedJobXCommand.command_name).order_by("-id")
        user = self.request.user
        if not user.is_staff:
            queryset = queryset.filter(owner_id=user.pk)
        key = self.request.query_params.get("key")
        if key:
            queryset = queryset.filter(key=key)
        wanted = self.request.query_params.get("status")
        if wanted:
            queryset = queryset.filter(status=wanted.upper())
        return queryset

    @extend_schema(
        parameters=[
            OpenApiParameter("key", str, description="only jobs of this key"),
            OpenApiParameter("status", str, description="only jobs in this status (PENDING, RUNNING, ...)"),
        ]
    )
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Keyed jobs of the caller (all jobs for staff)."""
        return super().list(request, *args, **kwargs)

    @extend_schema(request=KeyedJobCreateSerializer, responses={201: KeyedJobSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Queue a Celery task under a key."""
        incoming = KeyedJobCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        try:
            row = enqueue_job(
                data["key"],
                data["task_name"],
                args=data["args"],
                kwargs=data["kwargs"],
                max_retries=data["max_retries"],
                rollback_task=data["rollback_task"],
                transactional=data["transactional"],
                owner_id=request.user.pk,
            )
        except (TaskNotAllowed, ValueError) as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        return Response(KeyedJobSerializer(row).data, status=status.HTTP_201_CREATED)
