"""`manage.py jobs` lists like `oozie jobs`, `job -log` tells each action's story, errors print whole, app paths are absolute."""

from __future__ import annotations

import io
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.utils import timezone

from coordinators.commands import CoordActionInputCheckXCommand, CoordMaterializeXCommand
from coordinators.models import CoordinatorAction, CoordinatorJob
from datasets.timeline import format_datetime
from oozie.properties import COORD_APP_PATH
from tests.bundles.api.factories import running_bundle
from tests.oozieapi.client import Oozie
from tests.support.engine import run_pending_commands
from xcommands.queue import enqueue

pytestmark = pytest.mark.django_db(transaction=True)
LONG_NAME = "a-coordinator-name-longer-than-the-old-24-character-column"


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Every test here runs commands in process."""


@pytest.fixture
def ann() -> User:
    return User.objects.create_user("ann", password="ann-password-123")


def drain() -> None:
    run_pending_commands(100)


def run(command: str, *args: str) -> str:
    out = io.StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


def refused(command: str, *args: str) -> str:
    with pytest.raises(CommandError) as caught:
        run(command, *args)
    return str(caught.value)


def write_job(root: Path, name: str = LONG_NAME) -> Path:
    """An hourly job over the last three hours whose actions wait for `<root>/raw/<hour>/_SUCCESS`."""
    start = (timezone.now() - timedelta(hours=3)).replace(minute=0, second=0, microsecond=0)
    (root / "app").mkdir(parents=True)
    (root / "app" / "coordinator.xml").write_text(f"""
        <coordinator-app name="{name}" frequency="${{coord:hours(1)}}" start="${{start}}" end="${{end}}" timezone="UTC"
                         xmlns="uri:oozie:coordinator:0.4">
          <controls><timeout>180</timeout><concurrency>3</concurrency></controls>
          <datasets>
            <dataset name="raw" frequency="${{coord:hours(1)}}" initial-instance="{format_datetime(start)}" timezone="UTC">
              <uri-template>file://{root}/raw/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}</uri-template>
            </dataset>
          </datasets>
          <input-events><data-in name="raw" dataset="raw"><instance>${{coord:current(0)}}</instance></data-in></input-events>
          <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
        </coordinator-app>""")
    (root / "job.properties").write_text(
        f"oozie.coord.application.path=app\nstart={format_datetime(start)}\nend={format_datetime(start + timedelta(hours=3))}\n"
    )
    return root / "job.properties"


def submit(root: Path, user: str, monkeypatch: pytest.MonkeyPatch, name: str = LONG_NAME) -> CoordinatorJob:
    """`job -run -config job.properties`, given relative to the current directory as an operator types it."""
    write_job(root, name)
    monkeypatch.chdir(root)
    job_id = run("job", "-run", "-config", "job.properties", "-user", user).split("job: ", 1)[1].strip()
    drain()
    return CoordinatorJob.objects.get(pk=job_id)


def flag(job: CoordinatorJob, number: int) -> None:
    """Create the done-flag the action waits for."""
    uri = CoordinatorAction.objects.get(pk=CoordinatorAction.action_id(job.id, number)).data_in["raw"][0]
    directory = Path(uri.removeprefix("file://"))
    directory.mkdir(parents=True)
    (directory / "_SUCCESS").write_text("")


def tick_check(job: CoordinatorJob) -> None:
    """What the periodic service does: an input check naming no action, for every due one."""
    CoordinatorAction.objects.filter(job=job, status="WAITING").update(next_check_at=timezone.now() - timedelta(seconds=1))
    enqueue(CoordActionInputCheckXCommand(job_id=job.id))
    drain()


def test_jobs_lists_coordinators_in_oozie_columns_and_filters_as_the_oozie_api(
    ann: User, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`jobs -jobtype coordinator -filter` shows Oozie's columns, names in full, and selects what GET /oozie/v2/jobs selects."""
    User.objects.create_user("bob")
    mine = submit(tmp_path / "ann", "ann", monkeypatch)
    other = submit(tmp_path / "bob", "bob", monkeypatch, name="bobs-job")
    text = run("jobs", "-jobtype", "coordinator", "-filter", "status=RUNNING;user=ann", "-user", "ann")
    header, rule, *rows = text.splitlines()
    assert header.split() == ["Job", "ID", "App", "Name", "Status", "Freq", "Unit", "Started", "Next", "Materialized"]
    assert set(rule) == {"-"}
    row = next(line for line in rows if line.startswith(mine.id))
    following = "-" if mine.done_materializing or mine.next_materialize_at is None else format_datetime(mine.next_materialize_at)
    assert row.split() == [
        mine.id, LONG_NAME, "RUNNING", mine.frequency, mine.time_unit, format_datetime(mine.start_time), following,
    ]
    assert other.id not in text and rows[-1] == "coordinator jobs 1-1 of 1"
    oozie = Oozie(ann)
    for text_filter in ("status=RUNNING;user=ann", "user=bob", "name=bobs-job", "user=ann;user=bob", "status=KILLED"):
        listed = run("jobs", "-jobtype", "coordinator", "-filter", text_filter, "-user", "ann")
        cli_ids = re.findall(r"^(\S+-C)\s", listed, flags=re.MULTILINE)
        api = oozie.get("jobs", jobtype="coordinator", filter=text_filter, len=50).json()
        assert cli_ids == [job["coordJobId"] for job in api["coordinatorjobs"]], text_filter
    page = run("jobs", "-jobtype", "coordinator", "-filter", "user=ann;user=bob", "-len", "1", "-offset", "2", "-user", "ann")
    assert re.findall(r"^(\S+-C)\s", page, flags=re.MULTILINE) == [mine.id] and "coordinator jobs 2-2 of 2" in page
    assert "No Jobs match your criteria!" in run("jobs", "-filter", "status=KILLED", "-user", "ann")
    message = refused("jobs", "-filter", "colour=red", "-user", "ann")
    assert message.startswith("E0420") and "colour" in message


