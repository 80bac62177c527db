"""App config: bundles, groups of coordinators started, paused, suspended, resumed, killed and rerun as one."""

from __future__ import annotations

from django.apps import AppConfig


class BundlesConfig(AppConfig):
    """Bundles: groups of coordinators managed as one."""

    name = "bundles"

    def ready(self) -> None:
        """Follow the status of every bundle's coordinators, in the transaction that changes it."""
        from bundles import bulk_verbs
        from bundles.status import mirror_coordinator_status
        from coordinators.signals import coordinator_status_changed
        from operations.bulk import register_kind

        coordinator_status_changed.connect(mirror_coordinator_status, dispatch_uid="bundles.mirror")
        register_kind("bundle", bulk_verbs.act)
