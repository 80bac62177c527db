"""`oozie job -run|-submit|-dryrun -upload`: an application on the client's disk, outside the server's roots, sent and run.

The live server's application roots here hold only its upload root (tmp/server), so the
examples tree the client reads (tmp/hdfs) is out of its reach: without -upload the submission
is refused and the command says to use -upload; with it the directory is packed, sent
(POST /oozie/v2/upload), and the job runs from the server's copy.
"""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path
from typing import Any

import pytest

from coordinators.models import CoordinatorJob
from oozieclient.configuration import application
from oozieclient.http import OozieClientError
from oozieclient.upload import pack, rewritten, upload_name
from tests.coordinators.api.factories import user
from tests.oozieapi.test_oozie_job_properties import CRON_EXTRA
from tests.oozieclient.ran import Ran, RunOozie
from tests.oozieclient.test_live import job_id, layout, properties
from tests.oozieclient.test_standalone import oozie
from tests.support.engine import run_pending_commands
from workflows.models import WorkflowJob


@pytest.fixture
def server(tmp_path: Path, settings: Any) -> Path:
    """The server's only application root (tmp/server) and its upload root inside it."""
    root = tmp_path / "server"
    settings.COORD_APPLICATION_ROOTS = [f"file://{root}"]
    settings.OOZIE_UPLOAD_ROOT = str(root / "uploads")
    return root / "uploads"


def files_under(root: Path) -> list[Path]:
    """Every file (not directory) under the upload root."""
    return sorted(p for p in root.rglob("*") if p.is_file())


