"""Recovery of workflow nodes (celery beat): lost workers, lost messages, a broker that lost everything.

The database says what should be happening; Celery's result backend is never asked.

- A RUNNING node whose lease ran out lost its worker (killed, or stalled past the lease):
  it is launched again with the next attempt number (a zombie's late report is fenced
  out), up to WORKFLOW_MAX_LAUNCHES launches; then it FAILED, naming the lost worker.
- A PREP node nobody claimed is sent again after WORKFLOW_RESEND_SECONDS, doubling up to
  WORKFLOW_RESEND_MAX_SECONDS (a message lost with Redis); a duplicate is harmless.
- When Redis restarted empty or was flushed, every PREP node is sent again at once.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db import transaction
from django.dispatch import receiver

from kernel.locking import skip_locked
from workflows.choices import NodeStatus, WorkflowStatus
from workflows.engine import due_user_retries
from workflows.launch import dispatch_on_commit, relaunch
from workflows.models import WorkflowNode
from workflows.outcomes import Outcome
from workflows.runner import end_node, store_try
from workflows.settings import resend_after
from xcommands.signals import broker_lost_messages

log = logging.getLogger(__name__)

BATCH = 500
LONG_AGO = timedelta(days=3650)  # "due whatever the backoff"


def recover(now: datetime) -> dict[str, int]:
    """One pass: relaunch or fail the nodes whose lease expired, then send again what nobody claimed."""
    relaunched, failed = relaunch_lost(now)
    return {"relaunched": relaunched, "failed": failed, "resent": resend_unclaimed(now),
            "user_retries": due_user_retries(now)}


def give_up_lease(node_id: str, attempt: int, hostname: str, now: datetime) -> bool:
    """The lease of a node's attempt whose pool process died under this worker, expired now; whether one was.

    Only a RUNNING attempt that a process of this worker (`hostname:pid`) claimed: a duplicate
    message that died before its claim cannot end another worker's lease.
    """
    if not node_id or not hostname:
        return False
    expired = WorkflowNode.objects.filter(
        pk=node_id, attempt=attempt, status=NodeStatus.RUNNING, worker__startswith=f"{hostname}:",
    ).update(lease_expires_at=now - timedelta(microseconds=1))
    if expired:
        log.warning("node %s attempt %s: its pool process on %s died; lease given up for a relaunch now",
                    node_id, attempt, hostname)
    return bool(expired)


def relaunch_lost(now: datetime) -> tuple[int, int]:
    """Nodes whose worker stopped renewing the lease: next attempt, or FAILED after the last one."""
    relaunched = failed = 0
    with transaction.atomic():
        expired = skip_locked(
            WorkflowNode.objects.filter(status=NodeStatus.RUNNING, lease_expires_at__lt=now)
            .select_related("workflow").order_by("lease_expires_at")
        )[:BATCH]
        for node in expired:
            lost = node.worker or "unknown"
            entry = {
                "attempt": node.attempt,
                "worker": lost,
                "started": node.started_at.isoformat(timespec="milliseconds") if node.started_at else None,
                "ended": now.isoformat(timespec="milliseconds"),
                "outcome": "LOST",
                "error": f"worker {lost} lost: its lease expired at {node.lease_expires_at:%Y-%m-%dT%H:%M:%SZ}",
            }
            node.history = [*node.history, entry]
            # The lost try stays visible (its worker kept no record): LOST, with the lease's story.
            store_try(node, Outcome("LOST", "E0LOST", str(entry["error"])), None, now, attempt=node.attempt, status="LOST")
            if node.attempt < node.max_attempts:
                relaunch(node, now)
                relaunched += 1
                log.warning("node %s: worker %s lost (lease expired); launching attempt %s of %s",
                            node.id, lost, node.attempt, node.max_attempts)
            else:
                message = (
                    f"worker {lost} was lost while running launch {node.attempt} of {node.max_attempts} "
                    f"(its lease expired at {node.lease_expires_at:%Y-%m-%dT%H:%M:%SZ}); giving up"
                )
                end_node(node, Outcome(NodeStatus.FAILED, "E0LOST", message), now)
                failed += 1
                log.error("node %s FAILED: %s", node.id, message)
    return relaunched, failed


def resend_unclaimed(now: datetime) -> int:
    """Send again the PREP nodes whose message nobody claimed in time (oldest first, a batch a pass)."""
    sent = 0
    with transaction.atomic():
        # A SUSPENDED workflow's queued node is not sent: its claim would be refused; resume sends it.
        waiting = WorkflowNode.objects.filter(
            status=NodeStatus.PREP, dispatched_at__lt=now - resend_after(1), workflow__status=WorkflowStatus.RUNNING,
        )
        rows = skip_locked(waiting.select_related("workflow").order_by("dispatched_at"))[:BATCH]
        for node in rows:
            if node.dispatched_at is not None and node.dispatched_at > now - resend_after(node.dispatches):
                continue  # its backoff has not run out yet
            node.dispatches += 1
            node.dispatched_at = now
            node.save(update_fields=["dispatches", "dispatched_at"])
            dispatch_on_commit(node)
            sent += 1
    if sent:
        log.warning("recovery: sent %s unclaimed workflow node(s) again", sent)
    return sent


@receiver(broker_lost_messages)
def _resend_after_broker_loss(sender: object, now: datetime, **kwargs: object) -> None:
    """Redis lost its data: every queued node's message went with it; send them all again, oldest first.

    They are marked due at once (a batch is sent now, the rest by the next passes).
    """
    due = WorkflowNode.objects.filter(status=NodeStatus.PREP).update(dispatched_at=now - LONG_AGO)
    if due:
        log.warning("recovery: the broker lost its messages; sending %s queued workflow node(s) again", due)
    resend_unclaimed(now)
