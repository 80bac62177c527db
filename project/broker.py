"""The Redis broker transport: kombu's, except that a closed transport fails as a lost connection.

When Redis goes away, Celery's consumer first collects its broker connection (closing the
transport), then closes it. If the worker held unacknowledged messages while still polling
for more (fewer messages in flight than prefetch slots), the first close of the channel stops
at the dead poll, and the second one hands the messages back to Redis through a new pool
built from the collected transport, which has no client: kombu 5.7's `_connparams` raises
AttributeError ("'NoneType' object has no attribute 'hostname'"). kombu and Celery swallow
only the transport's connection and channel errors there, so the worker exits with an
"Unrecoverable error". Raising redis's ConnectionError instead keeps that path on the
ordinary reconnect loop. Nothing is lost that was not lost anyway: a Redis that kept its data
gives unacknowledged messages back after the visibility timeout, and for one that came back
empty the command engine's sweep re-wakes the commands.

Celery selects this transport through `broker_transport` (see project/celery.py); URLs stay
`redis://...`, and `Connection.as_uri()` still says `redis://` (Flower picks its broker
client by that scheme).
"""

from __future__ import annotations

from typing import Any

import redis
from kombu import Connection
from kombu.transport import redis as kombu_redis

#: The value of Celery's `broker_transport` setting that selects this module's transport.
TRANSPORT = "project.broker:Transport"

# kombu names a connection's transport in `info()` and `as_uri()` after its class path unless
# the path has an alias; ours is kombu's Redis transport, so it is shown as `redis`.
Connection.resolve_aliases.setdefault(TRANSPORT, "redis")


class Channel(kombu_redis.Channel):
    """kombu's Redis channel; connecting through a closed transport raises ConnectionError."""

    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        """Connection parameters, or ConnectionError once the transport has been closed."""
        if self.connection.client is None:
            raise redis.exceptions.ConnectionError("the broker connection has been closed")
        params: dict[str, Any] = super()._connparams(asynchronous=asynchronous)  # type: ignore[misc]  # not in the stubs
        return params


class Transport(kombu_redis.Transport):
    """kombu's Redis transport with a channel that never dereferences a closed transport."""

    Channel = Channel
