"""Update (DG_CommandLineTool "Updating coordinator definition and properties"): definition read again, validated, diffed, applied."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from coordinators.choices import JobStatus
from coordinators.commands.update import UpdateRefused, unified, update_diff
from coordinators.models import CoordinatorJob
from coordinators.services import change_job, submit_coordinator, submit_from_properties, update_job
from datasets.timeline import format_datetime
from kernel.permissions import JobPermissionDenied
from oozie.definitions import DefinitionError
from statusservice.coordinators import materialization_trigger
from tests.support.engine import run_pending_commands
from xcommands.choices import CommandStatus
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)
APP_PATH = "oozie.coord.application.path"


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None, settings: Any) -> None:
    """Commands run in process; a short look-ahead, so later actions are created after an update."""
    settings.COORD_MATERIALIZATION_LOOKAHEAD_SECONDS = 60


@pytest.fixture
def ann() -> User:
    return User.objects.create_user("ann")


def coordinator(*, name: str = "upd", colour: str = "red", concurrency: int = 1, frequency: str = "${coord:minutes(1)}",
                start: str = "${start}", end: str = "${end}", zone: str = "UTC") -> str:
    return f"""<coordinator-app name="{name}" frequency="{frequency}" start="{start}" end="{end}" timezone="{zone}"
    xmlns="uri:oozie:coordinator:0.4">
  <controls>
    <concurrency>{concurrency}</concurrency>
  </controls>
  <action>
    <workflow>
      <app-path>task:examples.noop</app-path>
      <configuration>
        <property><name>colour</name><value>{colour}</value></property>
        <property><name>size</name><value>${{size}}</value></property>
      </configuration>
    </workflow>
  </action>
</coordinator-app>
"""


def window() -> dict[str, str]:
    start = timezone.now().replace(second=0, microsecond=0) - timedelta(minutes=3)
    return {"start": format_datetime(start), "end": format_datetime(start + timedelta(hours=1)), "size": "9"}


def submitted(owner: User, app: Path, **xml: Any) -> CoordinatorJob:
    """A running job read from `app`/coordinator.xml."""
    app.mkdir(exist_ok=True)
    (app / "coordinator.xml").write_text(coordinator(**xml))
    job = submit_from_properties({APP_PATH: f"file://{app}", **window()}, owner=owner)
    run_pending_commands()
    return CoordinatorJob.objects.get(pk=job.pk)


def rewrite(app: Path, **xml: Any) -> None:
    (app / "coordinator.xml").write_text(coordinator(**xml))


def snapshot(job: CoordinatorJob) -> tuple[Any, ...]:
    job = CoordinatorJob.objects.get(pk=job.pk)
    return job.definition, job.configuration, job.concurrency, job.app_path, job.status


def test_unified_hunks_are_printed_as_oozie_prints_them() -> None:
    """No file header; `@@ -a,b +c,d @@`, three lines of context; a missing final newline is marked."""
    old = "".join(f"line {n}\n" for n in range(1, 11))
    new = old.replace("line 5\n", "line five\n")
    assert unified(old, new) == (
        "@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+line five\n line 6\n line 7\n line 8\n"
    )
    assert unified("a", "b") == "@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n"
    assert unified(old, old) == ""
    text = update_diff(old, new, None, None)
    assert text.startswith("**********Job definition changes**********\n@@ -2,7 +2,7 @@\n")
    assert text.endswith(
        "******************************************\n**********Job conf changes****************\n"
        "No conf update requested\n******************************************\n"
    )


def test_dryrun_shows_the_diff_and_changes_nothing(ann: User, tmp_path: Path) -> None:
    """-dryrun: Oozie's diff of the definition; no command, nothing stored."""
    job = submitted(ann, tmp_path / "app")
    rewrite(tmp_path / "app", concurrency=3)
    before, commands = snapshot(job), Command.objects.count()
    plan = update_job(job.id, actor=ann, dryrun=True)
    assert "-    <concurrency>1</concurrency>\n+    <concurrency>3</concurrency>\n" in plan.diff
    assert "No conf update requested" in plan.diff
    assert not plan.queued
    assert snapshot(job) == before
    assert Command.objects.count() == commands


def test_an_update_applies_to_actions_created_after_it(ann: User, tmp_path: Path, settings: Any) -> None:
    """The new definition and controls are stored; existing actions keep their configuration, new ones take the new one."""
    job = submitted(ann, tmp_path / "app")
    existing = job.last_action_number
    assert existing >= 1
    rewrite(tmp_path / "app", colour="blue", concurrency=2)
    plan = update_job(job.id, actor=ann)
    assert plan.queued and "-        <property><name>colour</name><value>red</value></property>" in plan.diff
    run_pending_commands()
    job = CoordinatorJob.objects.get(pk=job.pk)
    assert "blue" in job.definition and job.concurrency == 2
    assert job.configuration["size"] == "9"  # no configuration given: the old one stays
    settings.COORD_MATERIALIZATION_LOOKAHEAD_SECONDS = 600
    materialization_trigger(timezone.now())
    run_pending_commands()
    colours = dict(job.actions.values_list("number", "run_conf__colour"))
    assert len(colours) > existing
    assert {colours[n] for n in range(1, existing + 1)} == {"red"}
    assert {colours[n] for n in colours if n > existing} == {"blue"}


