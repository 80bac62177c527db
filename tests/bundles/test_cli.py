"""`manage.py job` on bundles: -submit/-run/-dryrun with oozie.bundle.application.path, -info, the verbs by -B id, -rerun."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from bundles.choices import BundleStatus as B
from bundles.models import BundleAction, BundleJob
from coordinators.choices import JobStatus as J
from coordinators.models import CoordinatorJob
from tests.bundles.api.factories import bundle_app, finish, running_bundle
from tests.bundles.factories import window
from tests.support.bundles import settle
from xcommands.models import Command

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("job", *args, stdout=out)
    return out.getvalue()


def refused(*args: str) -> str:
    with pytest.raises(CommandError) as caught:
        run(*args)
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.fixture
def ann() -> User:
    return User.objects.create_user("ann")


def properties_file(root: Path, bundle_path: str = "apps/bundle.xml", **extra: str) -> Path:
    """bundle.properties next to an `apps/` directory holding the bundle (its path relative to the file, as Oozie users write it)."""
    bundle_app(root / "apps")
    lines = [f"oozie.bundle.application.path={bundle_path}", *(f"{k}={v}" for k, v in {**window(), **extra}.items())]
    (root / "bundle.properties").write_text("\n".join(lines) + "\n")
    return root / "bundle.properties"


def test_submit_start_info_and_verbs(ann: User, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """-submit stores a PREP bundle (the path read relative to the properties file); -start, -info, -suspend, -resume, -change, -kill."""
    config = properties_file(tmp_path, **{"oozie.job.acl": "ops"})
    monkeypatch.chdir("/")  # not the properties file's directory
    bundle_id = run("-submit", "-config", str(config), "-user", "ann").split("job: ", 1)[1].strip()
    settle()
    bundle = BundleJob.objects.get(pk=bundle_id)
    assert bundle_id.endswith("-B") and bundle.status == B.PREP and bundle.app_path == str(tmp_path / "apps" / "bundle.xml")
    assert run("-start", bundle_id, "-user", "ann").strip() == f"start: {bundle_id} queued"
    settle()
    info = run("-info", bundle_id)
    assert f"Job ID : {bundle_id}" in info and "Job Name    : b1" in info and "Status      : RUNNING" in info
    assert "User        : ann" in info
    for action in BundleAction.objects.filter(bundle_id=bundle_id):
        line = next(line for line in info.splitlines() if line.startswith(action.coord_name))
        assert line.split()[:5] == [action.coord_name, str(action.coord_job_id), "RUNNING", "no", "0"]
    run("-suspend", bundle_id, "-user", "ann")
    settle()
    assert BundleJob.objects.get(pk=bundle_id).status == B.SUSPENDED
    assert set(CoordinatorJob.objects.filter(bundle_id=bundle_id).values_list("status", flat=True)) == {J.SUSPENDED}
    run("-resume", bundle_id, "-user", "ann")
    run("-change", bundle_id, "-value", "pausetime=2099-01-01T00:00Z", "-user", "ann")
    settle()
    bundle.refresh_from_db()
    assert bundle.status == B.RUNNING and bundle.pause_time is not None
    assert "Pause Time  : 2099-01-01T00:00Z" in run("-info", bundle_id)
    run("-kill", bundle_id, "-user", "ann")
    settle()
    assert BundleJob.objects.get(pk=bundle_id).status == B.KILLED


def test_run_starts_at_once(ann: User, tmp_path: Path) -> None:
    """-run submits and starts: its coordinators are submitted as ann, each naming the bundle."""
    bundle_id = run("-run", "-config", str(properties_file(tmp_path)), "-user", "ann").split("job: ", 1)[1].strip()
    settle()
    assert BundleJob.objects.get(pk=bundle_id).status == B.RUNNING
    jobs = CoordinatorJob.objects.filter(bundle_id=bundle_id)
    assert jobs.count() == 2 and {job.owner for job in jobs} == {ann}


def test_dryrun_text_and_json(ann: User, tmp_path: Path) -> None:
    """-dryrun prints a readable summary, --format json the dry-run JSON; nothing is stored."""
    config = str(properties_file(tmp_path))
    text = run("-dryrun", "-config", config, "-len", "2", "-user", "ann")
    assert text.startswith("bundle b1  kick-off (when started)")
    assert "coordinator daily  app " in text and "  action 2  nominal " in text and text.strip().endswith("2 coordinator(s), 2 enabled")
    result = json.loads(run("-dryrun", "-config", config, "-len", "1", "--format", "json", "-user", "nobody-here"))
    assert result["name"] == "b1" and [c["name"] for c in result["coordinators"]] == ["daily", "hourly"]
    assert result["coordinators"][0]["configuration"]["user.name"] == "nobody-here"
    assert len(result["coordinators"][0]["actions"]) == 1
    assert not (BundleJob.objects.exists() or CoordinatorJob.objects.exists() or Command.objects.exists())


def test_the_cli_reads_outside_the_application_roots(ann: User, tmp_path: Path, settings: object) -> None:
    """The CLI is trusted: the operator's own files are read wherever they are."""
    settings.COORD_APPLICATION_ROOTS = ["file:///nowhere"]  # type: ignore[attr-defined]
    assert run("-submit", "-config", str(properties_file(tmp_path)), "-user", "ann").startswith("job: ")


