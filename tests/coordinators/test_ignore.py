"""Ignore (DG_CommandLineTool -ignore): actions FAILED/KILLED/TIMEDOUT and jobs FAILED/KILLED become IGNORED, on the command engine."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from bundles.models import BundleAction, BundleJob
from coordinators.choices import ActionStatus, JobStatus, job_status_from_actions
from coordinators.commands.ignore import IgnoreRefused
from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.services import (
    change_job,
    control,
    ignore_actions,
    ignore_job,
    rerun_job,
    submit_coordinator,
)
from datasets.timeline import format_datetime
from kernel.permissions import JobPermissionDenied
from tests.coordinators.api.factories import coordinator_xml, window
from tests.support.bundles import settle
from tests.support.engine import run_pending_commands
from xcommands.choices import CommandStatus
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)
A, J = ActionStatus, JobStatus


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Commands run in process, doorbells go to the private Redis."""


@pytest.fixture
def ann() -> User:
    return User.objects.create_user("ann")


def running_job(owner: User, *, done: bool = False) -> CoordinatorJob:
    """A started job with a few actions (all of them, when `done`: a window already over)."""
    properties = window(minutes_back=30, hours=1)
    if done:
        start = timezone.now().replace(second=0, microsecond=0) - timedelta(minutes=5)
        properties = {"start": format_datetime(start), "end": format_datetime(start + timedelta(minutes=4))}
    job = submit_coordinator(coordinator_xml(), properties, owner=owner)
    run_pending_commands()
    job = CoordinatorJob.objects.get(pk=job.pk)
    assert job.last_action_number >= 4
    return job


def set_statuses(job: CoordinatorJob, statuses: Mapping[int, str]) -> None:
    """Pretend the actions ran and ended so (a fixed end time, to see that ignoring keeps it)."""
    for number, status in statuses.items():
        job.actions.filter(number=number).update(status=status, pending=False, ended_at=timezone.now() - timedelta(hours=1))


def statuses(job: CoordinatorJob) -> dict[int, str]:
    return dict(job.actions.values_list("number", "status"))


@pytest.mark.parametrize(
    ("actions", "done", "current", "expected"),
    [
        pytest.param([A.SUCCEEDED, A.IGNORED], True, J.RUNNINGWITHERROR, J.SUCCEEDED, id="ignored-count-for-nothing"),
        pytest.param([A.FAILED, A.IGNORED], True, J.RUNNINGWITHERROR, J.FAILED, id="the-others-all-failed"),
        pytest.param([A.KILLED, A.IGNORED], True, J.RUNNINGWITHERROR, J.KILLED, id="the-others-all-killed"),
        pytest.param([A.IGNORED, A.IGNORED], True, J.RUNNINGWITHERROR, J.SUCCEEDED, id="all-ignored"),
        pytest.param([A.FAILED, A.SUCCEEDED, A.IGNORED], True, J.RUNNINGWITHERROR, J.DONEWITHERROR, id="mixed"),
        pytest.param([A.IGNORED, A.RUNNING], False, J.RUNNINGWITHERROR, J.RUNNING, id="error-ignored-while-running"),
    ],
)
def test_ignored_actions_do_not_count_towards_the_job_status(
    actions: list[str], done: bool, current: str, expected: str
) -> None:
    """As Oozie's CoordStatusTransitXCommand (it reads the unignored actions only)."""
    assert job_status_from_actions(actions, materialization_done=done, current=current) == expected


def test_failed_killed_and_timedout_actions_are_ignored(ann: User) -> None:
    """-ignore ID -action 1-3: queued, then IGNORED, not pending, their end time kept; the others untouched."""
    job = running_job(ann)
    set_statuses(job, {1: A.FAILED, 2: A.KILLED, 3: A.TIMEDOUT, 4: A.SUCCEEDED})
    ended = dict(job.actions.filter(number__lte=3).values_list("number", "ended_at"))
    chosen = ignore_actions(job.id, actor=ann, ignore_type="action", scope="1-3")
    assert [a.number for a in chosen] == [1, 2, 3]
    assert statuses(job)[1] == A.FAILED  # queued, not done yet
    run_pending_commands()
    after = statuses(job)
    assert [after[n] for n in (1, 2, 3, 4)] == [A.IGNORED, A.IGNORED, A.IGNORED, A.SUCCEEDED]
    for action in job.actions.filter(number__lte=3):
        assert not action.pending
        assert action.ended_at == ended[action.number]


