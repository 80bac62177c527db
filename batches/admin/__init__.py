"""Operator views of batches: collections and profiles (edited by job admins), batches and jobs (read-only, bulk verbs).

Nothing here writes a batch's or a job's status: verbs go through `batches.services`, which
checks rights and status rules where the API and the CLI check them.
"""

from __future__ import annotations

from batches.admin.batch import BatchAdmin
from batches.admin.config import CollectionAdmin, IngestSettingsAdmin, ProfileAdmin
from batches.admin.job import BatchJobAdmin

__all__ = ["BatchAdmin", "BatchJobAdmin", "CollectionAdmin", "IngestSettingsAdmin", "ProfileAdmin"]
