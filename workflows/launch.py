"""Starting workflow jobs and sending their nodes to the workers.

A launch writes the workflow job and its node in the caller's transaction (the parent's
command) and sends the node's message after commit. Redis only carries the message: a
message lost with Redis is sent again by the recovery service, and a duplicate delivery is
harmless (the claim is a compare-and-set on the node's attempt).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

from celery import current_app as app  # project.celery's app, set up by this process
from django.db import transaction

from workflows.choices import NodeStatus, WorkflowStatus
from workflows.ids import next_workflow_ids
from workflows.models import TASK_NODE, WorkflowJob, WorkflowNode
from workflows.settings import max_launches

log = logging.getLogger(__name__)

TASK_SCHEME = "task:"
RUN_TASK = "workflows.run"


class UnknownApplication(ValueError):
    """The application path names no launcher this service has."""


@dataclass(frozen=True)
class Launch:
    """What to start: an application, its configuration, and who asked (the parent action)."""

    app_path: str
    configuration: dict[str, Any]
    nominal_time: datetime | None = None
    coord_action_id: str | None = None
    run: int = 0
    owner_id: int | None = None
    app_name: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def task_name_of(app_path: str) -> str:
    """The Celery task a `task:<name>` application runs."""
    if not app_path.startswith(TASK_SCHEME) or not app_path[len(TASK_SCHEME):].strip():
        raise UnknownApplication(f"application {app_path!r} is not task:<celery task name>")
    return app_path[len(TASK_SCHEME):].strip()


def queue_of(task_name: str) -> str:
    """The queue the application's task is routed to (so dedicated pools keep their work)."""

    route = app.amqp.router.route({}, task_name)
    queue = route.get("queue")
    name = getattr(queue, "name", queue)
    return str(name or app.conf.task_default_queue)


def start_workflows(launches: list[Launch], now: datetime) -> list[WorkflowJob]:
    """Create one RUNNING workflow job (and its PREP node) per launch; send each node after commit."""
    if not launches:
        return []
    ids = next_workflow_ids(len(launches))
    jobs, nodes = [], []
    for workflow_id, launch in zip(ids, launches, strict=True):
        task_name = task_name_of(launch.app_path)
        job = WorkflowJob(
            id=workflow_id,
            app_name=launch.app_name or task_name,
            app_path=launch.app_path,
            owner_id=launch.owner_id,
            coord_action_id=launch.coord_action_id,
            run=launch.run,
            configuration=launch.configuration,
            nominal_time=launch.nominal_time,
            status=WorkflowStatus.RUNNING,  # Oozie: the coordinator submits and starts it in one go
            created_at=now,
            started_at=now,
        )
        task_id = str(uuid.uuid4())
        nodes.append(WorkflowNode(
            id=f"{workflow_id}@{TASK_NODE}",
            workflow=job,
            name=TASK_NODE,
            task_name=task_name,
            queue=queue_of(task_name),
            status=NodeStatus.PREP,
            attempt=1,
            max_attempts=max_launches(),
            task_id=task_id,
            task_ids=[task_id],
            dispatched_at=now,
            dispatches=1,
        ))
        jobs.append(job)
    WorkflowJob.objects.bulk_create(jobs)
    WorkflowNode.objects.bulk_create(nodes)
    messages = [(node.task_id, node.queue, node.display_kwargs()) for node in nodes]
    transaction.on_commit(partial(dispatch_many, messages))
    return jobs


def dispatch_on_commit(node: WorkflowNode) -> None:
    """Send the node's current attempt once the caller's transaction commits."""
    transaction.on_commit(partial(dispatch, node.task_id, node.queue, node.display_kwargs()))


def display_name(kwargs: dict[str, Any]) -> str:
    """The name Flower and the worker log show for a node's message: its task and the action (or node) it runs for."""
    return f"{kwargs.get('task') or RUN_TASK} {kwargs.get('parent') or kwargs.get('node') or ''}".strip()


def dispatch(task_id: str, queue: str, kwargs: dict[str, Any], producer: Any = None) -> bool:
    """Send one `workflows.run` message; a broker error is logged, not raised (recovery sends it again).

    The message runs `workflows.run` but is shown (Celery's `shadow`) as `<task> <action id>`,
    so Flower's task list says which coordinator action each task runs for.
    """

    try:
        # Two of Celery's per-message costs skipped (ADR 0044): the queue is not declared again (the message goes
        # to the default exchange, routed by the queue's name, as Celery sends to a direct queue, so no binding is
        # read), and the kwargs' repr is plain (a few ids and a number: saferepr walked them for a fifth of a send).
        app.send_task(RUN_TASK, kwargs=kwargs, task_id=task_id, queue=queue, shadow=display_name(kwargs), producer=producer,
                      ignore_result=True, declare=[], argsrepr="()", kwargsrepr=repr(kwargs))
    except Exception as exc:  # the broker may be down: the node stays PREP and is sent again
        log.warning("node %s (attempt %s) not sent: %s; recovery will send it again",
                    kwargs.get("node"), kwargs.get("attempt"), exc)
        return False
    return True


#: Messages one Redis pipeline carries when many nodes are sent at once (kombu's publish batch).
PUBLISH_BATCH = 500


def dispatch_many(messages: list[tuple[str, str, dict[str, Any]]]) -> int:
    """Send many nodes' messages through one producer, pipelined: one Redis round trip per PUBLISH_BATCH messages; how many went.

    kombu's publish batch buffers the LPUSHes and sends them together when the batch ends (or
    fills). If Redis fails the batch, which of its messages arrived is unknown: they are all
    counted as not sent, their nodes stay PREP, and recovery sends them again (a duplicate is
    harmless: the claim takes a node once).
    """

    if len(messages) <= 1:
        return sum(dispatch(*message) for message in messages)
    try:
        with app.producer_or_acquire() as producer, producer.batch(max_size=PUBLISH_BATCH):
            sent = sum(dispatch(*message, producer=producer) for message in messages)
    except Exception as exc:  # no producer, or the pipeline failed (broker down): recovery sends them
        log.warning("%d node message(s) not sent: %s; recovery will send them again", len(messages), exc)
        return 0
    return sent


def relaunch(node: WorkflowNode, now: datetime) -> None:
    """Queue the node's next attempt (new task id) and send it after commit (the caller holds the row)."""
    node.transition_to(NodeStatus.PREP)
    node.attempt += 1
    node.task_id = str(uuid.uuid4())
    node.task_ids = [*node.task_ids, node.task_id]
    node.worker = ""
    node.lease_expires_at = None
    node.started_at = None
    node.dispatched_at = now
    node.dispatches = 1
    node.save(update_fields=[
        "status", "attempt", "task_id", "task_ids", "worker", "lease_expires_at", "started_at",
        "dispatched_at", "dispatches", "history",
    ])
    dispatch_on_commit(node)
