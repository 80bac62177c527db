"""Killing a range of actions (DG_CommandLineTool `-kill ID -action|-date`): the live ones of the scope, on the command engine."""

from __future__ import annotations

from collections.abc import Mapping
from unittest import mock

import pytest
from django.contrib.auth.models import User

from coordinators.choices import ActionStatus, JobStatus
from coordinators.commands.actions_kill import KillRefused, NothingToKill
from coordinators.models import CoordinatorAction, CoordinatorJob, StatusChange
from coordinators.services import kill_actions, submit_coordinator
from datasets.timeline import format_datetime
from kernel.permissions import JobPermissionDenied
from statusservice.tasks import input_checks
from tests.coordinators.api.factories import coordinator_xml as waiting_xml
from tests.coordinators.api.factories import window
from tests.support.coordinator_apps import coordinator_xml
from tests.support.engine import run_pending_commands
from workflows.choices import NodeStatus, WorkflowStatus
from workflows.models import WorkflowJob, WorkflowNode
from xcommands.choices import CommandStatus
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)
A, J = ActionStatus, JobStatus
KILL = "coordinators.CoordActionsKillXCommand"


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Commands run in process, doorbells go to the private Redis."""


def launched(owner: User, *, actions: int = 4, concurrency: int = 1) -> CoordinatorJob:
    """A job whose `actions` actions are all due: the first `concurrency` SUBMITTED (their runs made), the rest READY."""
    job = submit_coordinator(coordinator_xml("examples.noop", actions=actions, concurrency=concurrency), {}, owner=owner)
    run_pending_commands()
    input_checks()
    run_pending_commands()
    job = CoordinatorJob.objects.get(pk=job.pk)
    assert statuses(job) == {n: A.SUBMITTED if n <= concurrency else A.READY for n in range(1, actions + 1)}
    return job


def waiting(owner: User) -> CoordinatorJob:
    """A job whose actions wait for their nominal times (a window 30 minutes back, one hour long)."""
    job = submit_coordinator(waiting_xml(), window(minutes_back=30, hours=1), owner=owner)
    run_pending_commands()
    job = CoordinatorJob.objects.get(pk=job.pk)
    assert job.last_action_number >= 4 and set(statuses(job).values()) == {A.WAITING}
    return job


def running(job: CoordinatorJob, number: int, task_id: str) -> CoordinatorAction:
    """The action's run claimed by a worker: the action RUNNING, its node RUNNING under `task_id`."""
    action = job.actions.get(number=number)
    CoordinatorAction.objects.filter(pk=action.pk).update(status=A.RUNNING)
    WorkflowNode.objects.filter(workflow_id=action.external_id).update(status=NodeStatus.RUNNING, task_id=task_id)
    return job.actions.get(number=number)


def set_statuses(job: CoordinatorJob, wanted: Mapping[int, str]) -> None:
    for number, status in wanted.items():
        job.actions.filter(number=number).update(status=status, pending=False)


def statuses(job: CoordinatorJob) -> dict[int, str]:
    return dict(job.actions.values_list("number", "status"))


def test_running_and_ready_actions_are_killed_and_the_next_one_starts(ann: User) -> None:
    """-kill ID -action 1-2: the running action's run is KILLED and its task revoked, the READY one KILLED;
    the freed slot (concurrency 1) goes to @3, and the job runs on with an error."""
    job = launched(ann)
    first = running(job, 1, "task-of-1")
    chosen = kill_actions(job.id, actor=ann, kill_type="action", scope="1-2")
    assert [a.number for a in chosen] == [1, 2]
    assert statuses(job)[1] == A.RUNNING  # queued, not done yet
    with mock.patch("workflows.states.revoke") as revoke:
        run_pending_commands()
    revoke.assert_any_call(["task-of-1"])
    after = statuses(job)
    assert (after[1], after[2], after[3], after[4]) == (A.KILLED, A.KILLED, A.SUBMITTED, A.READY)
    run = WorkflowJob.objects.get(pk=first.external_id)
    assert run.status == WorkflowStatus.KILLED and f"-kill {job.id} -action 1-2" in run.error_message
    assert set(WorkflowNode.objects.filter(workflow_id=run.pk).values_list("status", flat=True)) == {NodeStatus.KILLED}
    third = job.actions.get(number=3)
    assert third.external_id and WorkflowJob.objects.filter(pk=third.external_id).exists()
    for action in job.actions.filter(number__lte=2):
        assert not action.pending and action.ended_at is not None
    assert CoordinatorJob.objects.get(pk=job.pk).status == J.RUNNINGWITHERROR
    change = StatusChange.objects.get(object_id=first.id, to_status=A.KILLED)
    assert (change.from_status, change.by) == (A.RUNNING, f"{KILL} (ann)")
    assert change.reason == f"killed by -kill {job.id} -action 1-2"
    assert Command.objects.get(name=KILL).status == CommandStatus.SUCCEEDED


