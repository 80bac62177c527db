"""App config: bundles, groups of coordinators started, paused, suspended, resumed, killed and rerun as one."""

from __future__ import annotations

from django.apps import AppConfig

from coordinators.signals import coordinator_status_changed


class BundlesConfig(AppConfig):
    """Bundles: groups of coordinators managed as one."""

    name = "bundles"

    def ready(self) -> None:
        """Follow the status of every bundle's coordinators, in the transaction that changes it."""
        from bundles import bulk_verbs  # noqa: PLC0415 - it imports bundles.models, which load only once the app registry is ready (AppConfig.ready)
        from bundles.status import mirror_coordinator_status  # noqa: PLC0415 - it imports bundles.models, which load only once the app registry is ready (AppConfig.ready)
        from operations.bulk import register_kind  # noqa: PLC0415 - it imports operations.models, which load only once the app registry is ready

        coordinator_status_changed.connect(mirror_coordinator_status, dispatch_uid="bundles.mirror")
        register_kind("bundle", bulk_verbs.act)
