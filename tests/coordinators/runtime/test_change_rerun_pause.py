"""Change, rerun and pause through the domain actions and commands (in process)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.utils import timezone

from coordinators.choices import ActionStatus, IllegalTransition, JobStatus
from coordinators.commands.change import ChangeRefused
from coordinators.commands.rerun import RerunRefused
from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.services import change_job, control, rerun_job, submit_coordinator
from datasets.models import AvailableInstance
from datasets.timeline import format_datetime
from kernel.permissions import JobPermissionDenied
from statusservice import coordinators as services
from tests.support.engine import run_pending_commands
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Every test here runs commands in process."""


def minute(offset: int) -> str:
    """The minute `offset` minutes from now (negative: the past), in Oozie's format."""
    return format_datetime((timezone.now() + timedelta(minutes=offset)).replace(second=0, microsecond=0))


def xml(start: str, end: str, out_dir: Path | None = None, throttle: int = 100) -> str:
    out = (
        f"""<datasets><dataset name="o" frequency="${{coord:minutes(1)}}" initial-instance="2000-01-01T00:00Z" timezone="UTC">
             <uri-template>file://{out_dir}/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}${{MINUTE}}</uri-template></dataset></datasets>
           <output-events><data-out name="out" dataset="o"><instance>${{coord:current(0)}}</instance></data-out></output-events>"""
        if out_dir is not None else ""
    )
    return f"""<coordinator-app name="minutely" frequency="${{coord:minutes(1)}}" start="{start}" end="{end}" timezone="UTC"
        xmlns="uri:oozie:coordinator:0.4">
      <controls><throttle>{throttle}</throttle></controls>{out}
      <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
    </coordinator-app>"""


@pytest.fixture
def owner() -> User:
    return User.objects.create_user("olga")


def running_job(owner: User, start: int = -10, end: int = 60, out_dir: Path | None = None) -> CoordinatorJob:
    job = submit_coordinator(xml(minute(start), minute(end), out_dir), {}, owner=owner)
    run_pending_commands()
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    return job


def finish(job: CoordinatorJob, numbers: list[int], status: str) -> None:
    """Pretend the actions ran and ended with status."""
    job.actions.filter(number__in=numbers).update(status=status, ended_at=timezone.now())


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("concurrency=abc", "must be an integer", id="not-an-integer"),
        pytest.param("endtime=tomorrow", "endtime=tomorrow", id="bad-date"),
        pytest.param("priority=3", "can only change", id="unknown-name"),
        pytest.param("concurrency=1;concurrency=2", "more than once", id="repeated"),
        pytest.param("", "nothing to change", id="empty"),
        pytest.param("concurrency=", "cannot be empty", id="empty-value"),
        pytest.param("status=SUSPENDED", "only status=RUNNING", id="status-other-than-running"),
        pytest.param("status=RUNNING;concurrency=2", "together", id="status-with-others"),
        pytest.param("pausetime=2000-01-01T00:00Z", "in the past", id="past-pause-time"),
        pytest.param("endtime=1999-01-01T00:00Z", "before the job's start", id="end-before-start-with-actions"),
    ],
)
def test_invalid_changes_are_refused_and_nothing_is_queued(owner: User, value: str, message: str) -> None:
    """DG_CommandLineTool's change rules: a refused value names the problem and queues nothing."""
    job = running_job(owner)
    before = Command.objects.count()
    with pytest.raises((ChangeRefused, IllegalTransition), match=message):
        change_job(job.id, value, actor=owner)
    assert Command.objects.count() == before


def test_change_concurrency_and_earlier_end_revokes_lookahead_actions(owner: User) -> None:
    """A new end revokes WAITING/READY actions at or after it; concurrency is stored."""
    job = running_job(owner, start=-10, end=60)
    assert job.actions.count() >= 15  # past ten minutes plus the look-ahead
    change_job(job.id, f"endtime={minute(-5)};concurrency=3", actor=owner)
    run_pending_commands()
    job.refresh_from_db()
    assert job.concurrency == 3
    assert format_datetime(job.end_time) == minute(-5)
    assert job.actions.count() == 5
    assert job.last_action_number == 5 and job.done_materializing


