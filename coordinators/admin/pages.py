"""What the operator pages beyond the stock lists share: a clamped number from the query string, the view check, fast links.

The pages (grid, Gantt, timeline, bulk change) are plain functions of the job admin that
serves them, which passes itself: nothing here imports an admin class of this package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.admin import ModelAdmin, site
from django.contrib.admin.utils import quote
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.urls import reverse

from coordinators.models import CoordinatorAction, CoordinatorJob


def query_int(raw: str | None, default: int, low: int, high: int) -> int:
    """A whole number from the query string, clamped to [low, high]; the default when absent or not a number."""
    try:
        value = int(raw) if raw not in (None, "") else default
    except ValueError:
        value = default
    return max(low, min(high, value))


def check_view(modeladmin: ModelAdmin[CoordinatorJob], request: HttpRequest, obj: Any = None) -> None:
    """Jobs and their actions must both be viewable; a staff member without those permissions gets a 403."""
    action_admin = site._registry.get(CoordinatorAction)
    if not modeladmin.has_view_permission(request, obj) or (
        action_admin is not None and not action_admin.has_view_permission(request)
    ):
        raise PermissionDenied


def url_maker(name: str) -> Callable[[Any], str]:
    """`reverse(name, [pk])` for many primary keys, reversing once (a grid page links up to 3,000 actions)."""
    marker = "__pk__"
    template = reverse(name, args=[marker])
    return lambda pk: template.replace(marker, quote(pk), 1)
