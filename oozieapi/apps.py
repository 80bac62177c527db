"""App config: the Oozie Web Services API."""

from __future__ import annotations

from django.apps import AppConfig


class OozieApiConfig(AppConfig):
    """The Oozie Web Services API: Oozie's URLs, JSON and error headers over the coordinator services."""

    name = "oozieapi"
    verbose_name = "Oozie Web Services API"
