"""Django's admin, installed on the operators' site (`kernel.admin_kit.OperatorAdminSite`).

INSTALLED_APPS names `kernel.admin_site.AdminConfig` in place of `django.contrib.admin`: the
same app (label `admin`, its templates and autodiscovery), whose site answers a query string
it cannot use with the admin's "invalid lookup" page instead of a 500.
"""

from __future__ import annotations

from django.contrib.admin import apps


class AdminConfig(apps.AdminConfig):
    """django.contrib.admin with the operators' site as `admin.site`."""

    default_site = "kernel.admin_kit.OperatorAdminSite"