def test_ignore_by_nominal_dates(ann: User) -> None:
    """-ignore ID -date A::B names the actions whose nominal time falls in the range."""
    job = running_job(ann)
    set_statuses(job, {1: A.FAILED, 2: A.FAILED, 3: A.FAILED})
    first, second = (job.actions.get(number=n).nominal_time for n in (1, 2))
    chosen = ignore_actions(job.id, actor=ann, ignore_type="date", scope=f"{format_datetime(first)}::{format_datetime(second)}")
    assert [a.number for a in chosen] == [1, 2]
    run_pending_commands()
    assert [statuses(job)[n] for n in (1, 2, 3)] == [A.IGNORED, A.IGNORED, A.FAILED]


@pytest.mark.parametrize(
    ("scope", "message"),
    [
        pytest.param("1-4", r"action number\(s\) \[4\]", id="one-succeeded"),
        pytest.param("1,5", r"action number\(s\) \[5\]", id="one-still-waiting-or-running"),
        pytest.param("900-905", "no actions are eligible", id="none-materialized"),
        pytest.param("x", "expected a number", id="bad-syntax"),
        pytest.param("5-2", "not a valid range", id="backwards-range"),
        pytest.param(" ", "is required", id="empty"),
    ],
)
def test_a_scope_with_anything_not_ignorable_changes_nothing(ann: User, scope: str, message: str) -> None:
    """Oozie refuses the whole request (listing the ineligible numbers); nothing is queued or changed."""
    job = running_job(ann)
    set_statuses(job, {1: A.FAILED, 2: A.KILLED, 3: A.TIMEDOUT, 4: A.SUCCEEDED})
    job.actions.filter(number=5).update(status=A.RUNNING)
    before, commands = statuses(job), Command.objects.count()
    with pytest.raises(IgnoreRefused, match=message):
        ignore_actions(job.id, actor=ann, ignore_type="action", scope=scope)
    assert statuses(job) == before
    assert Command.objects.count() == commands


def test_numbers_not_materialized_are_passed_over(ann: User) -> None:
    """As Oozie's CoordUtils: a range reaching past the last action ignores the ones that exist."""
    job = running_job(ann)
    last = job.last_action_number
    set_statuses(job, {last: A.FAILED})
    chosen = ignore_actions(job.id, actor=ann, ignore_type="action", scope=f"{last}-{last + 50}")
    assert [a.number for a in chosen] == [last]


def test_a_prep_job_has_nothing_to_ignore(ann: User) -> None:
    """No actions are materialized for a PREP job: refused."""
    job = submit_coordinator(coordinator_xml(), window(), owner=ann, start=False)
    with pytest.raises(IgnoreRefused, match="no actions are materialized"):
        ignore_actions(job.id, actor=ann, ignore_type="action", scope="1")


def test_only_who_may_modify_the_job_ignores(ann: User) -> None:
    """Ownership as for every verb: another user is refused, nothing changes."""
    job = running_job(ann)
    set_statuses(job, {1: A.FAILED})
    bob = User.objects.create_user("bob")
    with pytest.raises(JobPermissionDenied):
        ignore_actions(job.id, actor=bob, ignore_type="action", scope="1")
    with pytest.raises(JobPermissionDenied):
        ignore_job(job.id, actor=bob)
    assert statuses(job)[1] == A.FAILED


def test_an_ignore_overtaken_by_a_rerun_is_skipped(ann: User) -> None:
    """The command checks again under the job's key: an action no longer FAILED is not ignored (skipped, not an error)."""
    job = running_job(ann)
    set_statuses(job, {1: A.FAILED, 2: A.FAILED})
    ignore_actions(job.id, actor=ann, ignore_type="action", scope="1-2")
    job.actions.filter(number=2).update(status=A.WAITING)  # as a rerun would, before the ignore ran
    run_pending_commands()
    assert (statuses(job)[1], statuses(job)[2]) == (A.FAILED, A.WAITING)  # all or nothing, as checked
    command = Command.objects.get(name="coordinators.CoordActionsIgnoreXCommand")
    assert command.status == CommandStatus.SKIPPED


def test_a_running_job_whose_errors_are_ignored_runs_without_error(ann: User) -> None:
    """RUNNINGWITHERROR -> RUNNING once its failed action is ignored (the status follows in the same round)."""
    job = running_job(ann)
    set_statuses(job, {1: A.FAILED})
    CoordinatorJob.objects.filter(pk=job.pk).update(status=J.RUNNINGWITHERROR)
    ignore_actions(job.id, actor=ann, ignore_type="action", scope="1")
    run_pending_commands()
    assert CoordinatorJob.objects.get(pk=job.pk).status == J.RUNNING


