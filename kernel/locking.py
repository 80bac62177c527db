"""Row locking for the periodic services: rows one run takes are skipped by a concurrent run."""

from __future__ import annotations

from typing import Any, TypeVar

from django.db import connection
from django.db.models import QuerySet

Q = TypeVar("Q", bound=QuerySet[Any])


def skip_locked(queryset: Q) -> Q:
    """Lock the rows selected, skipping those another transaction holds (PostgreSQL); SQLite serialises writers."""
    if connection.features.has_select_for_update_skip_locked:
        return queryset.select_for_update(skip_locked=True, of=("self",))
    return queryset
