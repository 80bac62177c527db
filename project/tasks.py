"""Operational tasks of the project itself."""

from __future__ import annotations

import socket

from celery import shared_task

from project.health import check_database


@shared_task(name="project.healthcheck")
def healthcheck() -> dict[str, str]:
    """Run inside a worker: report the worker's host and whether it reaches the database."""
    return {"worker": socket.gethostname(), "database": check_database()}