def test_change_end_refused_when_a_started_action_lies_beyond_it(owner: User) -> None:
    """An action past the new end that is not WAITING/READY makes the change fail, naming it."""
    job = running_job(owner, start=-10, end=60)
    finish(job, [8], ActionStatus.SUCCEEDED)
    with pytest.raises(ChangeRefused, match=r"action 8 .* is SUCCEEDED"):
        change_job(job.id, f"endtime={minute(-5)}", actor=owner)
    job.refresh_from_db()
    assert format_datetime(job.end_time) == minute(60)


def test_a_later_end_revives_a_succeeded_job(owner: User) -> None:
    """Extending the end of a SUCCEEDED job makes it RUNNING again and materializes the new actions."""
    job = running_job(owner, start=-6, end=-3)
    finish(job, [1, 2, 3], ActionStatus.SUCCEEDED)
    assert services.job_statuses(timezone.now()) == 1
    run_pending_commands()
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    change_job(job.id, f"endtime={minute(0)}", actor=owner)
    run_pending_commands()
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    assert job.actions.count() == 6


def test_status_running_revives_a_killed_job_and_killed_jobs_take_no_other_change(owner: User) -> None:
    """`status=RUNNING` is for FAILED/KILLED/IGNORED jobs; other values of a KILLED job are refused."""
    job = running_job(owner)
    control(job.id, "kill", actor=owner)
    run_pending_commands()
    with pytest.raises(IllegalTransition, match="it is KILLED"):
        change_job(job.id, "concurrency=2", actor=owner)
    change_job(job.id, "status=RUNNING", actor=owner)
    run_pending_commands()
    job.refresh_from_db()
    assert job.status in (JobStatus.RUNNING, JobStatus.RUNNINGWITHERROR)
    with pytest.raises(IllegalTransition, match="only FAILED, KILLED or IGNORED"):
        change_job(job.id, "status=RUNNING", actor=owner)


def test_pause_time_pauses_materialization_and_reset_resumes_it(owner: User) -> None:
    """Pause time reached: RUNNING -> PAUSED and nothing new is created; reset: RUNNING and the rest is created."""
    job = running_job(owner, start=-10, end=60)
    change_job(job.id, f"pausetime={minute(2)}", actor=owner)
    run_pending_commands()
    job.refresh_from_db()
    # Actions at or after the pause time were revoked; none exist past it.
    assert not job.actions.filter(nominal_time__gte=job.pause_time).exists()
    kept = job.actions.count()
    CoordinatorJob.objects.filter(pk=job.pk).update(pause_time=timezone.now() - timedelta(minutes=1))
    assert services.pause_times(timezone.now()) == 1
    assert services.pause_times(timezone.now()) == 0  # already queued: not twice
    run_pending_commands()
    job.refresh_from_db()
    assert job.status == JobStatus.PAUSED
    change_job(job.id, "pausetime=", actor=owner)
    run_pending_commands()
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING and job.pause_time is None
    assert job.actions.count() > kept


def test_rerun_cleans_outputs_and_puts_actions_back_to_waiting(owner: User, tmp_path: Path) -> None:
    """Rerun by number ranges: outputs deleted (unless -nocleanup), WAITING again, the job revived."""
    out = tmp_path / "out"
    job = running_job(owner, start=-4, end=-1, out_dir=out)
    finish(job, [1, 2], ActionStatus.FAILED)
    finish(job, [3], ActionStatus.SUCCEEDED)
    for action in job.actions.all():
        uri = action.data_out["out"][0]
        Path(uri.removeprefix("file://")).mkdir(parents=True)
        AvailableInstance.objects.create(key=f"k{action.number}", uri=uri, available_at=timezone.now(), source="storage")
    services.job_statuses(timezone.now())
    run_pending_commands()
    job.refresh_from_db()
    assert job.status == JobStatus.DONEWITHERROR
    chosen = rerun_job(job.id, actor=owner, rerun_type="action", scope="1-2", nocleanup=False)
    assert [a.number for a in chosen] == [1, 2]
    run_pending_commands()
    job.refresh_from_db()
    assert job.status in (JobStatus.RUNNING, JobStatus.RUNNINGWITHERROR)
    first = job.actions.get(number=1)
    assert first.run_count == 1
    assert first.status in (ActionStatus.WAITING, ActionStatus.READY, ActionStatus.SUBMITTED)
    assert not Path(first.data_out["out"][0].removeprefix("file://")).exists()
    assert Path(job.actions.get(number=3).data_out["out"][0].removeprefix("file://")).exists()
    assert not AvailableInstance.objects.filter(uri=first.data_out["out"][0]).exists()
    rerun_job(job.id, actor=owner, rerun_type="action", scope="3", nocleanup=True)
    run_pending_commands()
    assert Path(job.actions.get(number=3).data_out["out"][0].removeprefix("file://")).exists()
    assert job.actions.get(number=3).run_count == 1


