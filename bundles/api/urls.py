"""Routes of the bundle API under /api/v1/."""

from __future__ import annotations

from rest_framework.routers import SimpleRouter

from bundles.api.views import BundleJobViewSet

router = SimpleRouter()
router.register("bundle-jobs", BundleJobViewSet, basename="bundle-job")

# name shown in the API root -> URL name of the collection.
ROOT_LINKS: dict[str, str] = {"bundle-jobs": "bundle-job-list"}

urlpatterns = router.urls
