"""Periodic services for bundles: kick-off times, pause times, and statuses derived from coordinators."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import F, Q

from bundles.choices import BUNDLE_PREP, BUNDLE_TERMINAL, PAUSE_TARGET, UNPAUSE_TARGET
from bundles.commands import BundlePauseXCommand, BundleStatusTransitXCommand
from bundles.commands.lifecycle import start_due_bundles
from bundles.models import BundleAction, BundleJob
from kernel.locking import skip_locked
from statusservice.common import BATCH, queue_once


def kickoffs(now: datetime) -> int:
    """Start the PREP bundles whose kick-off time came."""
    return start_due_bundles(now, BATCH)


def pause_times(now: datetime) -> int:
    """Pause bundles whose pause time came; unpause paused ones whose pause time was reset or moved later."""
    due = Q(pause_time__lte=now, status__in=sorted(PAUSE_TARGET))
    reset = Q(status__in=sorted(UNPAUSE_TARGET)) & (Q(pause_time__isnull=True) | Q(pause_time__gt=now))
    queued = 0
    with transaction.atomic():
        for bundle_id in skip_locked(BundleJob.objects.filter(due | reset)).values_list("pk", flat=True)[:BATCH]:
            queued += queue_once(BundlePauseXCommand(bundle_id=bundle_id))
    return queued


def statuses(now: datetime) -> int:
    """Derive the status of bundles whose coordinators changed (or whose mirror disagrees with them)."""
    started = BundleAction.objects.exclude(bundle__status__in=sorted(BUNDLE_PREP | BUNDLE_TERMINAL))
    stale = started.filter(coord_job__isnull=False).exclude(coord_job__status=F("status"))
    BundleAction.objects.filter(pk__in=list(stale.values_list("pk", flat=True)[:BATCH])).update(dirty=True)
    ids = set(BundleAction.objects.filter(dirty=True).values_list("bundle_id", flat=True).distinct()[:BATCH])
    queued = 0
    with transaction.atomic():
        for bundle_id in sorted(ids):
            queued += queue_once(BundleStatusTransitXCommand(bundle_id=bundle_id))
    return queued
