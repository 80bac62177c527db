"""The recovery sweep: return expired leases to the queue and re-ring heads whose doorbell was lost.

Driven by celery beat every COMMAND_SWEEP_SECONDS. It scans only what is due (indexes on
`lease_expires_at` and `wake_at`), is idempotent, and is safe to run twice at once: every
write is conditional on the row's fencing token or wake time, and rows are taken with
SKIP LOCKED where the database has it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from kernel.locking import skip_locked
from kernel.lookups import in_constants
from xcommands.broker import broker_lost_data
from xcommands.choices import LEASED_STATUSES, TERMINAL_STATUSES, CommandStatus
from xcommands.models import Command
from xcommands.queue import ring, ring_stale_after
from xcommands.signals import broker_lost_messages

log = logging.getLogger(__name__)

BATCH = 500


@dataclass(frozen=True)
class SweepReport:
    """What one sweep did."""

    leases_expired: int
    rung: int


def expire_leases(now: datetime) -> int:
    """Give commands whose lease ran out back to the queue, bumping their fencing token.

    A RUNNING command returns to PENDING (the attempt counts), or to rollback when that
    was its last attempt; a ROLLING_BACK command keeps its status and its rollback runs
    again. The old holder can no longer commit: its token is stale.
    """
    count = 0
    with transaction.atomic():
        rows = list(
            skip_locked(
                Command.objects.filter(in_constants("status", LEASED_STATUSES), lease_expires_at__lt=now)
                .order_by("lease_expires_at")
            ).values("pk", "status", "fencing_token", "attempts", "max_retries", "lease_owner", "history")[:BATCH]
        )
        for row in rows:
            note = {
                "attempt": row["attempts"],
                "phase": "rollback" if row["status"] == CommandStatus.ROLLING_BACK else "execute",
                "outcome": "lease expired",
                "worker": row["lease_owner"],
                "at": now.isoformat(timespec="milliseconds"),
            }
            common: dict[str, Any] = {
                "fencing_token": F("fencing_token") + 1,
                "lease_owner": "",
                "lease_expires_at": None,
                "wake_at": now,
                "history": [*(row["history"] or []), note],
            }
            if row["status"] == CommandStatus.RUNNING and row["attempts"] > row["max_retries"]:
                common["status"] = CommandStatus.ROLLING_BACK
                common["last_error"] = (
                    f"worker {row['lease_owner']} lost (lease expired) during the last attempt"
                )
            elif row["status"] == CommandStatus.RUNNING:
                common["status"] = CommandStatus.PENDING
                common["not_before"] = now
                common["last_error"] = f"worker {row['lease_owner']} lost (lease expired)"
            count += Command.objects.filter(
                pk=row["pk"], fencing_token=row["fencing_token"], status=row["status"]
            ).update(**common)
    if count:
        log.warning("recovery: %s expired command lease(s) returned to the queue", count)
    return count


def ring_due(now: datetime) -> int:
    """Ring every waiting head whose wake time has come, longest-waiting (least recently served) first."""
    stale = ring_stale_after()
    due = (
        Command.objects.filter(
            wake_at__lte=now,
            status__in=(CommandStatus.PENDING, CommandStatus.ROLLING_BACK),
            lease_expires_at__isnull=True,
        )
        # Longest-waiting heads first: the least recently served keys.
        .order_by("wake_at")
    )
    rung = 0
    with transaction.atomic():
        rows = list(skip_locked(due).values("pk", "name", "key", "params", "wake_at")[:BATCH])
        for row in rows:
            moved = Command.objects.filter(pk=row["pk"], wake_at=row["wake_at"]).update(
                wake_at=now + stale
            )
            if moved:
                rung += 1
                transaction.on_commit(
                    partial(ring, row["pk"], row["name"], {"key": row["key"], "params": row["params"]})
                )
    return rung


def rewake_all(now: datetime) -> int:
    """Make every waiting head due now (their doorbells were lost with Redis); ring_due rings them."""
    return Command.objects.filter(
        wake_at__isnull=False,
        status__in=(CommandStatus.PENDING, CommandStatus.ROLLING_BACK),
        lease_expires_at__isnull=True,
        not_before__lte=now,
    ).update(wake_at=now)


def give_up_lease(command_id: int, owner: str, now: datetime) -> bool:
    """The lease of a command whose owner (a pool process of this machine, `<node>:<pid>`) died, expired
    now; whether one was.

    Only while that owner still holds it; the sweep then returns it to its queue (or retries it)
    as for any expired lease, fencing tokens unchanged.
    """
    expired = Command.objects.filter(
        pk=command_id, status__in=sorted(LEASED_STATUSES), lease_owner=owner,
    ).update(lease_expires_at=now - timedelta(microseconds=1))
    if expired:
        log.warning("command %s: its owner %s died; lease given up for a retry now", command_id, owner)
    return bool(expired)


def sweep(now: datetime | None = None) -> SweepReport:
    """One pass of the recovery service.

    When Redis restarted empty or was flushed (`broker_lost_data`), every waiting head is
    rung at once instead of when its `wake_at` comes, and other apps are told
    (`broker_lost_messages`) so they send their own lost messages again.
    """
    now = now or timezone.now()
    expired = expire_leases(now)
    if broker_lost_data(now):
        rewoken = rewake_all(now)
        log.warning("recovery: the broker lost its data; ringing %s waiting command(s) again", rewoken)
        broker_lost_messages.send(sender=sweep, now=now)
    rung = ring_due(now)
    return SweepReport(leases_expired=expired, rung=rung)


def purge_finished(now: datetime, older_than: timedelta, batch: int = 5000) -> int:
    """Delete finished commands older than the retention window, in bounded batches.

    Only terminal commands go; key rows stay (their sequence numbers must never restart
    while an enqueue could be upserting them).
    """
    cutoff = now - older_than
    deleted = 0
    while True:
        ids = list(
            Command.objects.filter(status__in=TERMINAL_STATUSES, finished_at__lt=cutoff)
            .order_by("finished_at")
            .values_list("pk", flat=True)[:batch]
        )
        if not ids:
            return deleted
        deleted += Command.objects.filter(pk__in=ids, status__in=TERMINAL_STATUSES).delete()[0]
