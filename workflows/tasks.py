"""Celery tasks of the workflow runtime: running a node, and the recovery service (celery beat)."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.utils import timezone


@shared_task(bind=True, name="workflows.run", ignore_result=True, acks_late=True)
def run(self: Any, node: str, attempt: int, **display: Any) -> str:
    """Run one attempt of a workflow node (`display`: the parent and task, shown by Flower)."""
    from workflows.runner import run_node

    return run_node(node, int(attempt), getattr(self.request, "hostname", "") or "")


@shared_task(name="workflows.service.recover", ignore_result=True)
def recover() -> dict[str, int]:
    """Launch again the nodes whose worker was lost; send again the messages nobody picked up."""
    from workflows.recovery import recover as recover_nodes

    return recover_nodes(timezone.now())
