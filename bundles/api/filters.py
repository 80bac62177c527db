"""Query filters of the bundle API (which bundles a caller may see: `kernel.permissions.readable_jobs`)."""

from __future__ import annotations

from bundles.api.serializers import BUNDLE_STATUSES
from kernel.api import Filter, FilterSet


class BundleJobFilterSet(FilterSet):
    """Bundles by status, user, name and dates."""

    filters = {
        "status": Filter("status", choices=BUNDLE_STATUSES, multiple=True, upper=True,
                         description="one or more statuses, comma-separated or repeated (RUNNING,SUSPENDED)"),
        "user": Filter("owner__username", description="the owner's user name"),
        "name": Filter("app_name", description="the bundle's name (exact)"),
        "name_contains": Filter("app_name", "icontains", description="part of the bundle's name"),
        "external_id": Filter("external_id", description="the submitter's external id (exact)"),
        "created_after": Filter("created_at", "gte", kind="datetime", description="submitted at or after"),
        "created_before": Filter("created_at", "lt", kind="datetime", description="submitted before"),
        "kick_off_after": Filter("kick_off_time", "gte", kind="datetime", description="kick-off time at or after"),
        "kick_off_before": Filter("kick_off_time", "lt", kind="datetime", description="kick-off time before"),
    }
