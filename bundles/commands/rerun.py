"""Rerun a bundle (BundleFunctionalSpec 8): the finished actions of named coordinators, in date ranges."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bundles.choices import BundleStatus
from bundles.commands.base import BundleCommand, send_to_coordinators
from bundles.models import BundleAction, BundleJob
from coordinators.choices import IllegalTransition
from coordinators.commands import CoordRerunXCommand
from coordinators.commands.rerun import (
    NothingToRerun,
    RerunRefused,
    check_rerun_job,
    select_actions,
)
from coordinators.models import CoordinatorAction
from datasets.timeline import format_datetime
from xcommands.errors import PreconditionFailed

NOT_RERUNNABLE = (BundleStatus.KILLED, BundleStatus.FAILED, BundleStatus.PREP, BundleStatus.PREPPAUSED,
                  BundleStatus.PREPSUSPENDED)
#: A rerun bundle runs again; a paused one stays paused (spec 8.2).
RERUN_TARGET = {
    BundleStatus.SUCCEEDED: BundleStatus.RUNNING,
    BundleStatus.DONEWITHERROR: BundleStatus.RUNNINGWITHERROR,
    BundleStatus.SUSPENDED: BundleStatus.RUNNING,
    BundleStatus.SUSPENDEDWITHERROR: BundleStatus.RUNNINGWITHERROR,
}


def names_of(scope: str | None) -> list[str]:
    """`c1, c3` as names."""
    return [name.strip() for name in (scope or "").split(",") if name.strip()]


def plan_rerun(bundle: BundleJob, coordinators: str | None, dates: str | None) -> dict[str, tuple[str, list[CoordinatorAction]]]:
    """Per coordinator to rerun: its date scope and its actions in it (RerunRefused or IllegalTransition if none).

    `-coordinator` names coordinators (all when absent) and `-date` dates (each coordinator's
    whole span when absent); at least one must be given. A coordinator with nothing in the
    dates is passed over; one whose actions there have not all finished refuses the rerun.
    """
    if bundle.status in NOT_RERUNNABLE:
        raise IllegalTransition(f"cannot rerun bundle job {bundle.id}: it is {bundle.status}")
    names, dates = names_of(coordinators), (dates or "").strip()
    if not names and not dates:
        raise RerunRefused("name the coordinators (-coordinator) or the dates (-date) to rerun")
    actions = {a.coord_name: a for a in BundleAction.objects.filter(bundle=bundle).select_related("coord_job")}
    unknown = [name for name in names if name not in actions]
    if unknown:
        raise RerunRefused(f"bundle {bundle.id} has no coordinator {unknown[0]!r} (it has {', '.join(sorted(actions))})")
    plan: dict[str, tuple[str, list[CoordinatorAction]]] = {}
    for name in names or sorted(actions):
        job = actions[name].coord_job
        if job is None:
            continue  # never submitted: nothing to rerun
        scope = dates or f"{format_datetime(job.start_time)}::{format_datetime(job.end_time)}"
        try:
            check_rerun_job(job)
            plan[name] = (scope, select_actions(job, "date", scope))
        except NothingToRerun:
            continue
        except (RerunRefused, IllegalTransition) as exc:
            raise RerunRefused(f"coordinator {name!r}: {exc}") from None
    if not plan:
        raise RerunRefused(f"no finished action of bundle {bundle.id} falls in what was named")
    return plan


@dataclass
class BundleRerunXCommand(BundleCommand):
    """Queue a date rerun on each named coordinator; the bundle runs again."""

    bundle_id: str
    coordinators: str = ""
    dates: str = ""
    refresh: bool = False
    nocleanup: bool = False
    scopes: dict[str, str] = field(default_factory=dict)

    def to_params(self) -> dict[str, Any]:
        """The request, not the plan computed under the key."""
        return {"bundle_id": self.bundle_id, "coordinators": self.coordinators, "dates": self.dates,
                "refresh": self.refresh, "nocleanup": self.nocleanup}

    def verify_precondition(self) -> None:
        """Planned again under the key (coordinators may have moved since the request)."""
        try:
            self.scopes = {name: scope for name, (scope, _) in plan_rerun(self.bundle, self.coordinators, self.dates).items()}
        except (RerunRefused, IllegalTransition) as exc:
            raise PreconditionFailed(str(exc)) from None

    def execute(self) -> dict[str, Any]:
        """CoordRerun (by date) and its acknowledgement on each coordinator's key."""
        actions = self.actions()
        by_coord = {a.coord_job_id: a.coord_name for a in actions if a.coord_job_id}
        sent = send_to_coordinators(
            actions,
            lambda coord_id: CoordRerunXCommand(
                job_id=coord_id, rerun_type="date", scope=self.scopes[by_coord[coord_id]],
                refresh=self.refresh, nocleanup=self.nocleanup,
            ),
            when=lambda action: action.coord_name in self.scopes,
        )
        if self.bundle.status in RERUN_TARGET:
            self.bundle.transition_to(RERUN_TARGET[BundleStatus(self.bundle.status)])
        self.bundle.pending = True
        self.bundle.ended_at = None
        self.bundle.save(update_fields=["status", "pending", "ended_at"])
        return {"status": self.bundle.status, "coordinators": sent, "scopes": self.scopes}