def test_a_new_configuration_replaces_the_old_one(ann: User, tmp_path: Path) -> None:
    """-config: the properties are replaced whole (app path kept if not given, user.name the owner's); the diff shows them."""
    job = submitted(ann, tmp_path / "app")
    new = {**window(), "size": "12", "user.name": "somebody-else"}
    plan = update_job(job.id, actor=ann, configuration=new)
    assert "-    <value>9</value>\n+    <value>12</value>\n" in plan.diff
    assert "No conf update requested" not in plan.diff
    run_pending_commands()
    job = CoordinatorJob.objects.get(pk=job.pk)
    assert job.configuration["size"] == "12"
    assert job.configuration["user.name"] == "ann"
    assert job.configuration[APP_PATH] == f"file://{tmp_path / 'app'}"


def test_a_configuration_can_name_another_application(ann: User, tmp_path: Path) -> None:
    """To change the entire XML, the new configuration names another oozie.coord.application.path."""
    job = submitted(ann, tmp_path / "app")
    other = tmp_path / "other"
    other.mkdir()
    (other / "coordinator.xml").write_text(coordinator(colour="green"))
    update_job(job.id, actor=ann, configuration={**window(), APP_PATH: f"file://{other}"})
    run_pending_commands()
    job = CoordinatorJob.objects.get(pk=job.pk)
    assert "green" in job.definition and job.app_path.endswith("/other")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param({"name": "renamed"}, "Coord name can't be changed", id="name"),
        pytest.param({"frequency": "${coord:minutes(5)}"}, "Frequency can't be changed", id="frequency"),
        pytest.param({"start": "2020-01-01T00:00Z"}, "Start time can't be changed", id="start"),
        pytest.param({"end": "2099-01-01T00:00Z"}, "End time can't be changed", id="end"),
        pytest.param({"zone": "Europe/Paris"}, "TimeZone can't be changed", id="timezone"),
    ],
)
def test_what_an_update_may_not_change(ann: User, tmp_path: Path, change: dict[str, str], message: str) -> None:
    """Name, frequency, start, end and time zone are the job's: such an update is refused and changes nothing."""
    job = submitted(ann, tmp_path / "app")
    rewrite(tmp_path / "app", **change)
    before, commands = snapshot(job), Command.objects.count()
    with pytest.raises(UpdateRefused, match=message):
        update_job(job.id, actor=ann)
    assert snapshot(job) == before and Command.objects.count() == commands


def test_the_same_frequency_written_otherwise_is_no_change(ann: User, tmp_path: Path) -> None:
    """`60` and `${coord:hours(1)}` are one frequency (Oozie compares minutes)."""
    job = submitted(ann, tmp_path / "app", frequency="60")
    rewrite(tmp_path / "app", frequency="${coord:hours(1)}", concurrency=4)
    assert "+    <concurrency>4</concurrency>" in update_job(job.id, actor=ann, dryrun=True).diff


@pytest.mark.parametrize(
    ("text", "configuration", "error"),
    [
        pytest.param("<coordinator-app", None, "not well-formed|XML", id="malformed-xml"),
        pytest.param("<!DOCTYPE x [<!ENTITY a 'b'>]><x/>", None, "DOCTYPE|DTD|entit", id="doctype"),
        pytest.param(None, {"start": "2026-01-01T00:00Z"}, "size|end", id="unresolved-variable"),
    ],
)
def test_bad_input_changes_nothing(
    ann: User, tmp_path: Path, text: str | None, configuration: dict[str, str] | None, error: str
) -> None:
    """A definition that does not validate, or a configuration leaving variables unresolved, is refused whole."""
    job = submitted(ann, tmp_path / "app")
    if text is not None:
        (tmp_path / "app" / "coordinator.xml").write_text(text)
    before, commands = snapshot(job), Command.objects.count()
    with pytest.raises(DefinitionError, match=error):
        update_job(job.id, actor=ann, configuration=configuration)
    assert snapshot(job) == before and Command.objects.count() == commands


