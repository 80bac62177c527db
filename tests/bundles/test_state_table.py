"""Every row of seed 000's bundle state table, driven through the domain actions and commands (in process).

Trigger -> status, and what happens to the children (the coordinators). Pause times are
"reached" by moving the stored pause time into the past, as the beat's pause service then sees.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from bundles import services
from bundles.choices import BundleStatus as B
from bundles.commands import BundleStartXCommand
from bundles.models import BundleAction, BundleJob
from coordinators.choices import JobStatus as J
from coordinators.models import CoordinatorJob
from statusservice import bundles as bundle_services
from tests.bundles.factories import minute
from tests.support.bundles import run_actions, settle
from tests.support.engine import run_pending_commands
from xcommands import engine
from xcommands.models import Command

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]

Make = Callable[..., BundleJob]


def ann() -> User:
    return User.objects.get_or_create(username="ann")[0]


def refreshed(bundle: BundleJob) -> BundleJob:
    return BundleJob.objects.get(pk=bundle.pk)


def children(bundle: BundleJob) -> dict[str, str]:
    """Coordinator name -> its coordinator job's status (or the bundle action's, if never submitted)."""
    return {a.coord_name: a.coord_job.status if a.coord_job else f"unsubmitted {a.status}"
            for a in bundle.actions.select_related("coord_job").order_by("coord_name")}


def reach_pause_time(bundle: BundleJob) -> None:
    """The bundle's pause time comes (moved into the past) and the pause service runs."""
    BundleJob.objects.filter(pk=bundle.pk).update(pause_time=timezone.now() - timedelta(minutes=1))
    bundle_services.pause_times(timezone.now())
    settle()


def reset_pause_time(bundle: BundleJob) -> None:
    """An operator resets the pause time (-change pausetime=): the coordinators get it too; the bundle unpauses."""
    services.change_bundle(bundle.id, "pausetime=", actor=ann())
    settle()
    bundle_services.pause_times(timezone.now())
    settle()


def break_submission(bundle: BundleJob, name: str) -> None:
    """Make a coordinator's submission fail at start: its stored application is corrupted after validation."""
    applications = dict(bundle.applications)
    applications[name] = {**applications[name], "definition": "<coordinator-app"}
    BundleJob.objects.filter(pk=bundle.pk).update(applications=applications)


def start(bundle: BundleJob) -> BundleJob:
    services.start_bundle(bundle.id, actor=ann())
    settle()
    return refreshed(bundle)


# --- Start -> Prep -> Running, PrepPaused, PrepSuspended ------------------------------------


def test_submit_gives_prep_with_no_children(make_bundle: Make) -> None:
    """Start -> Prep (user SUBMIT): no action on children."""
    bundle = make_bundle(start=False)
    assert bundle.status == B.PREP and bundle.actions.count() == 0 and not CoordinatorJob.objects.exists()


def test_user_start_runs_and_submits_the_children(make_bundle: Make) -> None:
    """Prep -> Running (user START): every coordinator is submitted (and started) as the bundle's child."""
    bundle = start(make_bundle(start=False))
    assert bundle.status == B.RUNNING
    assert children(bundle) == {"daily": J.RUNNING, "hourly": J.RUNNING}
    assert set(CoordinatorJob.objects.values_list("bundle_id", flat=True)) == {bundle.id}


def test_kick_off_time_reached_runs_and_submits_the_children(make_bundle: Make) -> None:
    """Prep -> Running (kick-off time reaches): nothing before it, everything after."""
    bundle = make_bundle(kick_off=minute(10))
    assert bundle.status == B.PREP
    assert bundle_services.kickoffs(timezone.now()) == 0
    BundleJob.objects.filter(pk=bundle.pk).update(kick_off_time=timezone.now() - timedelta(seconds=1))
    assert bundle_services.kickoffs(timezone.now()) == 1
    settle()
    bundle = refreshed(bundle)
    assert bundle.status == B.RUNNING and set(children(bundle).values()) == {J.RUNNING}


def test_pause_time_pauses_a_prep_bundle_and_reset_brings_it_back(make_bundle: Make) -> None:
    """Prep -> PrepPaused (pause time reaches) and PrepPaused -> Prep (RESET_PAUSE_TIME): no action on children."""
    bundle = make_bundle(start=False)
    reach_pause_time(bundle)
    assert refreshed(bundle).status == B.PREPPAUSED
    reset_pause_time(bundle)
    assert refreshed(bundle).status == B.PREP and bundle.actions.count() == 0


def test_suspend_and_resume_a_prep_bundle(make_bundle: Make) -> None:
    """Prep -> PrepSuspended (user SUSPEND) and PrepSuspended -> Prep (user RESUME): no action on children."""
    bundle = make_bundle(start=False)
    services.control_bundle(bundle.id, "suspend", actor=ann())
    settle()
    assert refreshed(bundle).status == B.PREPSUSPENDED
    services.control_bundle(bundle.id, "resume", actor=ann())
    settle()
    assert refreshed(bundle).status == B.PREP and bundle.actions.count() == 0


