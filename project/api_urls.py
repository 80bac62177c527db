"""Routes of the native API under /api/v1/; each app registers its viewsets here."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver
from rest_framework.routers import SimpleRouter

from batches.api import urls as batch_urls
from bundles.api import urls as bundle_urls
from coordinators.api import urls as coordinator_urls
from coordinators.api.dataset_events import DatasetEventViewSet
from operations.api.views import OperationViewSet
from workflows.api import urls as workflow_urls
from xcommands.api.views import KeyedJobViewSet

router = SimpleRouter()
router.register("keyed-jobs", KeyedJobViewSet, basename="keyed-job")
router.register("dataset-events", DatasetEventViewSet, basename="dataset-event")
router.register("operations", OperationViewSet, basename="operation")

# name shown in the API root -> URL name of the collection.
ROOT_LINKS: dict[str, str] = {
    "keyed-jobs": "keyed-job-list",
    "dataset-events": "dataset-event-list",
    "operations": "operation-list",
    **coordinator_urls.ROOT_LINKS,
    **bundle_urls.ROOT_LINKS,
    **batch_urls.ROOT_LINKS,
    **workflow_urls.ROOT_LINKS,
}

urlpatterns: list[URLPattern | URLResolver] = [
    *router.urls, *coordinator_urls.urlpatterns, *bundle_urls.urlpatterns,
    *batch_urls.urlpatterns, *workflow_urls.urlpatterns,
]
