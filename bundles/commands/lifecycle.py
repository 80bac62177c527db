"""Start (user START or kick-off time), submitting each coordinator, and deriving the bundle's status."""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass, replace
from typing import Any

from django.db import transaction
from django.utils import timezone

from bundles.choices import (
    BUNDLE_DERIVED_TRANSITIONS,
    BUNDLE_PREP,
    BUNDLE_TERMINAL,
    BundleStatus,
)
from bundles.commands.base import BundleActionDoneXCommand, BundleCommand, send_to_coordinators
from bundles.definitions import parse_bundle, resolve_bundle, run_configuration
from bundles.models import BundleAction, BundleJob
from bundles.status import derive_status
from coordinators.choices import JOB_TERMINAL, JobStatus
from coordinators.commands import CoordKillXCommand, CoordStartXCommand, CoordSuspendXCommand
from coordinators.models import next_job_id
from coordinators.preparation import prepare_coordinator
from coordinators.services import store_coordinator
from kernel.locking import skip_locked
from kernel.secrets import mask_text
from kernel.statemachine import transition_path
from oozie.definitions import DefinitionError
from xcommands.base import XCommand
from xcommands.errors import PreconditionFailed
from xcommands.queue import enqueue, enqueue_many

log = logging.getLogger(__name__)


def resolved_bundle(bundle: BundleJob) -> Any:
    """The bundle's definition resolved again from what was stored at submission (deterministic).

    Starting a bundle of N coordinators resolves it N + 1 times (each submission, on its own
    key); a bundle of 200 is a 200-element XML, so each process keeps the last few results.
    """
    return _resolved(bundle.id, bundle.definition, json.dumps(bundle.configuration, sort_keys=True))


@functools.lru_cache(maxsize=16)
def _resolved(bundle_id: str, definition: str, configuration: str) -> Any:
    # Keyed by content: a bundle's definition and properties never change after submission,
    # but the key does not rely on it. Callers only read the result.
    return resolve_bundle(parse_bundle(definition, f"{bundle_id}.xml"), json.loads(configuration))


@dataclass
class BundleStartXCommand(BundleCommand):
    """PREP -> RUNNING: one bundle action per enabled coordinator, each submitted by its own command."""

    bundle_id: str

    def verify_precondition(self) -> None:
        """Only a PREP bundle starts (the kick-off service and a user START may both ask)."""
        if self.bundle.status != BundleStatus.PREP:
            raise PreconditionFailed(f"bundle {self.bundle_id} is {self.bundle.status}, not PREP")

    def execute(self) -> dict[str, Any]:
        """Create the actions, queue each coordinator's submission on its own (pre-allocated) key."""
        resolved = resolved_bundle(self.bundle)
        now = timezone.now()
        actions, commands = [], []
        for coordinator in resolved.enabled:
            coord_id = next_job_id()
            actions.append(BundleAction(
                id=f"{self.bundle_id}_{coordinator.name}", bundle=self.bundle, coord_name=coordinator.name,
                planned_coord_id=coord_id, status=JobStatus.PREP, critical=coordinator.critical, pending=1,
            ))
            commands.append(BundleCoordSubmitXCommand(self.bundle_id, coordinator.name, coord_id))
        if not actions:  # every coordinator disabled (Oozie: E1318, the bundle fails)
            self.bundle.transition_to(BundleStatus.RUNNING)
            self.bundle.transition_to(BundleStatus.FAILED)
            self.bundle.pending = False
            self.bundle.ended_at = now
            self.bundle.save(update_fields=["status", "pending", "ended_at"])
            return {"status": self.bundle.status, "coordinators": 0}
        BundleAction.objects.bulk_create(actions)
        enqueue_many(commands)
        self.bundle.transition_to(BundleStatus.RUNNING)
        self.bundle.started_at = now
        self.bundle.pending = True
        self.bundle.save(update_fields=["status", "started_at", "pending"])
        return {"status": self.bundle.status, "coordinators": len(actions)}


