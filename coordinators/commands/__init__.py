"""Coordinator commands (one class per verb), keyed by the coordinator job id."""

from __future__ import annotations

from coordinators.commands.actions import (
    CoordActionInputCheckXCommand,
    CoordActionReadyXCommand,
    CoordActionStatusXCommand,
    CoordJobStatusXCommand,
)
from coordinators.commands.actions_kill import CoordActionsKillXCommand
from coordinators.commands.change import CoordChangeXCommand, CoordPauseXCommand
from coordinators.commands.control import (
    CoordKillXCommand,
    CoordResumeXCommand,
    CoordSuspendXCommand,
)
from coordinators.commands.ignore import CoordActionsIgnoreXCommand, CoordIgnoreXCommand
from coordinators.commands.lifecycle import CoordMaterializeXCommand, CoordStartXCommand
from coordinators.commands.rerun import CoordRerunXCommand
from coordinators.commands.update import CoordUpdateXCommand

__all__ = [
    "CoordActionInputCheckXCommand",
    "CoordActionsIgnoreXCommand",
    "CoordActionsKillXCommand",
    "CoordActionReadyXCommand",
    "CoordActionStatusXCommand",
    "CoordChangeXCommand",
    "CoordIgnoreXCommand",
    "CoordJobStatusXCommand",
    "CoordKillXCommand",
    "CoordMaterializeXCommand",
    "CoordPauseXCommand",
    "CoordRerunXCommand",
    "CoordResumeXCommand",
    "CoordStartXCommand",
    "CoordSuspendXCommand",
    "CoordUpdateXCommand",
]
