"""Query filters of the batch API: batches by status, profile, collection, owner, submitter and dates; jobs by status, priority, ids."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import BooleanField, ExpressionWrapper, QuerySet
from django.db.models.expressions import RawSQL
from rest_framework import exceptions

from batches.choices import PRIORITY_MAX, PRIORITY_MIN, BatchStatus, JobStatus
from batches.models import BatchJob
from kernel.api import Filter, FilterSet

ID_MAX = 2**63 - 1  # ids are 64-bit: a larger number names nothing (and would overflow the driver)


@dataclass(frozen=True)
class NumberFilter(Filter):
    """A whole-number parameter within [low, high]; anything else is a 400 naming it."""

    low: int = 0
    high: int = ID_MAX

    def parse(self, name: str, raw: str) -> Any:
        """The integer, checked against the bounds."""
        text = raw.strip()
        if not text.isascii() or not text.isdigit() or len(text) > 19 or not self.low <= int(text) <= self.high:
            raise exceptions.ValidationError({name: f"a whole number from {self.low} to {self.high}"})
        return int(text)


@dataclass(frozen=True)
class LocalIdFilter(Filter):
    """Jobs whose `local_ids` list contains the value (JSON containment; SQLite has none, so json_each there)."""

    def apply(self, queryset: QuerySet[Any], name: str, raw_values: list[str]) -> QuerySet[Any]:
        """Narrow to jobs listing this local id."""
        value = self.parse(name, raw_values[-1])
        if connection.features.supports_json_field_contains:
            return queryset.filter(local_ids__contains=[value])
        table = BatchJob._meta.db_table
        listed = RawSQL(f'EXISTS (SELECT 1 FROM json_each("{table}"."local_ids") WHERE value = %s)', [value])  # noqa: S608, S611 - our table name; the value is a parameter
        return queryset.filter(ExpressionWrapper(listed, output_field=BooleanField()))


class BatchFilterSet(FilterSet):
    """Batches by status, profile, collection, owner, submitter and submission time."""

    filters = {
        "status": Filter("status", choices=tuple(BatchStatus.values), multiple=True,
                         description="one or more statuses, comma-separated or repeated (failed,held)"),
        "profile": Filter("profile__name", description="the profile's name"),
        "collection": Filter("collection__name", description="the collection's name"),
        "user": Filter("owner__username", description="the owner's user name"),
        "submitter": Filter("submitter", description="the depositor named at submission"),
        "external_id": Filter("external_id", description="the submitter's external id (exact)"),
        "created_after": Filter("created_at", "gte", kind="datetime", description="submitted at or after"),
        "created_before": Filter("created_at", "lt", kind="datetime", description="submitted before"),
    }


class BatchJobFilterSet(FilterSet):
    """Jobs by status, priority, profile, collection, batch and identifiers."""

    filters = {
        "status": Filter("status", choices=tuple(JobStatus.values), multiple=True,
                         description="one or more statuses, comma-separated or repeated (failed,held)"),
        "priority": NumberFilter("priority", low=PRIORITY_MIN, high=PRIORITY_MAX, description="this priority exactly"),
        "priority_min": NumberFilter("priority", "gte", low=PRIORITY_MIN, high=PRIORITY_MAX,
                                     description="priority at least (0 runs first)"),
        "priority_max": NumberFilter("priority", "lte", low=PRIORITY_MIN, high=PRIORITY_MAX,
                                     description="priority at most"),
        "profile": Filter("batch__profile__name", description="its batch's profile"),
        "collection": Filter("batch__collection__name", description="its batch's collection"),
        "batch": NumberFilter("batch_id", description="its batch's id"),
        "local_id": LocalIdFilter("local_ids", description="one of its local identifiers (exact)"),
        "primary_id": Filter("primary_id", description="its primary identifier (exact)"),
    }
