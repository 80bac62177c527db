"""Routes of the batch API under /api/v1/."""

from __future__ import annotations

from rest_framework.routers import SimpleRouter

from batches.api.views import BatchJobViewSet, BatchViewSet, CollectionViewSet, ProfileViewSet

router = SimpleRouter()
router.register("batches", BatchViewSet, basename="batch")
router.register("batch-jobs", BatchJobViewSet, basename="batch-job")
router.register("collections", CollectionViewSet, basename="collection")
router.register("batch-profiles", ProfileViewSet, basename="batch-profile")

# name shown in the API root -> URL name of the collection.
ROOT_LINKS: dict[str, str] = {
    "batches": "batch-list",
    "batch-jobs": "batch-job-list",
    "collections": "collection-list",
    "batch-profiles": "batch-profile-list",
}

urlpatterns = router.urls