def test_a_finished_job_keeps_its_status(ann: User) -> None:
    """DG_CommandLineTool: ignoring actions does not change the state of a finished job."""
    job = running_job(ann, done=True)
    numbers = list(job.actions.values_list("number", flat=True))
    set_statuses(job, {n: A.SUCCEEDED for n in numbers} | {1: A.FAILED})
    CoordinatorJob.objects.filter(pk=job.pk).update(status=J.DONEWITHERROR, done_materializing=True)
    ignore_actions(job.id, actor=ann, ignore_type="action", scope="1")
    run_pending_commands()
    assert statuses(job)[1] == A.IGNORED
    assert CoordinatorJob.objects.get(pk=job.pk).status == J.DONEWITHERROR


def test_a_killed_job_is_ignored_and_can_run_again(ann: User) -> None:
    """-ignore ID: KILLED -> IGNORED (materialization done); -change status=RUNNING brings it back."""
    job = running_job(ann)
    control(job.id, "kill", actor=ann)
    run_pending_commands()
    ignore_job(job.id, actor=ann)
    assert CoordinatorJob.objects.get(pk=job.pk).status == J.KILLED  # queued
    run_pending_commands()
    job = CoordinatorJob.objects.get(pk=job.pk)
    assert (job.status, job.pending, job.done_materializing) == (J.IGNORED, False, True)
    with pytest.raises(IgnoreRefused, match="only a FAILED or KILLED"):
        ignore_job(job.id, actor=ann)  # already IGNORED
    change_job(job.id, "status=RUNNING", actor=ann)
    run_pending_commands()
    # Running again; its KILLED actions are errors until they are rerun or ignored.
    assert CoordinatorJob.objects.get(pk=job.pk).status == J.RUNNINGWITHERROR


@pytest.mark.parametrize("status", [J.RUNNING, J.RUNNINGWITHERROR, J.SUCCEEDED, J.DONEWITHERROR, J.SUSPENDED, J.PREP])
def test_only_failed_or_killed_jobs_are_ignored(ann: User, status: str) -> None:
    """CoordChangeXCommand: only FAILED or KILLED jobs go to IGNORED; nothing is queued otherwise."""
    job = running_job(ann)
    CoordinatorJob.objects.filter(pk=job.pk).update(status=status)
    commands = Command.objects.count()
    with pytest.raises(IgnoreRefused, match=f"is {status}"):
        ignore_job(job.id, actor=ann)
    assert Command.objects.count() == commands
    assert CoordinatorJob.objects.get(pk=job.pk).status == status


def test_a_pending_failed_job_is_not_ignored(ann: User) -> None:
    """A job with a verb in flight (pending) is refused, as Oozie refuses a pending one."""
    job = running_job(ann)
    CoordinatorJob.objects.filter(pk=job.pk).update(status=J.FAILED, pending=True)
    with pytest.raises(IgnoreRefused, match="pending"):
        ignore_job(job.id, actor=ann)


def test_an_ignored_coordinator_no_longer_counts_in_its_bundle(make_bundle: Callable[..., BundleJob]) -> None:
    """DG_CommandLineTool: a bundle whose failed (here killed) coordinator is ignored runs on without error."""
    bundle = make_bundle()
    owner = bundle.owner
    hourly = BundleAction.objects.get(bundle=bundle, coord_name="hourly").coord_job
    assert hourly is not None
    control(hourly.id, "kill", actor=owner)
    settle()
    assert BundleJob.objects.get(pk=bundle.pk).status == "RUNNINGWITHERROR"
    ignore_job(hourly.id, actor=owner)
    settle()
    assert BundleAction.objects.get(bundle=bundle, coord_name="hourly").status == J.IGNORED
    assert BundleJob.objects.get(pk=bundle.pk).status == "RUNNING"


def test_ignored_actions_appear_in_status_filters(ann: User) -> None:
    """IGNORED is a status like the others: the actions of a job can be selected by it."""
    job = running_job(ann)
    set_statuses(job, {2: A.FAILED})
    ignore_actions(job.id, actor=ann, ignore_type="action", scope="2")
    run_pending_commands()
    assert list(CoordinatorAction.objects.filter(job=job, status=A.IGNORED).values_list("number", flat=True)) == [2]


def test_an_ignored_action_can_be_rerun(ann: User) -> None:
    """DG_CommandLineTool: "A ignored coordinator action can be rerun using -rerun command"."""
    job = running_job(ann)
    set_statuses(job, {1: A.FAILED})
    ignore_actions(job.id, actor=ann, ignore_type="action", scope="1")
    run_pending_commands()
    assert statuses(job)[1] == A.IGNORED
    assert [a.number for a in rerun_job(job.id, actor=ann, rerun_type="action", scope="1", nocleanup=True)] == [1]
    run_pending_commands()
    assert statuses(job)[1] != A.IGNORED
    assert job.actions.get(number=1).run_count == 1
