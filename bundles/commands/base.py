"""Base of bundle commands (keyed by the bundle id, its row locked) and the verbs they send coordinators."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from bundles.models import BundleAction, BundleJob
from bundles.status import acknowledge
from coordinators.models import CoordinatorJob
from xcommands.base import XCommand
from xcommands.queue import enqueue_many


class BundleCommand(XCommand):
    """A command on one bundle job: ordered per bundle, the bundle row locked while it runs."""

    abstract = True
    bundle_id: str

    def job_key(self) -> str:
        """Bundle commands are ordered per bundle."""
        return self.bundle_id

    def load_state(self) -> None:
        """Lock the bundle row."""
        self.bundle = BundleJob.objects.select_for_update().get(pk=self.bundle_id)

    def actions(self) -> list[BundleAction]:
        """The bundle's actions, locked (a coordinator's mirror update waits for this command).

        Two statements, on purpose: the action rows are locked first, and their coordinators are
        read afterwards. In one statement (FOR UPDATE with the coordinator joined), PostgreSQL
        waits for a coordinator's transaction that holds an action row, then re-reads the
        action's new version but keeps the coordinator row of its first snapshot: the action
        said KILLED while its coordinator still said RUNNING, and the status transit "repaired"
        the fresh mirror with the stale status. Read after the locks are held, both agree: a
        coordinator transaction that has not mirrored yet waits for these locks, and has not
        committed its coordinator row either.
        """
        actions = list(self.bundle.actions.select_for_update().order_by("coord_name"))
        coordinators = CoordinatorJob.objects.in_bulk([a.coord_job_id for a in actions if a.coord_job_id])
        for action in actions:
            if action.coord_job_id:
                action.coord_job = coordinators[action.coord_job_id]
        return actions


@dataclass
class BundleActionDoneXCommand(XCommand):
    """Runs on a coordinator's key after a verb the bundle sent it: that verb is no longer pending."""

    coord_job_id: str
    action_id: str

    def job_key(self) -> str:
        """Queued behind the verb on the coordinator's key, so it runs once the verb did (or was skipped)."""
        return self.coord_job_id

    def execute(self) -> dict[str, int]:
        """Count the verb done."""
        return {"acknowledged": acknowledge(self.action_id)}


def send_to_coordinators(
    actions: Iterable[BundleAction], verb: Callable[[str], XCommand], *, when: Callable[[BundleAction], bool]
) -> list[str]:
    """Queue `verb(coordinator id)` and its acknowledgement on every submitted coordinator `when` allows.

    Each such action counts one more pending verb (saved here). Returns the coordinator ids.
    """
    commands: list[XCommand] = []
    sent = []
    for action in actions:
        if action.coord_job_id is None or not when(action):
            continue
        commands += [verb(action.coord_job_id), BundleActionDoneXCommand(action.coord_job_id, action.pk)]
        action.pending += 1
        action.save(update_fields=["pending"])
        sent.append(action.coord_job_id)
    enqueue_many(commands)
    return sent
