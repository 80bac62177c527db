"""Each bundle command skips (logged, not an error) when its precondition no longer holds under the key."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bundles.choices import BundleStatus as B
from bundles.commands import (
    BundleChangeXCommand,
    BundleCoordSubmitXCommand,
    BundleKillXCommand,
    BundlePauseXCommand,
    BundleRerunXCommand,
    BundleResumeXCommand,
    BundleStartXCommand,
    BundleStatusTransitXCommand,
    BundleSuspendXCommand,
)
from bundles.models import BundleJob
from tests.support.engine import run_pending_commands
from xcommands.base import XCommand
from xcommands.models import Command
from xcommands.queue import enqueue

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]


def outcome(command: XCommand) -> tuple[str, str]:
    """Enqueue and run it; its status and what its history says."""
    row = enqueue(command)
    run_pending_commands()
    row.refresh_from_db()
    return row.status, str(row.history[-1].get("note", ""))


@pytest.mark.parametrize(
    ("status", "build", "reason"),
    [
        pytest.param(B.RUNNING, lambda b: BundleStartXCommand(b.id), "not PREP", id="start-needs-prep"),
        pytest.param(B.RUNNING, lambda b: BundleResumeXCommand(b.id), "it is not suspended", id="resume-needs-suspended"),
        pytest.param(B.KILLED, lambda b: BundleSuspendXCommand(b.id), "cannot be suspended", id="suspend-not-killed"),
        pytest.param(B.SUCCEEDED, lambda b: BundleKillXCommand(b.id), "already SUCCEEDED", id="kill-not-ended"),
        pytest.param(B.RUNNING, lambda b: BundlePauseXCommand(b.id), "changes nothing", id="pause-needs-a-pause-time"),
        pytest.param(B.KILLED, lambda b: BundleChangeXCommand(b.id, "pausetime="), "it is KILLED", id="change-not-killed"),
        pytest.param(B.SUCCEEDED, lambda b: BundleChangeXCommand(b.id, "pausetime="), "pause time", id="pausetime-not-finished"),
        pytest.param(B.DONEWITHERROR, lambda b: BundleChangeXCommand(b.id, "pausetime="), "DONEWITHERROR", id="pausetime-not-done"),
        pytest.param(B.PREP, lambda b: BundleRerunXCommand(b.id, coordinators="hourly"), "it is PREP", id="rerun-not-prep"),
        pytest.param(B.PREP, lambda b: BundleStatusTransitXCommand(b.id), "no coordinators yet", id="derive-needs-started"),
    ],
)
def test_a_command_whose_precondition_fails_is_skipped(
    make_bundle: Callable[..., BundleJob], status: str, build: Callable[[BundleJob], XCommand], reason: str
) -> None:
    """The bundle moved between request and command: skipped with the reason, nothing changed."""
    bundle = make_bundle(start=False)
    BundleJob.objects.filter(pk=bundle.pk).update(status=status)
    result = outcome(build(bundle))
    assert result[0] == "SKIPPED" and reason in result[1]
    assert BundleJob.objects.get(pk=bundle.pk).status == status


def test_a_coordinator_is_submitted_once(make_bundle: Callable[..., BundleJob]) -> None:
    """A duplicated submission (its command run again) is skipped: the coordinator exists already."""
    bundle = make_bundle()
    action = bundle.actions.get(coord_name="hourly")
    status, note = outcome(BundleCoordSubmitXCommand(bundle.id, "hourly", action.planned_coord_id))
    assert status == "SKIPPED" and "already" in note
    assert Command.objects.filter(name=BundleCoordSubmitXCommand.command_name, status="SUCCEEDED").count() == 2
