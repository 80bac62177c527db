"""Routes of the Oozie Web Services API under /oozie/ (protocol versions 1 and 2)."""

from __future__ import annotations

from django.urls import path, re_path

from oozieapi.uploads import UploadView
from oozieapi.views import AdminView, JobsView, JobView, VersionsView

urlpatterns = [
    path("versions", VersionsView.as_view(), name="oozie-versions"),
    re_path(r"^(?P<version>v[12])/admin/(?P<resource>[A-Za-z0-9_-]+)$", AdminView.as_view(), name="oozie-admin"),
    re_path(r"^(?P<version>v[12])/jobs/?$", JobsView.as_view(), name="oozie-jobs"),
    re_path(r"^(?P<version>v[12])/upload$", UploadView.as_view(), name="oozie-upload"),
    re_path(r"^(?P<version>v[12])/job/(?P<job_id>[^/]+)$", JobView.as_view(), name="oozie-job"),
]
