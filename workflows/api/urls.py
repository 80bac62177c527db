"""Routes of the workflow API under /api/v1/."""

from __future__ import annotations

from rest_framework.routers import SimpleRouter

from workflows.api.views import WorkflowJobViewSet

router = SimpleRouter()
router.register("workflows", WorkflowJobViewSet, basename="workflow-job")

# name shown in the API root -> URL name of the collection.
ROOT_LINKS: dict[str, str] = {"workflows": "workflow-job-list"}

urlpatterns = router.urls
