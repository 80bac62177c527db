"""A bundle's status from its coordinators (Oozie's BundleStatusUpdate and BundleStatusTransit).

The mirror: when a coordinator job of a bundle changes status, its bundle action takes the
new status in the same transaction (the coordinator's `save()` sends the signal), and is
marked dirty. No update can be lost between the two: they commit or roll back together.

The derivation (`derive_status`, pure) follows Oozie's BundleStatusTransitXCommand: with no
verb pending and every coordinator ended, the bundle ends (all SUCCEEDED, all KILLED or all
FAILED alike, else DONEWITHERROR); a paused or suspended bundle keeps that status, WITHERROR
when a coordinator has an error; otherwise RUNNING, or RUNNINGWITHERROR when one failed, was
killed, or runs with errors. IGNORED coordinators do not count.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from bundles.choices import ACTION_ERRORS, ACTION_TERMINAL, BUNDLE_PREP, BundleStatus
from bundles.models import BundleAction
from coordinators.choices import JobStatus

B, J = BundleStatus, JobStatus


def mirror_coordinator_status(sender: Any, job: Any, previous: str | None, **kwargs: Any) -> None:
    """A bundle's coordinator changed status: its bundle action follows, in the same transaction."""
    if not job.bundle_id:
        return
    BundleAction.objects.filter(bundle_id=job.bundle_id, coord_job_id=job.id).update(
        status=job.status, dirty=True, last_modified=timezone.now()
    )


def acknowledge(action_id: str) -> int:
    """One verb the bundle sent a coordinator is done: pending goes down by one (never below 0)."""
    return BundleAction.objects.filter(pk=action_id).update(
        pending=Greatest(F("pending") - 1, 0), dirty=True, last_modified=timezone.now()
    )


def derive_status(current: str, statuses: Iterable[str], *, pending: bool) -> str | None:
    """The status a started bundle's coordinators imply (None: keep the current one)."""
    if current in BUNDLE_PREP or current in (B.KILLED, B.FAILED):
        return None
    counts = Counter(status for status in statuses if status != J.IGNORED)
    total = sum(counts.values())
    if not pending and sum(counts[s] for s in ACTION_TERMINAL) == total:
        if counts[J.SUCCEEDED] == total:
            return B.SUCCEEDED
        if counts[J.KILLED] == total:
            return B.KILLED
        if counts[J.FAILED] == total:
            return B.FAILED
        return B.DONEWITHERROR
    ended_badly = bool(counts[J.KILLED] or counts[J.FAILED] or counts[J.DONEWITHERROR])
    # Paused: the bundle was paused, or every coordinator paused by itself (bottom-up).
    if current in (B.PAUSED, B.PAUSEDWITHERROR):
        with_error = ended_badly or bool(
            counts[J.SUSPENDEDWITHERROR] or counts[J.RUNNINGWITHERROR] or counts[J.PAUSEDWITHERROR]
        )
        return B.PAUSEDWITHERROR if with_error else B.PAUSED
    # Not while verbs are pending: right after a pause time is reset, the coordinators are still
    # PAUSED until their change lands, and the bundle must not be paused again meanwhile.
    if not pending and total and counts[J.PAUSED] == total:
        return B.PAUSED
    if not pending and counts[J.PAUSEDWITHERROR] and counts[J.PAUSED] + counts[J.PAUSEDWITHERROR] == total:
        return B.PAUSEDWITHERROR
    # Suspended: the bundle was suspended, or its coordinators were (bottom-up).
    if current in (B.SUSPENDED, B.SUSPENDEDWITHERROR):
        with_error = ended_badly or bool(counts[J.SUSPENDEDWITHERROR] or counts[J.PAUSEDWITHERROR])
        return B.SUSPENDEDWITHERROR if with_error else B.SUSPENDED
    if (not pending and counts[J.SUSPENDED]) or counts[J.SUSPENDEDWITHERROR]:
        if counts[J.SUSPENDED] + counts[J.SUCCEEDED] == total:
            return B.SUSPENDED
        suspended_or_ended = counts[J.SUSPENDEDWITHERROR] + counts[J.SUSPENDED] + sum(counts[s] for s in ACTION_TERMINAL)
        if suspended_or_ended == total:
            return B.SUSPENDEDWITHERROR
    return B.RUNNINGWITHERROR if any(counts[s] for s in ACTION_ERRORS) else B.RUNNING
