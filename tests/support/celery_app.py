"""Pointing this process's Celery app (the publishing side) at another broker and result backend."""

from __future__ import annotations

from typing import Any

from kombu import pools


def point_celery_at(app: Any, broker: str, backend: str) -> None:
    """Switch the in-process Celery app's broker and result backend, dropping cached pools."""
    app.conf.broker_url = broker
    app.conf.result_backend = backend
    pools.reset()  # kombu caches pools per URL globally; start afresh
    app._after_fork()  # forgets the app's connection and producer pools
    app._backend_cache = None
    app._local.__dict__.pop("backend", None)