def test_an_application_outside_the_roots_is_refused(ann: User, tmp_path: Path) -> None:
    """API callers read only under COORD_APPLICATION_ROOTS, as for a submission."""
    job = submitted(ann, tmp_path / "app")
    with pytest.raises(DefinitionError, match="outside the application roots"):
        update_job(job.id, actor=ann, configuration={**window(), APP_PATH: "file:///etc"})


@pytest.mark.parametrize("status", [JobStatus.SUCCEEDED, JobStatus.DONEWITHERROR])
def test_a_finished_job_is_not_updated(ann: User, tmp_path: Path, status: str) -> None:
    """CoordUpdateXCommand: a job that has finished processing is refused."""
    job = submitted(ann, tmp_path / "app")
    CoordinatorJob.objects.filter(pk=job.pk).update(status=status)
    with pytest.raises(UpdateRefused, match="finished processing"):
        update_job(job.id, actor=ann, dryrun=True)


def test_only_who_may_modify_the_job_updates(ann: User, tmp_path: Path) -> None:
    """Ownership as for every verb."""
    job = submitted(ann, tmp_path / "app")
    with pytest.raises(JobPermissionDenied):
        update_job(job.id, actor=User.objects.create_user("bob"), dryrun=True)


def test_a_job_submitted_inline_needs_an_application_path(ann: User, tmp_path: Path) -> None:
    """Nothing to read again without an app path: refused, unless the new configuration names one."""
    job = submit_coordinator(coordinator(), window(), owner=ann)
    with pytest.raises(UpdateRefused, match="without an application path"):
        update_job(job.id, actor=ann)
    (tmp_path / "coordinator.xml").write_text(coordinator(concurrency=5))
    plan = update_job(job.id, actor=ann, configuration={**window(), APP_PATH: str(tmp_path)}, dryrun=True)
    assert "+    <concurrency>5</concurrency>" in plan.diff


def test_an_update_overtaken_by_another_change_is_skipped(ann: User, tmp_path: Path) -> None:
    """The command applies the update only to the job it was checked against (here: its end moved meanwhile)."""
    job = submitted(ann, tmp_path / "app")
    rewrite(tmp_path / "app", concurrency=3)
    update_job(job.id, actor=ann)
    CoordinatorJob.objects.filter(pk=job.pk).update(end_time=job.end_time - timedelta(minutes=1))
    run_pending_commands()
    assert Command.objects.get(name="coordinators.CoordUpdateXCommand").status == CommandStatus.SKIPPED
    assert CoordinatorJob.objects.get(pk=job.pk).concurrency == 1


def test_after_an_end_change_the_definition_must_match(ann: User, tmp_path: Path) -> None:
    """As Oozie: the end compared with is the job's (moved by -change); the diff says to use -change."""
    job = submitted(ann, tmp_path / "app")
    change_job(job.id, f"endtime={format_datetime(job.end_time + timedelta(hours=1))}", actor=ann)
    run_pending_commands()
    with pytest.raises(UpdateRefused, match="-change endtime"):
        update_job(job.id, actor=ann, dryrun=True)


def latest_coordinator(root: Path, *, folder: str = "raw", concurrency: int = 1) -> str:
    """A coordinator whose input is coord:latest(0): its actions wait with the expression until they start."""
    return f"""<coordinator-app name="lat" frequency="${{coord:minutes(1)}}" start="${{start}}" end="${{end}}" timezone="UTC"
    xmlns="uri:oozie:coordinator:0.4">
  <controls><concurrency>{concurrency}</concurrency></controls>
  <datasets><dataset name="raw" frequency="${{coord:minutes(1)}}" initial-instance="2020-01-01T00:00Z" timezone="UTC">
    <uri-template>file://{root}/{folder}/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}${{MINUTE}}</uri-template></dataset></datasets>
  <input-events><data-in name="in" dataset="raw"><instance>${{coord:latest(0)}}</instance></data-in></input-events>
  <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
</coordinator-app>
"""


def test_inputs_under_waiting_latest_actions_do_not_change(ann: User, tmp_path: Path) -> None:
    """WAITING actions resolve coord:latest at start against the job's definition: an update of their inputs waits."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "coordinator.xml").write_text(latest_coordinator(tmp_path))
    job = submit_from_properties({APP_PATH: f"file://{app}", **window()}, owner=ann)
    run_pending_commands()
    job = CoordinatorJob.objects.get(pk=job.pk)
    assert job.actions.filter(status="WAITING").exists()
    (app / "coordinator.xml").write_text(latest_coordinator(tmp_path, folder="elsewhere"))
    with pytest.raises(UpdateRefused, match="coord:latest"):
        update_job(job.id, actor=ann, dryrun=True)
    (app / "coordinator.xml").write_text(latest_coordinator(tmp_path, concurrency=3))
    assert "+  <controls><concurrency>3</concurrency></controls>" in update_job(job.id, actor=ann, dryrun=True).diff