def test_jobs_lists_bundles_in_oozie_columns(ann: User, tmp_path: Path) -> None:
    """`jobs -jobtype bundle` shows Job ID, Bundle Name, Status, Kickoff, Created, User."""
    bundle = running_bundle(ann, tmp_path)
    header, _, *rows = run("jobs", "-jobtype", "bundle", "-user", "ann").splitlines()
    assert header.split() == ["Job", "ID", "Bundle", "Name", "Status", "Kickoff", "Created", "User"]
    row = next(line for line in rows if line.startswith(bundle.id)).split()
    assert row[:3] == [bundle.id, bundle.app_name, bundle.status] and row[-1] == "ann"
    assert format_datetime(bundle.created_at) in row


def test_cli_stores_the_application_path_absolute_and_the_api_rules_stay(
    ann: User, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A relative path typed at the CLI is stored absolute; the Oozie API's coordJobPath shows it; API submissions keep their rules."""
    job = submit(tmp_path, "ann", monkeypatch)
    app = str((tmp_path / "app").resolve())
    assert job.configuration[COORD_APP_PATH] == app and job.app_path == app
    assert Oozie(ann).get(f"job/{job.id}").json()["coordJobPath"] == app
    monkeypatch.chdir("/")
    before = CoordinatorJob.objects.count()
    answer = Oozie(ann).submit({COORD_APP_PATH: "app", "user.name": "ann", "start": "2026-01-01T00:00Z",
                                "end": "2026-01-01T03:00Z"})
    assert answer.status_code == 400 and CoordinatorJob.objects.count() == before


def test_job_log_names_the_action_on_every_action_line_and_sums_up_idle_runs(
    ann: User, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Input checks carry their actions' ids; idle checks and materializations are one line each; the API's show=log says the same."""
    job = submit(tmp_path, "ann", monkeypatch)
    for _ in range(3):
        enqueue(CoordMaterializeXCommand(job_id=job.id))  # nothing new to create
        tick_check(job)  # nothing available yet
    flag(job, 1)
    tick_check(job)  # @1 becomes READY and is submitted
    flag(job, 2)
    enqueue(CoordActionInputCheckXCommand(job_id=job.id, numbers=[2]))  # as a dataset event names it
    drain()
    lines = run("job", "-log", job.id, "-user", "ann").splitlines()
    assert lines and all(f"JOB[{job.id}]" in line and "USER[ann]" in line for line in lines)

    checks = [line for line in lines if "CoordActionInputCheckXCommand:" in line]
    assert checks and all("ACTION[-]" not in line for line in checks)
    assert any(f"ACTION[{job.id}@1]" in line and "submitted 1" in line for line in checks)
    assert any(f"ACTION[{job.id}@2]" in line for line in checks)
    idle_checks = [line for line in lines if "CoordActionInputCheckXCommand - " in line]
    assert len(idle_checks) == 1 and "ACTION[-]" in idle_checks[0]
    assert int(re.search(r"\] (\d+) run\(s\)", idle_checks[0])[1]) >= 3  # type: ignore[index]

    materializations = [line for line in lines if "CoordMaterializeXCommand" in line]
    created = [line for line in materializations if "created 3 action(s), @1 to @3" in line]
    assert len(created) == 1 and f"ACTION[{job.id}@1]" in created[0]
    assert len(materializations) == 2  # the one that created actions, and one line for the 3 that did not

    for number in (1, 2, 3):
        assert any(f"ACTION[{job.id}@{number}] created for nominal time" in line for line in lines)
    assert any(f"ACTION[{job.id}@1] inputs complete, SUBMITTED" in line for line in lines)
    waiting = next(line for line in lines if f"ACTION[{job.id}@3] WAITING after" in line)
    assert "1 input(s) missing, first file://" in waiting and "next check" in waiting and "times out" in waiting

    only_one = run("job", "-log", job.id, "-logfilter", "action=1", "-user", "ann").splitlines()
    assert only_one and all(f"ACTION[{job.id}@1]" in line for line in only_one)
    served = Oozie(ann).get(f"job/{job.id}", show="log").content.decode().splitlines()
    assert served == lines
    assert refused("job", "-log", job.id, "-logfilter", "colour=red", "-user", "ann").startswith("-logfilter: E0302")
    assert "no coordinator job" in refused("job", "-log", "0000000-000000000000000-C", "-user", "ann")


def test_job_log_is_refused_to_those_who_may_not_read(
    ann: User, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: object,
) -> None:
    """With COORD_RESTRICT_READS, `job -log` refuses a user who may not modify the job, in one line."""
    job = submit(tmp_path, "ann", monkeypatch)
    User.objects.create_user("eve")
    settings.COORD_RESTRICT_READS = True  # type: ignore[attr-defined]
    message = refused("job", "-log", job.id, "-user", "eve")
    assert "may not read" in message and "\n" not in message


def test_info_prints_errors_in_full(ann: User, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An action's error in `job -info` is whole (it was cut at 40 characters), on its row's one line."""
    job = submit(tmp_path, "ann", monkeypatch)
    error = "storage refused the write: " + "x" * 150 + " at the very end"
    CoordinatorAction.objects.filter(pk=f"{job.id}@2").update(status="FAILED", error_message=error.replace(": ", ":\n", 1))
    info = run("job", "-info", job.id, "-user", "ann")
    row = next(line for line in info.splitlines() if line.startswith(f"{job.id}@2"))
    assert row.endswith(error)
