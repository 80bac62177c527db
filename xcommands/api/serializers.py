"""Serializers of the keyed-job API."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from xcommands.models import Command


class KeyedJobCreateSerializer(serializers.Serializer[dict[str, Any]]):
    """What a submitter sends to queue a Celery task under a key."""

    key = serializers.CharField(max_length=255)
    task_name = serializers.CharField(max_length=200)
    args = serializers.ListField(child=serializers.JSONField(), required=False, default=list)
    kwargs = serializers.DictField(child=serializers.JSONField(), required=False, default=dict)
    max_retries = serializers.IntegerField(min_value=0, max_value=100, default=3)
    rollback_task = serializers.CharField(max_length=200, required=False, allow_null=True, default=None)
    transactional = serializers.BooleanField(default=False)


class KeyedJobSerializer(serializers.ModelSerializer[Command]):
    """A keyed job's status, attempts and errors."""

    task_name = serializers.SerializerMethodField()
    args = serializers.SerializerMethodField()
    kwargs = serializers.SerializerMethodField()
    rollback_task = serializers.SerializerMethodField()

    class Meta:
        model = Command
        fields = [
            "id", "key", "seq", "task_name", "args", "kwargs", "rollback_task", "status",
            "attempts", "max_retries", "enqueued_at", "not_before", "started_at", "finished_at",
            "last_error", "history", "result",
        ]
        read_only_fields = fields

    def get_task_name(self, obj: Command) -> str:
        """The Celery task the job runs."""
        return str(obj.params.get("task_name", ""))

    def get_args(self, obj: Command) -> list[Any]:
        """Positional arguments of the task."""
        return list(obj.params.get("args", []))

    def get_kwargs(self, obj: Command) -> dict[str, Any]:
        """Keyword arguments of the task."""
        return dict(obj.params.get("kwargs", {}))

    def get_rollback_task(self, obj: Command) -> str | None:
        """The task run once if every attempt failed."""
        value = obj.params.get("rollback_task")
        return str(value) if value else None
