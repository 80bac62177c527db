"""Serializers of the dataset-events API."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from datasets.models import AvailableInstance


class DatasetEventSerializer(serializers.Serializer[dict[str, Any]]):
    """A producer's announcement: this dataset instance (URI) is complete."""

    uri = serializers.CharField(max_length=4096, help_text="the instance's URI, as the dataset's uri-template writes it")


class DatasetEventResultSerializer(serializers.Serializer[dict[str, Any]]):
    """What an announcement did."""

    uri = serializers.CharField()
    new = serializers.BooleanField(help_text="false when the instance was already known to be available")
    actions_woken = serializers.IntegerField(help_text="waiting actions whose input check was queued at once")


class AvailableInstanceSerializer(serializers.ModelSerializer[AvailableInstance]):
    """A dataset instance known to be available."""

    announced_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = AvailableInstance
        fields = ["id", "uri", "done_flag", "available_at", "source", "announced_by"]