# --- Running -> ... ----------------------------------------------------------------------------


def test_suspend_and_resume_a_running_bundle_suspend_and_resume_the_children(make_bundle: Make) -> None:
    """Running -> Suspended (SUSPEND children) and Suspended -> Running (RESUME children)."""
    bundle = make_bundle()
    services.control_bundle(bundle.id, "suspend", actor=ann())
    settle()
    bundle = refreshed(bundle)
    assert bundle.status == B.SUSPENDED and set(children(bundle).values()) == {J.SUSPENDED}
    assert [a.pending for a in bundle.actions.all()] == [0, 0] and not bundle.pending
    services.control_bundle(bundle.id, "resume", actor=ann())
    settle()
    bundle = refreshed(bundle)
    assert bundle.status == B.RUNNING and set(children(bundle).values()) == {J.RUNNING}


def test_pause_time_pauses_a_running_bundle_and_reset_resumes_it(make_bundle: Make) -> None:
    """Running -> Paused (pause time reaches; no action on children) and Paused -> Running (RESET_PAUSE_TIME to children)."""
    bundle = make_bundle()
    reach_pause_time(bundle)
    bundle = refreshed(bundle)
    assert bundle.status == B.PAUSED and set(children(bundle).values()) == {J.RUNNING}
    reset_pause_time(bundle)
    bundle = refreshed(bundle)
    assert bundle.status == B.RUNNING and bundle.pause_time is None
    assert set(CoordinatorJob.objects.values_list("pause_time", flat=True)) == {None}


def test_suspending_a_paused_bundle_suspends_the_children(make_bundle: Make) -> None:
    """Paused -> Suspended (user SUSPEND): SUSPEND children."""
    bundle = make_bundle()
    reach_pause_time(bundle)
    services.control_bundle(bundle.id, "suspend", actor=ann())
    settle()
    bundle = refreshed(bundle)
    assert bundle.status == B.SUSPENDED and set(children(bundle).values()) == {J.SUSPENDED}


def test_a_critical_child_that_fails_to_submit_fails_the_bundle_and_kills_the_others(make_bundle: Make) -> None:
    """Running -> Failed (SUBMIT of a critical child fails): KILL children."""
    bundle = make_bundle(start=False, critical=("hourly",))
    break_submission(bundle, "hourly")
    bundle = start(bundle)
    assert bundle.status == B.FAILED
    assert children(bundle) == {"daily": J.KILLED, "hourly": f"unsubmitted {J.FAILED}"}
    assert "could not be submitted" in bundle.actions.get(coord_name="hourly").error_message


def test_a_non_critical_child_that_fails_to_submit_runs_the_bundle_with_error(make_bundle: Make) -> None:
    """Running -> RunningWithError (SUBMIT of a non-critical child fails): no action on the others."""
    bundle = make_bundle(start=False)
    break_submission(bundle, "hourly")
    bundle = start(bundle)
    assert bundle.status == B.RUNNINGWITHERROR
    assert children(bundle) == {"daily": J.RUNNING, "hourly": f"unsubmitted {J.FAILED}"}


def test_all_children_succeeded_succeeds_the_bundle(make_bundle: Make) -> None:
    """Running -> Succeeded (all children terminated)."""
    bundle = make_bundle(window_minutes=(3, 0))
    assert run_actions() == 6
    bundle = refreshed(bundle)
    assert set(children(bundle).values()) == {J.SUCCEEDED} and bundle.status == B.SUCCEEDED
    assert bundle.ended_at is not None


# --- RunningWithError -> ... -------------------------------------------------------------------


def erring(make_bundle: Make, **kwargs: object) -> BundleJob:
    """A RUNNINGWITHERROR bundle: of three coordinators, 'broken' could not be submitted."""
    bundle = make_bundle({"hourly": "examples.noop", "daily": "examples.noop", "broken": "examples.noop"},
                         start=False, **kwargs)
    break_submission(bundle, "broken")
    bundle = start(bundle)
    assert bundle.status == B.RUNNINGWITHERROR
    return bundle


