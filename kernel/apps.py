"""App config of the kernel (its models: what the security boundaries remember)."""

from __future__ import annotations

from django.apps import AppConfig


class KernelConfig(AppConfig):
    """Registers the kernel so its models and migrations load."""

    name = "kernel"
    verbose_name = "Kernel"
