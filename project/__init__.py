"""Project package: settings, the Celery app, URLs, health and the `up` launcher."""

from __future__ import annotations

from project.celery import app as celery_app

__all__ = ["celery_app"]