def test_a_critical_child_failing_a_bundle_running_with_error_fails_it(make_bundle: Make) -> None:
    """RunningWithErrors -> Failed (SUBMIT of a critical child fails): KILL children."""
    bundle = make_bundle({"broken": "examples.noop", "critical": "examples.noop", "fine": "examples.noop"},
                         start=False, critical=("critical",))
    break_submission(bundle, "broken")
    services.start_bundle(bundle.id, actor=ann())
    run_pending_commands()  # both submissions fail or succeed; the status is derived once
    assert bundle_services.statuses(timezone.now()) == 1
    run_pending_commands()
    assert refreshed(bundle).status == B.RUNNINGWITHERROR
    BundleAction.objects.filter(bundle=bundle, coord_name="critical").update(
        coord_job=None, status=J.FAILED, dirty=True  # as if its submission had failed after the other one's
    )
    settle()
    bundle = refreshed(bundle)
    assert bundle.status == B.FAILED and children(bundle)["fine"] == J.KILLED


def test_all_children_done_with_errors_is_done_with_error(make_bundle: Make) -> None:
    """RunningWithErrors -> DoneWithErrors (all children terminated, some with errors)."""
    bundle = make_bundle({"good": "examples.noop", "bad": "examples.fail"}, window_minutes=(3, 0))
    run_actions()
    bundle = refreshed(bundle)
    assert children(bundle) == {"bad": J.FAILED, "good": J.SUCCEEDED}
    assert bundle.status == B.DONEWITHERROR


def test_suspend_and_resume_a_bundle_running_with_error(make_bundle: Make) -> None:
    """RunningWithErrors -> SuspendedError (SUSPEND children) and SuspendedError -> RunningWithErrors (RESUME children)."""
    bundle = erring(make_bundle)
    services.control_bundle(bundle.id, "suspend", actor=ann())
    settle()
    bundle = refreshed(bundle)
    assert bundle.status == B.SUSPENDEDWITHERROR
    assert {children(bundle)[name] for name in ("daily", "hourly")} == {J.SUSPENDED}
    services.control_bundle(bundle.id, "resume", actor=ann())
    settle()
    bundle = refreshed(bundle)
    assert bundle.status == B.RUNNINGWITHERROR
    assert {children(bundle)[name] for name in ("daily", "hourly")} == {J.RUNNING}


def test_pause_and_reset_a_bundle_running_with_error(make_bundle: Make) -> None:
    """RunningWithErrors -> PausedError (pause time reaches) and PausedError -> RunningWithErrors (RESET_PAUSE_TIME)."""
    bundle = erring(make_bundle)
    reach_pause_time(bundle)
    assert refreshed(bundle).status == B.PAUSEDWITHERROR
    reset_pause_time(bundle)
    assert refreshed(bundle).status == B.RUNNINGWITHERROR


def test_suspending_a_bundle_paused_with_error_suspends_the_children(make_bundle: Make) -> None:
    """PausedError -> SuspendedError (user SUSPEND): SUSPEND children."""
    bundle = erring(make_bundle)
    reach_pause_time(bundle)
    services.control_bundle(bundle.id, "suspend", actor=ann())
    settle()
    bundle = refreshed(bundle)
    assert bundle.status == B.SUSPENDEDWITHERROR
    assert {children(bundle)[name] for name in ("daily", "hourly")} == {J.SUSPENDED}


# --- Any_State -> Killed -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "arrange",
    ["prep", "prepsuspended", "running", "suspended", "paused", "runningwitherror"],
)
def test_kill_from_any_state_kills_the_children(make_bundle: Make, arrange: str) -> None:
    """Any_State -> Killed (user KILL): KILL children; nothing left running or to be submitted."""
    bundle = erring(make_bundle) if arrange == "runningwitherror" else make_bundle(start=arrange not in ("prep", "prepsuspended"))
    if arrange in ("prepsuspended", "suspended"):
        services.control_bundle(bundle.id, "suspend", actor=ann())
        settle()
    if arrange == "paused":
        reach_pause_time(bundle)
    services.control_bundle(bundle.id, "kill", actor=ann())
    settle()
    bundle = refreshed(bundle)
    assert bundle.status == B.KILLED and not bundle.pending
    assert all(status in (J.KILLED, f"unsubmitted {J.FAILED}") for status in children(bundle).values())


def test_kill_before_the_children_are_submitted_submits_none(make_bundle: Make) -> None:
    """A kill that overtakes the queued submissions: they submit nothing, and the bundle stays KILLED."""
    bundle = make_bundle(start=False)
    services.start_bundle(bundle.id, actor=ann())
    start_command = Command.objects.get(name=BundleStartXCommand.command_name, key=bundle.id)
    assert engine.process(start_command.pk) == "succeeded"  # actions created, submissions queued
    services.control_bundle(bundle.id, "kill", actor=ann())
    for command in Command.objects.filter(key=bundle.id, status="PENDING"):
        engine.process(command.pk)  # the kill runs before any submission
    run_pending_commands()
    settle()
    bundle = refreshed(bundle)
    assert bundle.status == B.KILLED and not CoordinatorJob.objects.exists()
    assert set(bundle.actions.values_list("status", "pending")) == {(J.KILLED, 0)}
