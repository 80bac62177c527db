"""Command statuses: one enum, its active and terminal groups, and the transition table."""

from __future__ import annotations

from django.db import models


class CommandStatus(models.TextChoices):
    """Where a queued command is in its life."""

    PENDING = "PENDING", "pending"  # waiting to run (first time or for a retry)
    RUNNING = "RUNNING", "running"  # claimed by a worker holding a lease
    ROLLING_BACK = "ROLLING_BACK", "rolling back"  # last attempt failed; rollback under a lease
    PARKED = "PARKED", "parked"  # double fault: rollback failed; an operator must act
    SUCCEEDED = "SUCCEEDED", "succeeded"
    SKIPPED = "SKIPPED", "skipped"  # precondition failed: logged, not an error
    FAILED = "FAILED", "failed"  # failed and rolled back
    CANCELLED = "CANCELLED", "cancelled"  # skipped by an operator


# Statuses that hold their key: the head of a key is its lowest-seq active command.
ACTIVE_STATUSES: frozenset[str] = frozenset(
    {CommandStatus.PENDING, CommandStatus.RUNNING, CommandStatus.ROLLING_BACK, CommandStatus.PARKED}
)
# Statuses under a lease: at most one per key (a partial unique index enforces it).
LEASED_STATUSES: frozenset[str] = frozenset({CommandStatus.RUNNING, CommandStatus.ROLLING_BACK})
TERMINAL_STATUSES: frozenset[str] = frozenset(
    {CommandStatus.SUCCEEDED, CommandStatus.SKIPPED, CommandStatus.FAILED, CommandStatus.CANCELLED}
)

TRANSITIONS: dict[str, frozenset[str]] = {
    CommandStatus.PENDING: frozenset({CommandStatus.RUNNING, CommandStatus.CANCELLED}),
    CommandStatus.RUNNING: frozenset(
        {
            CommandStatus.SUCCEEDED,
            CommandStatus.SKIPPED,
            CommandStatus.PENDING,  # retry, or lease expired and returned to the queue
            CommandStatus.ROLLING_BACK,
        }
    ),
    CommandStatus.ROLLING_BACK: frozenset(
        {
            CommandStatus.FAILED,
            CommandStatus.PARKED,
            CommandStatus.ROLLING_BACK,  # lease expired mid-rollback: the rollback runs again
        }
    ),
    CommandStatus.PARKED: frozenset({CommandStatus.PENDING, CommandStatus.CANCELLED}),
    CommandStatus.SUCCEEDED: frozenset(),
    CommandStatus.SKIPPED: frozenset(),
    CommandStatus.FAILED: frozenset(),
    CommandStatus.CANCELLED: frozenset(),
}


def can_transition(current: str, target: str) -> bool:
    """True when the table allows moving from current to target."""
    return target in TRANSITIONS.get(current, frozenset())