def test_rerun_by_dates_and_failed_only(owner: User) -> None:
    """-date takes ranges and single nominal times; -failed leaves succeeded actions alone."""
    job = running_job(owner, start=-5, end=-1)
    finish(job, [1, 2, 3, 4], ActionStatus.SUCCEEDED)
    job.actions.filter(number=2).update(status=ActionStatus.FAILED)
    first, third = (format_datetime(job.actions.get(number=n).nominal_time) for n in (1, 3))
    chosen = rerun_job(job.id, actor=owner, rerun_type="date", scope=f"{first}::{third}", failed=True, nocleanup=True)
    assert [a.number for a in chosen] == [2]
    run_pending_commands()
    assert job.actions.get(number=1).run_count == 0
    assert job.actions.get(number=2).run_count == 1
    chosen = rerun_job(job.id, actor=owner, rerun_type="date", scope=third, nocleanup=True)
    assert [a.number for a in chosen] == [3]


@pytest.mark.parametrize(
    ("rerun_type", "scope", "message"),
    [
        pytest.param("action", "99", "does not exist", id="missing-action"),
        pytest.param("action", "1-5", "is WAITING", id="unfinished-action"),
        pytest.param("action", "3-1", "not a valid range", id="backwards-range"),
        pytest.param("action", "one", "expected a number", id="not-a-number"),
        pytest.param("date", "2001-01-01T00:00Z", "has the nominal time", id="no-action-at-date"),
        pytest.param("date", "someday", "someday", id="bad-date"),
        pytest.param("action", "", "is required", id="empty-scope"),
        pytest.param("coordinator", "1", "use action or date", id="bad-type"),
    ],
)
def test_invalid_reruns_are_refused_and_nothing_is_queued(owner: User, rerun_type: str, scope: str, message: str) -> None:
    """DG_CoordinatorRerun: every named action must exist and be finished; errors name the problem."""
    job = running_job(owner, start=-3, end=30)
    finish(job, [1], ActionStatus.FAILED)
    before = Command.objects.count()
    with pytest.raises(RerunRefused, match=message):
        rerun_job(job.id, actor=owner, rerun_type=rerun_type, scope=scope)
    assert Command.objects.count() == before
    assert job.actions.get(number=1).status == ActionStatus.FAILED


def test_rerun_of_a_prep_job_is_refused(owner: User) -> None:
    """Coordinator actions cannot be rerun while the job is PREP."""
    job = submit_coordinator(xml(minute(-3), minute(30)), {}, owner=owner, start=False)
    with pytest.raises(IllegalTransition, match="it is PREP"):
        rerun_job(job.id, actor=owner, rerun_type="action", scope="1")


def test_only_owner_acl_and_admins_may_change_or_rerun(owner: User) -> None:
    """Another user is refused; a user named in oozie.job.acl (or in a group named there) and an admin may act."""
    job = submit_coordinator(xml(minute(-3), minute(30)), {"oozie.job.acl": "ally,ops"}, owner=owner)
    run_pending_commands()
    finish(job, [1], ActionStatus.FAILED)
    stranger, ally = User.objects.create_user("mallory"), User.objects.create_user("ally")
    member = User.objects.create_user("gus")
    member.groups.add(Group.objects.create(name="ops"))
    admin = User.objects.create_user("root", is_staff=True, is_superuser=True)
    before = Command.objects.count()
    for attempt in (
        lambda: change_job(job.id, "concurrency=4", actor=stranger),
        lambda: rerun_job(job.id, actor=stranger, rerun_type="action", scope="1"),
        lambda: control(job.id, "suspend", actor=stranger),
        lambda: control(job.id, "kill", actor=stranger),
    ):
        with pytest.raises(JobPermissionDenied, match="'mallory' may not modify"):
            attempt()
    assert Command.objects.count() == before
    change_job(job.id, "concurrency=4", actor=ally)
    change_job(job.id, "concurrency=5", actor=member)
    rerun_job(job.id, actor=admin, rerun_type="action", scope="1")
    run_pending_commands()
    job.refresh_from_db()
    assert job.concurrency == 5
    assert CoordinatorAction.objects.get(pk=f"{job.id}@1").run_count == 1
