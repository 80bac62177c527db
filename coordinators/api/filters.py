"""Query filters of the coordinator API, and which jobs a caller may see."""

from __future__ import annotations

from coordinators.api.serializers import ACTION_STATUSES, JOB_STATUSES
from kernel.api import Filter, FilterSet


class CoordinatorJobFilterSet(FilterSet):
    """Jobs by status, user, name and dates."""

    filters = {
        "status": Filter("status", choices=JOB_STATUSES, multiple=True, upper=True,
                         description="one or more statuses, comma-separated or repeated (RUNNING,SUSPENDED)"),
        "user": Filter("owner__username", description="the owner's user name"),
        "name": Filter("app_name", description="the application name (exact)"),
        "name_contains": Filter("app_name", "icontains", description="part of the application name"),
        "created_after": Filter("created_at", "gte", kind="datetime", description="submitted at or after"),
        "created_before": Filter("created_at", "lt", kind="datetime", description="submitted before"),
        "start_after": Filter("start_time", "gte", kind="datetime", description="start time at or after"),
        "start_before": Filter("start_time", "lt", kind="datetime", description="start time before"),
        "end_after": Filter("end_time", "gte", kind="datetime", description="end time at or after"),
        "end_before": Filter("end_time", "lt", kind="datetime", description="end time before"),
    }


class CoordinatorActionFilterSet(FilterSet):
    """Actions by status and nominal time."""

    filters = {
        "status": Filter("status", choices=ACTION_STATUSES, multiple=True, upper=True,
                         description="one or more statuses, comma-separated or repeated (FAILED,KILLED)"),
        "nominal_after": Filter("nominal_time", "gte", kind="datetime", description="nominal time at or after"),
        "nominal_before": Filter("nominal_time", "lt", kind="datetime", description="nominal time before"),
    }


class AllCoordinatorActionFilterSet(CoordinatorActionFilterSet):
    """Actions of every job, optionally of one."""

    filters = {
        "job": Filter("job_id", description="the coordinator job's id"),
        **CoordinatorActionFilterSet.filters,
    }


