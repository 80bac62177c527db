"""Signals of batches, for apps above them (coordinators) that follow a batch they opened."""

from __future__ import annotations

from django.dispatch import Signal

#: Sent by the batch command that moves a batch to completed, failed or deleted, inside its
#: transaction (the batch row locked), so a receiver's reaction commits exactly when the
#: outcome does. Keyword arguments: `batch` (saved, its new status set) and `previous` (the
#: status it left). A batch may send it more than once (failed, then completed or deleted).
batch_finished = Signal()
