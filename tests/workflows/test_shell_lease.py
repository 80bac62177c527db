"""Work under a lost lease stops: a shell command ends when its node's lease is no longer this worker's (issue 24, item 7).

The heartbeat thread renews every lease a pool process holds; `heartbeat.lost()` says when one
was refused (the node moved on: killed, relaunched elsewhere) or went unconfirmed for a whole
lease (the database out of reach: the lease has lapsed and the node may run elsewhere). A shell
action looks twice a second and kills its command's process group.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError

from coordinators.models import CoordinatorAction
from tests.support.workflow_nodes import node_of
from tests.workflows.actions.test_shell import _assert_dead
from workflows import runner
from workflows.actions import ActionContext, execute
from workflows.leases import NODE_LEASE
from workflows.models import WorkflowNode
from xcommands import heartbeat

CONTEXT = ActionContext(workflow_id="0000001-260101000000000-oozie-W", node_name="script", configuration={}, user="ann")


@pytest.fixture
def kinds() -> Iterator[Callable[[str, Callable[[dict[Any, int], datetime], list[Any]], float], None]]:
    """Register test lease kinds; removed afterwards."""
    added: list[str] = []

    def add(kind: str, renew: Callable[[dict[Any, int], datetime], list[Any]], seconds: float) -> None:
        heartbeat.register_kind(kind, renew, lambda: seconds)
        added.append(kind)

    yield add
    for kind in added:
        heartbeat._KINDS.pop(kind, None)


@pytest.mark.django_db(transaction=True)
def test_a_node_relaunched_elsewhere_is_a_lost_lease(launched: Callable[..., CoordinatorAction]) -> None:
    node = node_of(launched())
    assert runner.claim(node.id, 1, "w1@host:1") is not None
    with heartbeat.lease(NODE_LEASE, node.id, 1):
        heartbeat._renewer._renew({(NODE_LEASE, node.id): 1})
        assert not heartbeat.lost()
        WorkflowNode.objects.filter(pk=node.id).update(attempt=2)  # recovery relaunched it
        heartbeat._renewer._renew({(NODE_LEASE, node.id): 1})
        assert heartbeat.lost()
    assert not heartbeat.lost()  # released: nothing held, nothing lost


def test_a_lease_unconfirmed_for_a_whole_lease_is_lost(kinds: Any) -> None:
    def unreachable(held: dict[Any, int], expires: datetime) -> list[Any]:
        raise OperationalError("could not connect to server: Connection timed out")

    kinds("test-unreachable", unreachable, 1.0)
    with heartbeat.lease("test-unreachable", "row", 1):
        assert not heartbeat.lost()
        time.sleep(0.6)
        assert not heartbeat.lost()  # less than a lease since it was taken
        time.sleep(0.6)
        assert heartbeat.lost()


def test_a_shell_command_is_killed_when_its_lease_is_lost(settings: Any, tmp_path: Path, kinds: Any) -> None:
    settings.WORKFLOW_SHELL_ENABLED = True
    settings.WORKFLOW_SHELL_TIMEOUT_SECONDS = 60
    refused: list[bool] = []

    def renew(held: dict[Any, int], expires: datetime) -> list[Any]:
        return [] if refused else list(held)

    kinds("test-refusable", renew, 0.9)
    pidfile = tmp_path / "pid"
    with heartbeat.lease("test-refusable", "row", 1):
        began = time.monotonic()
        refused.append(True)  # the next renewal finds the row taken
        result = execute("shell", {"exec": "/bin/sh", "args": ["-c", f"echo $$ > {pidfile}; sleep 60"]}, CONTEXT)
    assert result.status == "ERROR" and result.error_code == "LEASE_LOST", result
    assert "lost the node's lease" in result.error_message
    assert time.monotonic() - began < 5
    _assert_dead(int(pidfile.read_text()))
