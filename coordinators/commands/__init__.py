"""Coordinator commands (one class per verb), keyed by the coordinator job id."""

from __future__ import annotations

from coordinators.commands.lifecycle import CoordMaterializeXCommand, CoordStartXCommand

__all__ = ["CoordMaterializeXCommand", "CoordStartXCommand"]
