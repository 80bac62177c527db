"""The broker transport: closing a connection Redis dropped never raises past kombu's error filter."""

from __future__ import annotations

import pytest
import redis
from kombu import Connection, Exchange, Producer, Queue
from kombu.common import ignore_errors

from project.broker import TRANSPORT
from project.celery import app

STOCK = "kombu.transport.redis:Transport"


def _collected_with_an_unacked_message(url: str, transport: str) -> Connection:
    """A connection holding one delivered, unacknowledged message whose transport was collected.

    This is the state Celery's consumer leaves behind when Redis drops: `collect()` closes the
    transport while the default channel still owes Redis its unacknowledged messages.
    """
    queue = Queue("broker-test", Exchange(""), routing_key="broker-test")
    connection = Connection(url, transport=transport)
    channel = connection.default_channel
    queue(channel).declare()
    Producer(channel).publish({"n": 1}, routing_key="broker-test", serializer="json")
    message = queue(channel).get(no_ack=False)
    assert message is not None
    connection._do_close_transport()
    return connection


@pytest.mark.parametrize(
    ("transport", "escapes"),
    [pytest.param(STOCK, True, id="kombu-stock"), pytest.param(TRANSPORT, False, id="project-broker")],
)
def test_closing_a_collected_connection_stays_a_connection_error(
    redis_url: str, transport: str, escapes: bool
) -> None:
    """kombu's transport lets AttributeError escape `ignore_errors(conn, conn.close)` (the worker
    exits); ours raises ConnectionError there, which kombu swallows, so the worker reconnects.
    When the kombu-stock case fails after an upgrade, kombu has fixed it: project.broker can go."""
    connection = _collected_with_an_unacked_message(redis_url, transport)
    if escapes:
        with pytest.raises(AttributeError, match="hostname"):
            ignore_errors(connection, connection.close)
    else:
        ignore_errors(connection, connection.close)
    assert issubclass(redis.exceptions.ConnectionError, Connection(redis_url, transport=TRANSPORT).connection_errors)


def test_the_project_app_uses_the_transport_and_still_names_it_redis(redis_url: str) -> None:
    """Celery's broker connections use project.broker's transport; their URI still says redis://
    (Flower chooses its broker client by that scheme), and publishing and consuming work."""
    assert app.conf.broker_transport == TRANSPORT
    assert app.conf.broker_connection_max_retries is None
    with app.connection_for_write(redis_url) as connection:
        assert type(connection.transport).__module__ == "project.broker"
        assert connection.as_uri().startswith("redis://")
        queue = Queue("broker-test-app", Exchange(""), routing_key="broker-test-app")
        queue(connection.default_channel).declare()
        Producer(connection.default_channel).publish({"n": 2}, routing_key="broker-test-app", serializer="json")
        message = queue(connection.default_channel).get(no_ack=False)
        assert message is not None and message.payload == {"n": 2}
        message.ack()
