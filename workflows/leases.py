"""The lease kind of running workflow nodes, renewed by each worker's heartbeat thread."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from workflows.choices import NodeStatus
from workflows.models import WorkflowNode
from workflows.settings import lease_seconds
from xcommands import heartbeat

NODE_LEASE = "workflow-node"


def _renew(held: dict[Any, int], expires: datetime) -> list[Any]:
    """Extend the leases this process holds; a node that moved on (killed, relaunched) is left alone."""
    return [
        node_id for node_id, attempt in held.items()
        if WorkflowNode.objects.filter(pk=node_id, attempt=attempt, status=NodeStatus.RUNNING).update(
            lease_expires_at=expires
        )
    ]


def register() -> None:
    """Let the heartbeat thread renew node leases (called when the app is ready)."""
    heartbeat.register_kind(NODE_LEASE, _renew, lease_seconds)
