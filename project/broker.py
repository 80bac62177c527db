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

import logging
from collections.abc import Callable
from typing import Any

import redis
from kombu import Connection
from kombu.transport import redis as kombu_redis
from kombu.transport import virtual

log = logging.getLogger(__name__)

#: The value of Celery's `broker_transport` setting that selects this module's transport.
TRANSPORT = "project.broker:Transport"

# kombu names a connection's transport in `info()` and `as_uri()` after its class path unless
# the path has an alias; ours is kombu's Redis transport, so it is shown as `redis`.
Connection.resolve_aliases.setdefault(TRANSPORT, "redis")


class QoS(kombu_redis.QoS):
    """kombu's Redis QoS, except that an acknowledgement Redis did not take still frees the prefetch slot.

    kombu's `ack` removes the message from Redis's unacked index first and frees the slot only
    if that worked: after `Couldn't ack ..., reason: TimeoutError` (a cut link, a Redis pausing)
    the message counted as outstanding forever, and with `task_acks_late` and a prefetch of 1
    each such ack cost one pool process's slot until the worker restarted (issue 24, item 2).
    Here the slot is freed whatever Redis answered; a message whose removal failed stays in the
    unacked index and is delivered again after the visibility timeout, which the engine's claims
    (compare-and-set, fencing) make harmless. Reported upstream as kombu's behaviour.
    """

    def ack(self, delivery_tag: Any) -> None:
        """Remove the message from Redis's unacked index if Redis answers; free the slot regardless."""
        self._then_free("ack", delivery_tag, lambda: self._remove_from_indices(delivery_tag).execute())  # type: ignore[attr-defined]  # kombu, not in the stubs

    def reject(self, delivery_tag: Any, requeue: bool = False) -> None:
        """Give the message back (or drop it) if Redis answers; free the slot regardless."""
        if requeue:
            self._then_free("reject", delivery_tag, lambda: self.restore_by_tag(delivery_tag, leftmost=True))
        else:
            self._then_free("reject", delivery_tag, lambda: self._remove_from_indices(delivery_tag).execute())  # type: ignore[attr-defined]  # kombu, not in the stubs

    def _then_free(self, what: str, delivery_tag: Any, in_redis: Callable[[], Any]) -> None:
        """Record the ack or reject in Redis if it answers; free the prefetch slot whatever happened."""
        try:
            in_redis()
        except (redis.exceptions.RedisError, OSError) as exc:
            log.warning("%s of %s not recorded in Redis (%s): it will be delivered again after the "
                        "visibility timeout; its prefetch slot is freed now", what, delivery_tag, exc)
        finally:
            virtual.QoS.ack(self, delivery_tag)


class Channel(kombu_redis.Channel):
    """kombu's Redis channel; connecting through a closed transport raises ConnectionError; acks never leak slots."""

    QoS = QoS

    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        """Connection parameters, or ConnectionError once the transport has been closed."""
        if self.connection.client is None:
            raise redis.exceptions.ConnectionError("the broker connection has been closed")
        params: dict[str, Any] = super()._connparams(asynchronous=asynchronous)  # type: ignore[misc]  # not in the stubs
        return params


class Transport(kombu_redis.Transport):
    """kombu's Redis transport with a channel that never dereferences a closed transport."""

    Channel = Channel
