"""`manage.py job`: submit, start, info, suspend, resume and kill from the command line."""

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.utils import timezone

from coordinators.choices import JobStatus
from coordinators.models import CoordinatorJob
from datasets.timeline import format_datetime
from tests.support.engine import run_pending_commands

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Every test here runs commands in process."""


def drain() -> None:
    run_pending_commands(50)


def job_files(tmp_path: Path) -> Path:
    start = (timezone.now() - timedelta(minutes=5)).replace(second=0, microsecond=0)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "coordinator.xml").write_text(
        """<coordinator-app name="cli" frequency="${coord:minutes(1)}" start="${start}" end="${end}" timezone="UTC"
            xmlns="uri:oozie:coordinator:0.4">
          <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
        </coordinator-app>"""
    )
    properties = tmp_path / "job.properties"
    properties.write_text(
        f"oozie.coord.application.path=app\nstart={format_datetime(start)}\nend={format_datetime(start + timedelta(hours=1))}\n"
    )
    return properties


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("job", *args, stdout=out)
    return out.getvalue()


def test_submit_start_info_suspend_resume_kill(tmp_path: Path) -> None:
    """The oozie job verbs drive the same commands as every other interface."""
    User.objects.create_user("ann")
    properties = job_files(tmp_path)
    job_id = run("-submit", "-config", str(properties), "-user", "ann").split("job: ", 1)[1].strip()
    drain()
    assert CoordinatorJob.objects.get(pk=job_id).status == JobStatus.PREP
    run("-start", job_id, "-user", "ann")
    drain()
    info = run("-info", job_id, "-len", "3", "-order", "desc")
    assert "Status      : RUNNING" in info and "User        : ann" in info
    assert info.count(f"{job_id}@") == 3
    run("-suspend", job_id, "-user", "ann")
    drain()
    assert CoordinatorJob.objects.get(pk=job_id).status == JobStatus.SUSPENDED
    run("-resume", job_id, "-user", "ann")
    drain()
    assert CoordinatorJob.objects.get(pk=job_id).status == JobStatus.RUNNING
    run("-kill", job_id, "-user", "ann")
    drain()
    assert CoordinatorJob.objects.get(pk=job_id).status == JobStatus.KILLED


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-kill", "0000000-000000000000000-C"), "no coordinator job"),
        (("-run",), "needs -config"),
        (("-run", "-config", "/nonexistent/job.properties"), "cannot read"),
    ],
)
def test_cli_errors_are_one_line(args: tuple[str, ...], message: str) -> None:
    """Unknown ids and bad files are CommandErrors with a reason, not tracebacks."""
    with pytest.raises(CommandError, match=message):
        run(*args)


def test_run_refuses_unknown_users(tmp_path: Path) -> None:
    """The CLI acts as an existing user only."""
    with pytest.raises(CommandError, match="no user 'ghost'"):
        run("-run", "-config", str(job_files(tmp_path)), "-user", "ghost")
    assert CoordinatorJob.objects.count() == 0


def test_change_and_rerun_from_the_command_line(tmp_path: Path) -> None:
    """-change -value and -rerun -action/-date drive the same domain actions; bad values are one-line errors."""
    User.objects.create_user("ann")
    job_id = run("-run", "-config", str(job_files(tmp_path)), "-user", "ann").split("job: ", 1)[1].strip()
    drain()
    assert "queued" in run("-change", job_id, "-value", "concurrency=3", "-user", "ann")
    drain()
    assert CoordinatorJob.objects.get(pk=job_id).concurrency == 3
    with pytest.raises(CommandError, match="must be an integer"):
        run("-change", job_id, "-value", "concurrency=x", "-user", "ann")
    with pytest.raises(CommandError, match="needs -value"):
        run("-change", job_id, "-user", "ann")
    job = CoordinatorJob.objects.get(pk=job_id)
    job.actions.filter(number__in=[1, 2]).update(status="FAILED")
    out = run("-rerun", job_id, "-action", "1-2", "-nocleanup", "-user", "ann")
    assert f"{job_id}@1" in out and f"{job_id}@2" in out and "2 action(s)" in out
    drain()
    assert set(job.actions.filter(number__in=[1, 2]).values_list("run_count", flat=True)) == {1}
    with pytest.raises(CommandError, match="exactly one of -action or -date"):
        run("-rerun", job_id, "-user", "ann")
    with pytest.raises(CommandError, match="is WAITING|is READY|is SUBMITTED"):
        run("-rerun", job_id, "-action", "1", "-user", "ann")


def test_another_user_cannot_control_the_job_from_the_command_line(tmp_path: Path) -> None:
    """The CLI acts as a user and the same permission rule applies: a stranger is refused, the job unchanged."""
    User.objects.create_user("ann")
    User.objects.create_user("mal")
    job_id = run("-run", "-config", str(job_files(tmp_path)), "-user", "ann").split("job: ", 1)[1].strip()
    drain()
    for args in (("-suspend", job_id), ("-kill", job_id), ("-rerun", job_id, "-action", "1"), ("-change", job_id, "-value", "concurrency=9")):
        with pytest.raises(CommandError, match="'mal' may not modify"):
            run(*args, "-user", "mal")
    drain()
    job = CoordinatorJob.objects.get(pk=job_id)
    assert job.status == JobStatus.RUNNING and job.concurrency != 9