def uploaded_path(ran: Ran) -> str:
    """The application path the command's stderr line says it submitted."""
    line = next(line for line in ran.err.splitlines() if line.startswith("Uploaded "))
    return line.rsplit(" = ", 1)[1]


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_a_local_workflow_is_refused_then_uploaded_and_runs(run_oozie: RunOozie, tmp_path: Path, server: Path) -> None:
    """Without -upload: refused, and the hint says -upload; with it: `job: <id>`, the run reads the server's copy and succeeds."""
    user("ann")
    hdfs = layout(tmp_path)
    config = properties(tmp_path, hdfs, "no-op")
    refused = run_oozie("job", "-config", config, "-run")
    assert refused.code == 255 and refused.out == ""
    assert "is on this machine's disk" in refused.err and "run the command again with -upload" in refused.err
    assert not WorkflowJob.objects.exists() and files_under(server) == []

    ran = run_oozie("job", "-config", config, "-run", "-upload")
    workflow = WorkflowJob.objects.get(pk=job_id(ran))
    path = uploaded_path(ran)
    assert workflow.app_path == path and path.startswith(f"file://{server.resolve()}/ann/no-op-")
    assert ran.err.startswith(f"Uploaded {hdfs}/user/ann/examples/apps/no-op (1 files, ")
    assert (Path(path.removeprefix("file://")) / "workflow.xml").read_text() == (
        hdfs / "user/ann/examples/apps/no-op/workflow.xml").read_text()
    run_pending_commands()
    workflow.refresh_from_db()
    assert workflow.status == "SUCCEEDED"


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_a_coordinator_and_the_workflow_beside_it_are_uploaded_together(
    run_oozie: RunOozie, tmp_path: Path, server: Path,
) -> None:
    """workflowAppUri names the same directory: it is rewritten to the server's copy too; -dryrun -upload plans it."""
    user("ann")
    hdfs = layout(tmp_path)
    config = properties(tmp_path, hdfs, "cron", *CRON_EXTRA)
    dry = run_oozie("job", "-config", config, "-dryrun", "-upload")
    assert dry.code == 0, dry.err
    assert dry.lines[-1] == "6 action(s)", dry.out
    assert dry.lines[0].endswith(f"  app {uploaded_path(dry)}")  # each action runs the workflow of the uploaded copy
    assert not CoordinatorJob.objects.exists()

    ran = run_oozie("job", "-config", config, "-run", "-upload")
    job = CoordinatorJob.objects.get(pk=job_id(ran))
    path = uploaded_path(ran)
    assert job.app_path == path and job.configuration["workflowAppUri"] == path
    assert job.configuration["nameNode"] == f"file://{hdfs}"  # an ancestor of the directory: left as it was
    assert len({p.parent for p in files_under(server)}) == 2  # the dry run's upload and this one


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_the_servers_limits_are_checked_before_anything_is_sent(
    run_oozie: RunOozie, tmp_path: Path, server: Path, settings: Any,
) -> None:
    """Over maxBytes, maxEntries or maxUnpackedBytes: refused by the client, naming the limit; nothing uploaded, no job."""
    user("ann")
    hdfs = layout(tmp_path)
    app = hdfs / "user/ann/examples/apps/no-op"
    (app / "lib").mkdir()
    (app / "lib" / "data.bin").write_bytes(os.urandom(5000))
    config = properties(tmp_path, hdfs, "no-op")
    for setting, value, words in (
        ("OOZIE_UPLOAD_MAX_BYTES", 2000, "packs to more than 2000 bytes"),
        ("OOZIE_UPLOAD_MAX_ENTRIES", 2, "holds more than 2 files and directories"),
        ("OOZIE_UPLOAD_MAX_UNPACKED_BYTES", 4000, "hold more than 4000 bytes"),
    ):
        saved = getattr(settings, setting)
        setattr(settings, setting, value)
        ran = run_oozie("job", "-config", config, "-run", "-upload")
        assert ran.code == 255 and ran.err.startswith("Error: E0000 : -upload: ") and words in ran.err, ran.err
        setattr(settings, setting, saved)
    assert files_under(server) == [] and not WorkflowJob.objects.exists()
    assert job_id(run_oozie("job", "-config", config, "-run", "-upload"))  # within the limits: sent


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_refusals_of_upload(run_oozie: RunOozie, tmp_path: Path, server: Path, settings: Any) -> None:
    """Uploads off, no credentials, a link to a directory, another verb, storage not on this disk: one clear line, nothing stored."""
    user("ann")
    hdfs = layout(tmp_path)
    config = properties(tmp_path, hdfs, "no-op")

    settings.OOZIE_UPLOAD_MAX_BYTES = 0
    off = run_oozie("job", "-config", config, "-run", "-upload")
    assert off.code == 255 and off.err.startswith("Error: E0332 : E0332: Application uploads are not available"), off.err
    settings.OOZIE_UPLOAD_MAX_BYTES = 1_000_000

    anonymous = run_oozie("job", "-config", config, "-run", "-upload", "-D", "user.name=ann",
                          env={"OOZIE_USER": "", "OOZIE_PASSWORD": "", "OOZIE_AUTH": "SIMPLE"})
    assert anonymous.code == 255 and anonymous.err.startswith("Error: E0500 : "), anonymous.err

    app = hdfs / "user/ann/examples/apps/no-op"
    (app / "shared").symlink_to(tmp_path, target_is_directory=True)
    linked = run_oozie("job", "-config", config, "-run", "-upload")
    assert linked.code == 255 and "is a symbolic link to a directory" in linked.err
    (app / "shared").unlink()

    other_verb = run_oozie("job", "-info", "0000001-000000000000000-oozie-ann-W", "-upload")
    assert other_verb.code == 255 and "-upload goes with -run, -submit or -dryrun" in other_verb.err

    remote = tmp_path / "remote.properties"
    remote.write_text("oozie.wf.application.path=hdfs://namenode:8020/user/ann/apps/no-op\n")
    not_local = run_oozie("job", "-config", str(remote), "-run", "-upload")
    assert not_local.code == 255 and "is not on this machine's disk" in not_local.err
    assert files_under(server) == [] and not WorkflowJob.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_the_script_uploads_from_another_process(live_server: Any, in_process_engine: None, tmp_path: Path,
                                                 server: Path) -> None:
    """The `oozie` script in a separate process (no Django) sends a workflow with -submit -upload; it is PREP, then runs."""
    user("ann")
    hdfs = layout(tmp_path)
    env = {"OOZIE_URL": f"{live_server.url}/oozie", "OOZIE_USER": "ann", "OOZIE_PASSWORD": "ann-password-123"}
    done = oozie("job", "-config", properties(tmp_path, hdfs, "no-op"), "-submit", "-upload", env=env)
    workflow = WorkflowJob.objects.get(pk=job_id(Ran(done.returncode, done.stdout, done.stderr)))
    assert workflow.status == "PREP" and workflow.app_path.startswith(f"file://{server.resolve()}/ann/")
    assert oozie("job", "-start", workflow.id, env=env).returncode == 0
    run_pending_commands()
    workflow.refresh_from_db()
    assert workflow.status == "SUCCEEDED"