def test_waiting_actions_are_killed_by_nominal_dates(ann: User) -> None:
    """-kill ID -date A::B: the WAITING actions whose nominal time falls in the range, no more input checks; the others wait on."""
    job = waiting(ann)
    second, third = (job.actions.get(number=n).nominal_time for n in (2, 3))
    chosen = kill_actions(job.id, actor=ann, kill_type="date", scope=f"{format_datetime(second)}::{format_datetime(third)}")
    assert [a.number for a in chosen] == [2, 3]
    run_pending_commands()
    after = statuses(job)
    assert (after[1], after[2], after[3], after[4]) == (A.WAITING, A.KILLED, A.KILLED, A.WAITING)
    assert list(job.actions.filter(number__in=(2, 3)).values_list("next_check_at", flat=True)) == [None, None]
    assert CoordinatorJob.objects.get(pk=job.pk).status == J.RUNNINGWITHERROR


def test_ended_actions_are_left_out_and_untouched(ann: User) -> None:
    """Only WAITING, READY, SUBMITTED, RUNNING or SUSPENDED actions are killed: the others keep their status and are not answered."""
    job = launched(ann, actions=5)
    set_statuses(job, {1: A.SUCCEEDED, 2: A.FAILED, 3: A.IGNORED})
    ended = dict(job.actions.filter(number__lte=3).values_list("number", "last_modified"))
    chosen = kill_actions(job.id, actor=ann, kill_type="action", scope="1-4")
    assert [a.number for a in chosen] == [4]
    run_pending_commands()
    after = statuses(job)
    assert (after[1], after[2], after[3], after[4]) == (A.SUCCEEDED, A.FAILED, A.IGNORED, A.KILLED)
    assert dict(job.actions.filter(number__lte=3).values_list("number", "last_modified")) == ended


def test_numbers_not_materialized_are_passed_over(ann: User) -> None:
    """As Oozie's CoordUtils: a range reaching past the last action kills the ones that exist."""
    job = launched(ann, actions=3)
    chosen = kill_actions(job.id, actor=ann, kill_type="action", scope="3-400, 9000")
    assert [a.number for a in chosen] == [3]


def test_the_last_live_actions_killed_end_the_job(ann: User) -> None:
    """A job done materializing whose other actions succeeded ends DONEWITHERROR once its last live ones are killed."""
    job = launched(ann, actions=3)
    assert CoordinatorJob.objects.get(pk=job.pk).done_materializing
    set_statuses(job, {1: A.SUCCEEDED})
    kill_actions(job.id, actor=ann, kill_type="action", scope="2-3")
    run_pending_commands()
    assert CoordinatorJob.objects.get(pk=job.pk).status == J.DONEWITHERROR


@pytest.mark.parametrize(
    ("kill_type", "scope", "error", "message"),
    [
        pytest.param("action", "x", KillRefused, "expected a number", id="bad-syntax"),
        pytest.param("action", "5-2", KillRefused, "not a valid range", id="backwards-range"),
        pytest.param("action", "1-20000", KillRefused, "more than 10000 actions", id="too-many"),
        pytest.param("action", " ", KillRefused, "is required", id="empty"),
        pytest.param("week", "1", KillRefused, "use action or date", id="bad-type"),
        pytest.param("date", "2026-13-01T00:00Z", KillRefused, "-date", id="bad-date"),
        pytest.param("action", "1-2", NothingToKill, r"no action of \S+ in -action 1-2 can be killed", id="all-ended"),
        pytest.param("action", "900-905", NothingToKill, "can be killed", id="none-materialized"),
    ],
)
def test_a_scope_that_cannot_be_killed_changes_nothing(
    ann: User, kill_type: str, scope: str, error: type[Exception], message: str
) -> None:
    """Refused at once (bad syntax, or nothing live in the scope): nothing is queued or changed."""
    job = launched(ann)
    set_statuses(job, {1: A.SUCCEEDED, 2: A.KILLED})
    before, commands = statuses(job), Command.objects.count()
    with pytest.raises(error, match=message):
        kill_actions(job.id, actor=ann, kill_type=kill_type, scope=scope)
    assert statuses(job) == before
    assert Command.objects.count() == commands


