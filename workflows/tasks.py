"""Celery tasks of the workflow runtime: running a node, and the recovery service (celery beat).

Importing this module (every worker does) also registers the workflow commands.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.utils import timezone

from workflows import commands  # noqa: F401 - registers the Wf* commands in every worker


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
