"""Noticing that Redis lost its data: a sentinel key that only a restart-empty or a flush removes."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

import redis
from celery import current_app as app  # project.celery's app, set up by this process

log = logging.getLogger(__name__)

SENTINEL = "scheduler:broker-epoch"
_clients: dict[str, Any] = {}


def _client(url: str) -> Any:
    client = _clients.get(url)
    if client is None:
        client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
        _clients[url] = client
    return client


def broker_lost_data(now: datetime) -> bool:
    """True when the broker's Redis no longer has the sentinel (restarted empty or flushed; first run too).

    Sets the sentinel again in the same atomic step (SET NX), so exactly one caller sees
    each loss. An unreachable Redis is not a loss: False, and the next sweep asks again.
    """

    url = str(app.conf.broker_url)
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return False
    try:
        created = _client(url).set(SENTINEL, now.isoformat(), nx=True)
    except redis.RedisError as exc:
        log.warning("cannot check the broker for lost messages: %s", exc)
        _clients.pop(url, None)
        return False
    return bool(created)
