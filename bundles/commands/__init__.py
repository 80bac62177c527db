"""Bundle commands (one class per verb), keyed by the bundle id; coordinator submissions by the coordinator's."""

from __future__ import annotations

from bundles.commands.base import BundleActionDoneXCommand
from bundles.commands.change import BundleChangeXCommand
from bundles.commands.control import (
    BundleKillXCommand,
    BundlePauseXCommand,
    BundleResumeXCommand,
    BundleSuspendXCommand,
)
from bundles.commands.lifecycle import (
    BundleCoordSubmitXCommand,
    BundleStartXCommand,
    BundleStatusTransitXCommand,
)
from bundles.commands.rerun import BundleRerunXCommand

__all__ = [
    "BundleActionDoneXCommand",
    "BundleChangeXCommand",
    "BundleCoordSubmitXCommand",
    "BundleKillXCommand",
    "BundlePauseXCommand",
    "BundleRerunXCommand",
    "BundleResumeXCommand",
    "BundleStartXCommand",
    "BundleStatusTransitXCommand",
    "BundleSuspendXCommand",
]
