"""The dashboard names workers as Flower does, links to Flower, and its Prometheus link opens for the operator."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from kernel import processes
from xcommands.choices import CommandStatus
from xcommands.engine import worker_identity
from xcommands.models import Command

pytestmark = pytest.mark.django_db
DASHBOARD = "/admin/dashboard/"


@pytest.fixture
def operator() -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("op", "op@example.com", "pw"))
    return client


def test_a_worker_is_named_by_its_celery_node_and_linked_to_flower(operator: Client, settings: Any,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Lease owners carry the Celery node name (`w1@host`, Flower's name for the worker) and the pool pid."""
    monkeypatch.setattr(processes, "_NODE_NAME", "actions-77@box")
    monkeypatch.setattr("xcommands.engine._IDENTITY", (0, ""))
    owner = worker_identity()
    assert owner.startswith("actions-77@box:") and owner.rpartition(":")[2].isdigit()
    now = timezone.now()
    Command.objects.create(key="k", seq=1, name="tests.ProbeXCommand", status=CommandStatus.RUNNING, not_before=now,
                           enqueued_at=now, started_at=now, lease_owner=owner, lease_expires_at=now)
    settings.FLOWER_URL = "http://127.0.0.1:5555"
    page = operator.get(DASHBOARD).content.decode()
    assert ">actions-77@box</a>" in page and 'href="http://127.0.0.1:5555/worker/actions-77%40box"' in page
    assert 'href="http://127.0.0.1:5555/"' in page and ">Flower</a>" in page
    settings.FLOWER_URL = ""
    assert ">Flower</a>" not in operator.get(DASHBOARD).content.decode()


def test_the_prometheus_link_opens_for_a_signed_in_operator(operator: Client) -> None:
    """The dashboard's /metrics link answers the operator's session (it was a 401); strangers still get 401."""
    assert operator.get("/metrics").status_code == 200
    assert b"scheduler_commands_queued" in operator.get("/metrics").content
    assert Client().get("/metrics").status_code == 401
    clerk = Client()
    clerk.force_login(User.objects.create_user("clerk"))  # not staff: no admin, no metrics by session
    assert clerk.get("/metrics").status_code == 401


def test_owners_on_the_same_machine_are_recognised_across_worker_nodes() -> None:
    """A pool process that died is found by any worker of its machine: pids are per machine, not per node."""
    assert processes.owner_pid("actions-1@box:123", "worker-2@box") == 123
    assert processes.owner_pid("actions-1@box:123", "box") == 123
    assert processes.owner_pid("box:123", "worker-2@box") == 123
    assert processes.owner_pid("actions-1@other:123", "worker-2@box") is None
    assert processes.owner_pid("garbage", "box") is None
