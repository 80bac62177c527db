"""App config: Bundles: groups of coordinators managed as one."""

from __future__ import annotations

from django.apps import AppConfig


class BundlesConfig(AppConfig):
    """Bundles: groups of coordinators managed as one."""

    name = "bundles"
