"""App config of the kernel (its models: what the security boundaries remember)."""

from __future__ import annotations

from django.apps import AppConfig
from django.db.backends.signals import connection_created

from kernel.sqlbatch import plan_generically


class KernelConfig(AppConfig):
    """Registers the kernel so its models and migrations load."""

    name = "kernel"
    verbose_name = "Kernel"

    def ready(self) -> None:
        """Plan the batches' prepared statements generically on every new PostgreSQL connection (kernel.sqlbatch)."""
        connection_created.connect(plan_generically, dispatch_uid="kernel.sqlbatch.plan_generically")