@dataclass
class BundleCoordSubmitXCommand(XCommand):
    """Submit (and start) one coordinator of a started bundle, under the coordinator's own key.

    It submits what the bundle validated and stored at submission, with the bundle's
    properties under the coordinator's own `<configuration>`, as the bundle's owner. The
    bundle as it is now decides: killed, nothing is submitted; suspended, the coordinator is
    suspended right after its start; paused or ended early, it takes the bundle's times.
    """

    bundle_id: str
    coord_name: str
    coord_job_id: str

    def job_key(self) -> str:
        """The new coordinator's key: its own commands (start, verbs) queue behind this one."""
        return self.coord_job_id

    def load_state(self) -> None:
        """Lock the bundle action (the bundle row is only read)."""
        self.bundle = BundleJob.objects.select_related("owner").get(pk=self.bundle_id)
        self.action = BundleAction.objects.select_for_update().get(bundle_id=self.bundle_id, coord_name=self.coord_name)

    def verify_precondition(self) -> None:
        """A coordinator is submitted once."""
        if self.action.coord_job_id is not None:
            raise PreconditionFailed(f"coordinator {self.coord_name} of {self.bundle_id} is already {self.action.coord_job_id}")

    def execute(self) -> dict[str, Any]:
        """Submit, or record why not (the status service then decides what it means for the bundle)."""
        action = self.action
        action.pending, action.dirty = 0, True
        if self.bundle.status in (BundleStatus.KILLED, BundleStatus.FAILED) or action.status == JobStatus.KILLED:
            action.status = JobStatus.KILLED
            action.save(update_fields=["status", "pending", "dirty"])
            return {"submitted": False, "reason": f"bundle {self.bundle.status}"}
        try:
            resolved = resolved_bundle(self.bundle)
            coordinator = next(c for c in resolved.coordinators if c.name == self.coord_name)
            snapshot = self.bundle.applications[self.coord_name]
            if snapshot.get("app_path"):  # a relative <app-path> as resolved at submission
                coordinator = replace(coordinator, app_path=snapshot["app_path"])
            owner = self.bundle.owner
            configuration = run_configuration(resolved, coordinator, user=owner.get_username(), bundle_id=self.bundle_id)
            prepared = prepare_coordinator(
                snapshot["definition"], configuration, owner=owner, app_dir=snapshot.get("app_dir") or None,
                includes=snapshot.get("includes", {}),
            )
        except (DefinitionError, KeyError, StopIteration, ValueError) as exc:
            action.status = JobStatus.FAILED
            action.error_message = f"coordinator {self.coord_name!r} could not be submitted: {exc}"[:4000]
            action.save(update_fields=["status", "pending", "dirty", "error_message"])
            log.warning("bundle %s: %s", self.bundle_id, mask_text(action.error_message, self.bundle.configuration))
            return {"submitted": False, "reason": action.error_message}
        fields = prepared.fields
        if self.bundle.end_time is not None and fields["start_time"] < self.bundle.end_time < fields["end_time"]:
            fields["end_time"] = self.bundle.end_time
        job = store_coordinator(
            prepared, owner=owner, start=False, job_id=self.coord_job_id, bundle_id=self.bundle_id,
            pause_time=self.bundle.pause_time, pending=True,  # pending: its start is under way (below)
        )
        # Started here, under the coordinator's key that this command holds: exactly what a queued
        # CoordStartXCommand would do next on this key, minus a command (claim, doorbell, and a wait
        # behind every other coordinator's) per coordinator: a bundle of 200 starts in half the time.
        try:
            started = CoordStartXCommand(job_id=job.id).run()
        except PreconditionFailed as exc:  # cannot happen: the job was stored PREP in this transaction
            raise RuntimeError(f"coordinator {job.id} did not start: {exc}") from exc
        action.coord_job = job
        action.status = started["status"]
        action.save(update_fields=["coord_job", "status", "pending", "dirty"])
        if self.bundle.status in (BundleStatus.SUSPENDED, BundleStatus.SUSPENDEDWITHERROR):
            # It started (above); now it suspends as its bundle is, on its own key.
            enqueue(CoordSuspendXCommand(job_id=job.id))
            enqueue(BundleActionDoneXCommand(job.id, action.pk))
            action.pending = 1
            action.save(update_fields=["pending"])
        return {"submitted": True, "coordinator": job.id}


