"""Operator views of coordinators: jobs, actions, a grid, a timeline and a Gantt view per job, SLA records and events.

Nothing here edits a status: every page is read-only, and state changes go through the bulk
actions, which call the same domain actions as the API and the CLI (`coordinators.services`),
so permissions and transition rules are checked in one place.

Importing the package registers the model admins (Django's autodiscovery imports it). The
modules import one way: the admins (`job`, `action`, `sla`) use the pages (`grid`, `gantt`,
`timeline`, `bulk`), which get the job admin as a parameter and use only the helpers below
them (`pages`, `display`, `filters`).
"""

from __future__ import annotations

from coordinators.admin.action import CoordinatorActionAdmin
from coordinators.admin.job import CoordinatorJobAdmin
from coordinators.admin.sla import SLAEventAdmin, SLARegistrationAdmin

__all__ = ["CoordinatorActionAdmin", "CoordinatorJobAdmin", "SLAEventAdmin", "SLARegistrationAdmin"]