@pytest.mark.parametrize("status", [J.SUCCEEDED, J.FAILED, J.DONEWITHERROR, J.KILLED, J.IGNORED])
def test_a_finished_job_is_refused(ann: User, status: str) -> None:
    """Oozie's E1020: the actions of a SUCCEEDED, FAILED, DONEWITHERROR, KILLED (or IGNORED) job are not killed."""
    job = launched(ann)
    CoordinatorJob.objects.filter(pk=job.pk).update(status=status)
    before, commands = statuses(job), Command.objects.count()
    with pytest.raises(NothingToKill, match=f"is {status}: its actions cannot be killed"):
        kill_actions(job.id, actor=ann, kill_type="action", scope="1-4")
    assert statuses(job) == before and Command.objects.count() == commands


def test_a_prep_job_has_nothing_to_kill(ann: User) -> None:
    """No actions are materialized for a PREP job: refused."""
    job = submit_coordinator(waiting_xml(), window(), owner=ann, start=False)
    with pytest.raises(NothingToKill, match="no actions are materialized"):
        kill_actions(job.id, actor=ann, kill_type="action", scope="1")


def test_only_who_may_modify_the_job_kills_its_actions(ann: User, bob: User) -> None:
    """Ownership as for every verb: another user is refused, nothing is queued."""
    job = launched(ann)
    commands = Command.objects.count()
    with pytest.raises(JobPermissionDenied):
        kill_actions(job.id, actor=bob, kill_type="action", scope="1")
    assert Command.objects.count() == commands and statuses(job)[1] == A.SUBMITTED


def test_a_kill_overtaken_by_an_end_kills_only_what_is_still_live(ann: User) -> None:
    """The command selects again under the job's key: an action that ended meanwhile keeps its end."""
    job = launched(ann)
    kill_actions(job.id, actor=ann, kill_type="action", scope="1-2")
    set_statuses(job, {1: A.SUCCEEDED})  # its run ended before the kill ran
    run_pending_commands()
    after = statuses(job)
    assert (after[1], after[2]) == (A.SUCCEEDED, A.KILLED)
    command = Command.objects.get(name=KILL)
    assert command.status == CommandStatus.SUCCEEDED


def test_a_kill_whose_actions_all_ended_meanwhile_is_skipped(ann: User) -> None:
    """Nothing live any more when the command runs (another verb ended them): skipped, not an error; nothing changes."""
    job = launched(ann)
    kill_actions(job.id, actor=ann, kill_type="action", scope="3-4")
    set_statuses(job, {3: A.SKIPPED, 4: A.SKIPPED})
    run_pending_commands()
    assert Command.objects.get(name=KILL).status == CommandStatus.SKIPPED
    assert (statuses(job)[3], statuses(job)[4]) == (A.SKIPPED, A.SKIPPED)


def test_a_kill_after_the_job_ended_is_skipped(ann: User) -> None:
    """The job was killed between the request and the command: skipped (E1020's rule, checked again)."""
    job = launched(ann)
    kill_actions(job.id, actor=ann, kill_type="action", scope="3-4")
    CoordinatorJob.objects.filter(pk=job.pk).update(status=J.KILLED)
    run_pending_commands()
    assert Command.objects.get(name=KILL).status == CommandStatus.SKIPPED
    assert statuses(job)[3] == A.READY


def test_a_suspended_job_keeps_its_status(ann: User) -> None:
    """Actions of a SUSPENDED job may be killed; the job stays SUSPENDED (its status follows once resumed)."""
    job = launched(ann)
    CoordinatorJob.objects.filter(pk=job.pk).update(status=J.SUSPENDED)
    kill_actions(job.id, actor=ann, kill_type="action", scope="2")
    run_pending_commands()
    assert statuses(job)[2] == A.KILLED and statuses(job)[3] == A.READY
    assert CoordinatorJob.objects.get(pk=job.pk).status == J.SUSPENDED
