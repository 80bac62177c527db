"""App config for the project package (management commands such as `up`)."""

from __future__ import annotations

from django.apps import AppConfig


class ProjectConfig(AppConfig):
    """Registers the project package so its management commands load."""

    name = "project"
    verbose_name = "Scheduler"
