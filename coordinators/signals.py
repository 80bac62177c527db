"""Signals of coordinator jobs, for apps above them (bundles) that must follow their status."""

from __future__ import annotations

from django.dispatch import Signal

#: Sent by `CoordinatorJob.save()` when the job's status changed, inside the saving transaction.
#: Keyword arguments: `job` (saved) and `previous` (the status it had when loaded, None if new).
coordinator_status_changed = Signal()