# ---- the client's side alone: what is packed and what is rewritten (no server) -------------------


def test_pack_sends_files_and_directories_with_plain_modes(tmp_path: Path) -> None:
    """Relative names, directories kept (empty ones too), a symbolic link to a file sent as that file, modes 0644/0755."""
    app = tmp_path / "app"
    (app / "lib").mkdir(parents=True)
    (app / "empty").mkdir()
    (app / "workflow.xml").write_text("<workflow-app/>")
    (app / "lib" / "run.sh").write_text("#!/bin/sh\n")
    (app / "lib" / "run.sh").chmod(0o700)
    (tmp_path / "outside.txt").write_text("linked")
    (app / "linked.txt").symlink_to(tmp_path / "outside.txt")
    packed = pack(app, {})
    with tarfile.open(fileobj=io.BytesIO(packed.data), mode="r:gz") as tar:
        members = {m.name: m for m in tar.getmembers()}
        linked = tar.extractfile(members["linked.txt"])
        assert linked is not None and linked.read() == b"linked"
    assert sorted(members) == ["empty", "lib", "lib/run.sh", "linked.txt", "workflow.xml"]
    assert members["linked.txt"].isreg() and members["empty"].isdir()
    assert (members["lib/run.sh"].mode, members["workflow.xml"].mode) == (0o755, 0o644)
    assert (packed.files, packed.size) == (3, len("<workflow-app/>") + len("#!/bin/sh\n") + len("linked"))


def test_an_empty_directory_is_not_sent(tmp_path: Path) -> None:
    """No files: refused on the client."""
    (tmp_path / "app" / "sub").mkdir(parents=True)
    with pytest.raises(OozieClientError, match="holds no files"):
        pack(tmp_path / "app", {})


def test_properties_inside_the_directory_follow_it(tmp_path: Path) -> None:
    """Absolute local paths inside the uploaded directory are rewritten; its ancestors, other paths and non-paths are not."""
    app = tmp_path / "apps" / "cron"
    configuration = {
        "nameNode": f"file://{tmp_path}",
        "oozie.coord.application.path": "${nameNode}/apps/cron",
        "workflowAppUri": "${nameNode}/apps/cron",
        "lib": f"{app}/lib/x.jar",
        "other": f"file://{tmp_path}/apps/cronjob",
        "queueName": "default",
        "jobTracker": "localhost:8032",
    }
    result = rewritten(configuration, app, "file:///srv/up/cron-1")
    assert result["workflowAppUri"] == "file:///srv/up/cron-1"
    assert result["lib"] == "file:///srv/up/cron-1/lib/x.jar"
    assert {k: result[k] for k in ("nameNode", "other", "queueName", "jobTracker")} == {
        k: configuration[k] for k in ("nameNode", "other", "queueName", "jobTracker")}
    app_path = application(configuration)
    assert app_path is not None and app_path.local == f"{tmp_path}/apps/cron"


@pytest.mark.parametrize(("name", "expected"), [("no-op", "no-op"), ("my app (v2)", "my-app-v2-"), (".hidden", "hidden"),
                                                ("...", "app")], ids=["plain", "spaces", "hidden", "dots-only"])
def test_the_upload_name_is_a_plain_file_name(tmp_path: Path, name: str, expected: str) -> None:
    """The server takes letters, digits, `.`, `_`, `-`, not starting with a dot: the directory's name made so."""
    assert upload_name(tmp_path / name) == expected
