"""How operations look in the native API: what, on what, who, how far along, and what failed."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from operations.models import Operation
from operations.services import progress

MAX_FAILED_SHOWN = 100


class OperationSerializer(serializers.ModelSerializer[Operation]):
    """An operation with its jobs counted by status, how many are done, and the first failures."""

    started_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(slug_field="username", read_only=True)
    progress = serializers.SerializerMethodField()

    class Meta:
        model = Operation
        fields = ["id", "type", "target", "arg", "status", "started_by", "created_at", "finished_at", "progress", "result"]
        read_only_fields = fields

    def get_progress(self, operation: Operation) -> dict[str, Any]:
        """{"total", "done", "counts", "failed": [{"partition", "error"}], "skipped": [{"partition", "reason"}]} (first 100 of each)."""
        state = progress(operation)
        state["failed"] = state["failed"][:MAX_FAILED_SHOWN]
        state["skipped"] = state["skipped"][:MAX_FAILED_SHOWN]
        return state
