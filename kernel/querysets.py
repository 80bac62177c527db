"""Querysets every app may use for its models."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone


class TouchingQuerySet(models.QuerySet[Any]):
    """`update()` also sets the model's `auto_now` fields ("last change"), as `save()` does.

    Django's `QuerySet.update` bypasses `auto_now`: rows moved by compare-and-set updates kept the
    time they were created as their last change. A caller that names the field keeps its value.
    """

    def update(self, **kwargs: Any) -> int:
        now = timezone.now()
        for field in self.model._meta.concrete_fields:
            if getattr(field, "auto_now", False) and field.name not in kwargs and field.attname not in kwargs:
                kwargs[field.name] = now
        return super().update(**kwargs)
