"""A failed acknowledgement frees its prefetch slot (issue 24, item 2): a worker keeps its capacity after a broker fault.

kombu's Redis QoS removed a message from its prefetch count only after Redis confirmed the
ack; an ack that timed out (a cut link, Redis pausing) left the slot taken forever. Here a real
Redis pauses every client (CLIENT PAUSE) while the consumer acknowledges: the ack fails with a
timeout, and the channel can consume again at once; the message comes back only after the
visibility timeout (harmless: claims are compare-and-set).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import redis
from kombu import Connection, Exchange, Queue

from project.broker import TRANSPORT

pytestmark = pytest.mark.integration


def test_an_ack_redis_does_not_take_still_frees_the_slot(redis_url: str) -> None:
    """Prefetch 1, one message delivered, Redis paused during the ack: the ack fails, the slot is free again."""
    queue = Queue("ack-test", Exchange("ack-test", type="direct"), routing_key="ack-test")
    options = {"socket_timeout": 0.5, "socket_connect_timeout": 0.5, "visibility_timeout": 3600}
    with Connection(redis_url, transport=TRANSPORT, transport_options=options) as connection:
        channel: Any = connection.channel()  # kombu's Redis channel (the stubs know the abstract one)
        producer = connection.Producer(channel)
        producer.publish({"n": 1}, exchange=queue.exchange, routing_key="ack-test", declare=[queue], serializer="json")
        channel.basic_qos(prefetch_size=0, prefetch_count=1)
        message = channel.basic_get("ack-test", no_ack=False)
        assert message is not None
        qos = channel.qos
        qos.append(message, message.delivery_tag)
        assert not qos.can_consume()  # the one slot is taken
        admin = redis.Redis.from_url(redis_url)
        admin.execute_command("CLIENT", "PAUSE", "1500", "ALL")
        started = time.monotonic()
        try:
            qos.ack(message.delivery_tag)  # Redis does not answer within the socket timeout
        finally:
            threading.Event().wait(max(0.0, 1.6 - (time.monotonic() - started)))
        assert qos.can_consume(), "a failed ack kept the prefetch slot"
        assert admin.hexists(channel.unacked_key, message.delivery_tag)  # redelivered after the visibility timeout
        admin.close()
