"""Coordinator commands (one class per verb), keyed by the coordinator job id."""

from __future__ import annotations

from coordinators.commands.actions import (
    CoordActionInputCheckXCommand,
    CoordActionReadyXCommand,
    CoordActionStatusXCommand,
    CoordJobStatusXCommand,
)
from coordinators.commands.control import (
    CoordKillXCommand,
    CoordResumeXCommand,
    CoordSuspendXCommand,
)
from coordinators.commands.lifecycle import CoordMaterializeXCommand, CoordStartXCommand

__all__ = [
    "CoordActionInputCheckXCommand",
    "CoordActionReadyXCommand",
    "CoordActionStatusXCommand",
    "CoordJobStatusXCommand",
    "CoordKillXCommand",
    "CoordMaterializeXCommand",
    "CoordResumeXCommand",
    "CoordStartXCommand",
    "CoordSuspendXCommand",
]
