"""App config: Datasets: the pure time line, URI templates, availability checks and events."""

from __future__ import annotations

from django.apps import AppConfig


class DatasetsConfig(AppConfig):
    """Datasets: the pure time line, URI templates, availability checks and events."""

    name = "datasets"
