"""Routes of the native API under /api/v1/; each app registers its viewsets here."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver
from rest_framework.routers import SimpleRouter

router = SimpleRouter()

# name shown in the API root -> URL name of the collection.
ROOT_LINKS: dict[str, str] = {}

urlpatterns: list[URLPattern | URLResolver] = [*router.urls]
