"""URL routes: admin, native API, OpenAPI schema and docs, Oozie Web Services API, health, Prometheus metrics."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from kernel.auth_guard import GuardedAdminAuthenticationForm, with_lockout_status
from project.api import api_root
from project.dashboard import dashboard
from project.health import healthz
from project.metrics_view import metrics_view

# The admin is the operators' site: there is no public site for a "View site" link to open.
admin.site.site_url = None
# Failed sign-ins are counted and a locked-out client is refused, the right password too (kernel.auth_guard).
admin.site.login_form = GuardedAdminAuthenticationForm

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics_view, name="metrics"),
    path("admin/dashboard/", admin.site.admin_view(dashboard), name="admin-dashboard"),
    # The admin's own login page, answering 429 with Retry-After when the form refused a locked-out client.
    path("admin/login/", with_lockout_status(admin.site.login)),
    path("admin/", admin.site.urls),
    path("api/v1/", api_root, name="api-root"),
    path("api/v1/", include("project.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema", template_name="project/redoc.html"),
         name="api-redoc"),
    path("oozie/", include("oozieapi.urls")),
]