def test_rerun_by_coordinator_and_date(ann: User, tmp_path: Path) -> None:
    """-rerun B -coordinator daily [-date ...] -refresh -nocleanup lists the actions queued by coordinator."""
    bundle = running_bundle(ann, tmp_path)
    finish(bundle, "daily")
    out = run("-rerun", bundle.id, "-coordinator", "daily", "-refresh", "-nocleanup", "-user", "ann")
    daily = BundleAction.objects.get(bundle=bundle, coord_name="daily").coord_job_id
    count = CoordinatorJob.objects.get(pk=daily).actions.count()
    assert out.splitlines()[0] == f"coordinator daily: {count} action(s)"
    assert f"{daily}@1" in out and out.strip().endswith(f"rerun: {count} action(s) of 1 coordinator(s) of {bundle.id} queued")
    settle()
    assert CoordinatorJob.objects.get(pk=daily).actions.filter(run_count=1).count() == count


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(("-rerun", "{id}"), "needs -coordinator", id="rerun-names-nothing"),
        pytest.param(("-rerun", "{id}", "-action", "1"), "-action is not valid for a bundle rerun", id="rerun-by-action-number"),
        pytest.param(("-rerun", "{id}", "-coordinator", "daily", "-failed"), "-failed is not valid", id="rerun-failed-only"),
        pytest.param(("-rerun", "{id}", "-coordinator", "weekly"), "no coordinator 'weekly'", id="rerun-unknown-coordinator"),
        pytest.param(("-rerun", "{id}", "-coordinator", "daily"), "actions rerun", id="rerun-unfinished-actions"),
        pytest.param(("-resume", "{id}"), "cannot resume", id="resume-a-running-bundle"),
        pytest.param(("-change", "{id}", "-value", "concurrency=2"), "can only change", id="change-concurrency"),
        pytest.param(("-change", "{id}"), "needs -value", id="change-without-value"),
        pytest.param(("-kill", "0000000-000000000000000-B"), "no bundle job '0000000-000000000000000-B'", id="unknown-bundle"),
        pytest.param(("-info", "0000000-000000000000000-B"), "no bundle job", id="info-of-an-unknown-bundle"),
        pytest.param(("-suspend", "{id}", "-user", "mallory"), "user 'mallory' may not modify job", id="another-user"),
        pytest.param(("-suspend", "{id}", "-user", "ghost"), "no user 'ghost'", id="unknown-user"),
    ],
)
def test_refusals_are_one_line(ann: User, tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    """Every refusal is one line naming the problem (exit 1); nothing is queued."""
    bundle = running_bundle(ann, tmp_path)
    User.objects.create_user("mallory")
    before = Command.objects.count()
    argv = [arg.format(id=bundle.id) for arg in args]
    if "-user" not in argv:
        argv += ["-user", "ann"]
    assert message in refused(*argv)
    assert Command.objects.count() == before


@pytest.mark.parametrize(
    ("case", "message"),
    [
        pytest.param("two-paths", "not both", id="coordinator-and-bundle-paths"),
        pytest.param("missing", "cannot read", id="missing-bundle"),
        pytest.param("malformed", "bundle.xml", id="malformed-bundle"),
        pytest.param("bad-coordinator", "coordinator 'daily'", id="a-bad-coordinator"),
    ],
)
def test_refused_submissions_store_nothing(ann: User, tmp_path: Path, case: str, message: str) -> None:
    """A bad configuration, bundle or coordinator: one line naming it; no bundle, coordinator or command."""
    extra = {"oozie.coord.application.path": "apps/daily"} if case == "two-paths" else {}
    config = properties_file(tmp_path, "apps/absent.xml" if case == "missing" else "apps/bundle.xml", **extra)
    if case == "malformed":
        (tmp_path / "apps" / "bundle.xml").write_text("<bundle-app")
    if case == "bad-coordinator":
        (tmp_path / "apps" / "daily" / "coordinator.xml").write_text("<coordinator-app")
    for verb in ("-submit", "-run", "-dryrun"):
        assert message in refused(verb, "-config", str(config), "-user", "ann"), verb
    assert not (BundleJob.objects.exists() or CoordinatorJob.objects.exists() or Command.objects.exists())


def test_coordinator_options_stay_for_coordinators(ann: User, tmp_path: Path) -> None:
    """-coordinator is a bundle rerun option; a coordinator -dryrun takes --format json too."""
    bundle = running_bundle(ann, tmp_path)
    coordinator = CoordinatorJob.objects.filter(bundle_id=bundle.id).first()
    assert coordinator is not None
    assert "-coordinator is for bundle reruns" in refused("-rerun", coordinator.id, "-coordinator", "daily", "-user", "ann")
    (tmp_path / "coord.properties").write_text(
        f"oozie.coord.application.path=daily\nstart={window()['start']}\nend={window()['end']}\n"
    )
    planned = json.loads(run("-dryrun", "-config", str(tmp_path / "coord.properties"), "-len", "2", "--format", "json"))
    assert [action["number"] for action in planned["actions"]] == [1, 2]