@dataclass
class BundleStatusTransitXCommand(BundleCommand):
    """Derive the bundle's status from its coordinators (Oozie's BundleStatusTransitXCommand).

    Also repairs a mirror that disagrees with its coordinator (none should: they change in one
    transaction), and fails the bundle, killing the rest, when a critical coordinator could
    not be submitted.
    """

    bundle_id: str

    def verify_precondition(self) -> None:
        """Only started bundles derive their status from their coordinators."""
        if self.bundle.status in BUNDLE_PREP:
            raise PreconditionFailed(f"bundle {self.bundle_id} is {self.bundle.status}: it has no coordinators yet")

    def execute(self) -> dict[str, Any]:
        """Reconcile, derive, store; clear the dirty marks of the actions read."""
        bundle, now = self.bundle, timezone.now()
        actions = self.actions()
        repaired = 0
        for action in actions:
            if action.coord_job is not None and action.status != action.coord_job.status:
                log.warning("bundle %s: action %s said %s, its coordinator is %s; repaired",
                            bundle.id, action.coord_name, action.status, action.coord_job.status)
                action.status = action.coord_job.status
                repaired += 1
        failed_critical = [a for a in actions if a.critical and a.coord_job_id is None and a.status == JobStatus.FAILED]
        if failed_critical and bundle.status not in BUNDLE_TERMINAL:
            # A critical coordinator could not be submitted: the bundle FAILS and the others are killed.
            send_to_coordinators(
                actions, lambda coord_id: CoordKillXCommand(job_id=coord_id),
                when=lambda a: a.coord_job is not None and a.coord_job.status not in JOB_TERMINAL,
            )
            for action in actions:
                if action.coord_job_id is None and action.status == JobStatus.PREP:
                    action.status = JobStatus.KILLED  # its submission, still queued, will not submit it
            self._move(BundleStatus.FAILED, now)
            log.error("bundle %s FAILED: critical coordinator %s could not be submitted",
                      bundle.id, failed_critical[0].coord_name)
        pending = any(action.pending > 0 for action in actions)
        target = derive_status(bundle.status, [a.status for a in actions], pending=pending)
        if target is not None and target != bundle.status:
            self._move(target, now)
        bundle.pending = pending
        bundle.save(update_fields=["status", "pending", "ended_at"])
        for action in actions:
            action.dirty = False
        BundleAction.objects.bulk_update(actions, ["status", "dirty"])
        return {"status": bundle.status, "pending": pending, "repaired": repaired}

    def _move(self, target: str, now: Any) -> None:
        path = transition_path(BUNDLE_DERIVED_TRANSITIONS, self.bundle.status, target)
        if not path:
            log.warning("bundle %s: no way from %s to %s; left as it is", self.bundle.id, self.bundle.status, target)
            return
        self.bundle.status = path[-1]
        if self.bundle.status in BUNDLE_TERMINAL:
            self.bundle.ended_at = now


def start_due_bundles(now: Any, limit: int) -> int:
    """Queue a start for PREP bundles whose kick-off time came (the kick-off service)."""
    with transaction.atomic():
        ids = list(
            skip_locked(BundleJob.objects.filter(status=BundleStatus.PREP, pending=False, kick_off_time__lte=now))
            .order_by("kick_off_time").values_list("pk", flat=True)[:limit]
        )
        BundleJob.objects.filter(pk__in=ids).update(pending=True, last_modified=now)
        enqueue_many([BundleStartXCommand(bundle_id) for bundle_id in ids])
    return len(ids)
