"""Query filters of the workflow API."""

from __future__ import annotations

from kernel.api import Filter, FilterSet
from workflows.api.serializers import WORKFLOW_STATUSES


class WorkflowJobFilterSet(FilterSet):
    """Workflow jobs by status, user, name, parent and dates."""

    filters = {
        "status": Filter("status", choices=WORKFLOW_STATUSES, multiple=True, upper=True,
                         description="one or more statuses, comma-separated or repeated (RUNNING,FAILED)"),
        "user": Filter("owner__username", description="the owner's user name"),
        "name": Filter("app_name", description="the application name (exact)"),
        "coord_action": Filter("coord_action_id", description="the coordinator action that launched it"),
        "parent_workflow": Filter("parent_workflow_id", description="the workflow whose sub-workflow node started it"),
        "created_after": Filter("created_at", "gte", kind="datetime", description="created at or after"),
        "created_before": Filter("created_at", "lt", kind="datetime", description="created before"),
    }
