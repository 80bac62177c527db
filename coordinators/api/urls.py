"""Routes of the coordinator API under /api/v1/."""

from __future__ import annotations

from rest_framework.routers import SimpleRouter

from coordinators.api.views import CoordinatorActionViewSet, CoordinatorJobViewSet

router = SimpleRouter()
router.register("coordinator-jobs", CoordinatorJobViewSet, basename="coordinator-job")
router.register("coordinator-actions", CoordinatorActionViewSet, basename="coordinator-action")

# name shown in the API root -> URL name of the collection.
ROOT_LINKS: dict[str, str] = {
    "coordinator-jobs": "coordinator-job-list",
    "coordinator-actions": "coordinator-action-list",
}

urlpatterns = router.urls
