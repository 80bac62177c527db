"""Suspend, resume, kill and pause: the bundle changes status and sends the verb to its coordinators.

Seed 000's table: suspend and resume go to the coordinators; kill kills them all; pause and
unpause (its pause time reached or reset) change only the bundle, the coordinators having
been given the pause time by `-change` and pausing themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from bundles.choices import (
    BUNDLE_TERMINAL,
    PAUSE_TARGET,
    RESUME_TARGET,
    SUSPEND_TARGET,
    UNPAUSE_TARGET,
    BundleStatus,
)
from bundles.commands.base import BundleCommand, send_to_coordinators
from coordinators.choices import JOB_TERMINAL, IllegalTransition, JobStatus
from coordinators.commands import CoordKillXCommand, CoordResumeXCommand, CoordSuspendXCommand
from coordinators.commands.control import RESUME_TARGET as COORD_RESUME
from coordinators.commands.control import SUSPEND_TARGET as COORD_SUSPEND
from xcommands.errors import PreconditionFailed


@dataclass
class BundleSuspendXCommand(BundleCommand):
    """Suspend the bundle and every coordinator that can be suspended."""

    bundle_id: str

    def verify_precondition(self) -> None:
        """PREP, RUNNING(WITHERROR) and PAUSED(WITHERROR) bundles suspend."""
        if self.bundle.status not in SUSPEND_TARGET:
            raise PreconditionFailed(f"bundle {self.bundle_id} is {self.bundle.status}; it cannot be suspended")

    def execute(self) -> dict[str, Any]:
        """Move to the suspended status of the current one; queue CoordSuspend for each coordinator."""
        self.bundle.transition_to(SUSPEND_TARGET[BundleStatus(self.bundle.status)])
        sent = send_to_coordinators(
            self.actions(), lambda coord_id: CoordSuspendXCommand(job_id=coord_id),
            when=lambda action: action.status in COORD_SUSPEND,
        )
        self.bundle.pending = bool(sent) or self.bundle.pending
        self.bundle.save(update_fields=["status", "pending"])
        return {"status": self.bundle.status, "coordinators": sent}


@dataclass
class BundleResumeXCommand(BundleCommand):
    """Resume the bundle and every suspended coordinator."""

    bundle_id: str

    def verify_precondition(self) -> None:
        """Only suspended bundles resume."""
        if self.bundle.status not in RESUME_TARGET:
            raise PreconditionFailed(f"bundle {self.bundle_id} is {self.bundle.status}; it is not suspended")

    def execute(self) -> dict[str, Any]:
        """Move back; queue CoordResume for each suspended coordinator."""
        self.bundle.transition_to(RESUME_TARGET[BundleStatus(self.bundle.status)])
        sent = send_to_coordinators(
            self.actions(), lambda coord_id: CoordResumeXCommand(job_id=coord_id),
            when=lambda action: action.status in COORD_RESUME,
        )
        self.bundle.pending = bool(sent) or self.bundle.pending
        self.bundle.save(update_fields=["status", "pending"])
        return {"status": self.bundle.status, "coordinators": sent}


@dataclass
class BundleKillXCommand(BundleCommand):
    """Kill the bundle (from any status but an ended one) and every coordinator it has or would submit."""

    bundle_id: str

    def verify_precondition(self) -> None:
        """An ended bundle cannot be killed."""
        if self.bundle.status in BUNDLE_TERMINAL:
            raise PreconditionFailed(f"bundle {self.bundle_id} is already {self.bundle.status}")

    def execute(self) -> dict[str, Any]:
        """KILLED now; CoordKill queued for live coordinators; submissions still queued will submit nothing."""
        actions = self.actions()
        sent = send_to_coordinators(
            actions, lambda coord_id: CoordKillXCommand(job_id=coord_id),
            when=lambda action: action.status not in JOB_TERMINAL,
        )
        for action in actions:
            if action.coord_job_id is None and action.status not in JOB_TERMINAL:
                action.status, action.dirty = JobStatus.KILLED, True
                action.save(update_fields=["status", "dirty"])
        self.bundle.transition_to(BundleStatus.KILLED)
        self.bundle.pending = bool(sent)
        self.bundle.ended_at = timezone.now()
        self.bundle.save(update_fields=["status", "pending", "ended_at"])
        return {"status": self.bundle.status, "coordinators": sent}


@dataclass
class BundlePauseXCommand(BundleCommand):
    """Pause a bundle whose pause time came; unpause one whose pause time was reset or moved later."""

    bundle_id: str

    def verify_precondition(self) -> None:
        """Only when the pause time says the status should change."""
        if self._target() is None:
            raise PreconditionFailed(f"bundle {self.bundle_id} is {self.bundle.status}; its pause time changes nothing")

    def _target(self) -> str | None:
        pause, now = self.bundle.pause_time, timezone.now()
        status = BundleStatus(self.bundle.status)
        if pause is not None and pause <= now and status in PAUSE_TARGET:
            return PAUSE_TARGET[status]
        if (pause is None or pause > now) and status in UNPAUSE_TARGET:
            return UNPAUSE_TARGET[status]
        return None

    def execute(self) -> dict[str, str]:
        """PREP -> PREPPAUSED, RUNNING(WITHERROR) -> PAUSED(WITHERROR), and back."""
        target = self._target()
        if target is None:  # checked in verify_precondition
            raise IllegalTransition(f"bundle {self.bundle_id}: nothing to pause")
        self.bundle.transition_to(target)
        self.bundle.save(update_fields=["status"])
        return {"status": self.bundle.status}


def check_verb(status: str, verb: str, bundle_id: str) -> None:
    """Refuse at once (before queueing) a verb the bundle's status does not allow."""
    allowed = {
        "kill": lambda s: s not in BUNDLE_TERMINAL,
        "suspend": lambda s: s in SUSPEND_TARGET,
        "resume": lambda s: s in RESUME_TARGET,
    }[verb]
    if not allowed(status):
        raise IllegalTransition(f"cannot {verb} bundle job {bundle_id}: it is {status}")
