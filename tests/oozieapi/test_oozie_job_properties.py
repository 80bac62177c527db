"""Oozie's own job.properties, unchanged but `nameNode`: `${nameNode}/user/${user.name}/${examplesRoot}/apps/...`.

Every Oozie example names its application through references to other properties (DG_Examples.md);
they are expanded as Hadoop's Configuration expands them, with `user.name` the submitting user,
in the CLI, the Oozie API and the native API, for workflows, coordinators and bundles.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from bundles.models import BundleJob
from coordinators.models import CoordinatorJob
from oozie.definitions import parse_properties
from tests.coordinators.api.factories import token, user
from tests.oozieapi.client import Oozie, error_of
from workflows.models import WorkflowJob

pytestmark = pytest.mark.django_db

NO_OP = """<workflow-app xmlns="uri:oozie:workflow:0.2" name="no-op-wf">
    <start to="end"/>
    <end name="end"/>
</workflow-app>
"""
CRON = """<coordinator-app name="cron-coord" frequency="${coord:minutes(10)}" start="${start}" end="${end}"
    timezone="UTC" xmlns="uri:oozie:coordinator:0.2">
  <action><workflow><app-path>${workflowAppUri}</app-path>
    <configuration><property><name>queueName</name><value>${queueName}</value></property></configuration>
  </workflow></action>
</coordinator-app>
"""
BUNDLE = """<bundle-app name="bundle-app" xmlns="uri:oozie:bundle:0.2">
  <coordinator name="cron"><app-path>${nameNode}/user/${user.name}/${examplesRoot}/apps/cron</app-path></coordinator>
</bundle-app>
"""


def examples(tmp_path: Path, owner: str) -> Path:
    """Oozie's examples tree under a local 'name node', as `oozie-examples.tar.gz` unpacks it in HDFS."""
    apps = tmp_path / "hdfs" / "user" / owner / "examples" / "apps"
    for name, files in {
        "no-op": {"workflow.xml": NO_OP},
        "cron": {"coordinator.xml": CRON, "workflow.xml": NO_OP},
        "bundle": {"bundle.xml": BUNDLE},
    }.items():
        (apps / name).mkdir(parents=True)
        for filename, text in files.items():
            (apps / name / filename).write_text(text)
    return tmp_path / "hdfs"


def job_properties(hdfs: Path, app: str, *extra: str) -> str:
    """The example's job.properties as Oozie ships it, only nameNode changed."""
    lines = [
        f"nameNode=file://{hdfs}",
        "jobTracker=localhost:8032",
        "queueName=default",
        "examplesRoot=examples",
        *extra,
    ]
    path = {"no-op": "oozie.wf.application.path", "cron": "oozie.coord.application.path",
            "bundle": "oozie.bundle.application.path"}[app]
    lines.append(f"{path}=${{nameNode}}/user/${{user.name}}/${{examplesRoot}}/apps/{app}")
    return "\n".join(lines) + "\n"


CRON_EXTRA = ("start=2026-01-01T00:00Z", "end=2026-01-01T01:00Z",
              "workflowAppUri=${nameNode}/user/${user.name}/${examplesRoot}/apps/cron")


def test_the_cli_runs_the_examples_as_shipped(tmp_path: Path) -> None:
    """`job -submit -config job.properties -user ann` for the no-op workflow, the cron coordinator and the bundle."""
    user("ann")
    hdfs = examples(tmp_path, "ann")
    for app, extra in (("no-op", ()), ("cron", CRON_EXTRA), ("bundle", CRON_EXTRA)):
        config = tmp_path / f"{app}.properties"
        config.write_text(job_properties(hdfs, app, *extra))
        out = io.StringIO()
        call_command("job", "-submit", "-config", str(config), "-user", "ann", stdout=out)
        assert out.getvalue().startswith("job: "), out.getvalue()
    workflow = WorkflowJob.objects.get()
    assert workflow.app_path == f"file://{hdfs}/user/ann/examples/apps/no-op"
    assert workflow.configuration["user.name"] == "ann"
    coordinator = CoordinatorJob.objects.get()  # the CLI stores where it read the definition (a local path here)
    assert coordinator.app_path.removeprefix("file://") == f"{hdfs}/user/ann/examples/apps/cron"
    assert coordinator.configuration["workflowAppUri"] == f"file://{hdfs}/user/ann/examples/apps/cron"
    assert BundleJob.objects.get().app_path == f"file://{hdfs}/user/ann/examples/apps/bundle"


def test_an_oozie_client_submits_the_examples_as_shipped(tmp_path: Path) -> None:
    """`POST /oozie/v1/jobs` with the examples' properties: the workflow, the coordinator (and its dry-run)."""
    ann = user("ann")
    hdfs = examples(tmp_path, "ann")
    client = Oozie(ann, version="v1")
    workflow = client.submit(parse_properties(job_properties(hdfs, "no-op")))
    assert workflow.status_code == 201, error_of(workflow)
    assert WorkflowJob.objects.get(pk=workflow.json()["id"]).app_path.endswith("/user/ann/examples/apps/no-op")
    cron = parse_properties(job_properties(hdfs, "cron", *CRON_EXTRA))
    planned = client.submit(cron, action="dryrun")
    assert planned.status_code == 200, error_of(planned)
    assert f"file://{hdfs}/user/ann/examples/apps/cron" in planned.content.decode()
    coordinator = client.submit(cron)
    assert coordinator.status_code == 201, error_of(coordinator)
    assert CoordinatorJob.objects.get(pk=coordinator.json()["id"]).app_path == f"file://{hdfs}/user/ann/examples/apps/cron"


def test_the_native_api_expands_the_job_configuration(tmp_path: Path) -> None:
    """POST /api/v1/workflows/ with the example's properties names the application it means."""
    ann = user("ann")
    hdfs = examples(tmp_path, "ann")
    client = Client(headers={"Authorization": f"Token {token(ann)}"})
    response = client.post("/api/v1/workflows/", {"properties": parse_properties(job_properties(hdfs, "no-op"))},
                           content_type="application/json")
    assert response.status_code == 201, response.content
    assert response.json()["app_path"] == f"file://{hdfs}/user/ann/examples/apps/no-op"


def test_references_follow_hadoops_rules(tmp_path: Path) -> None:
    """A reference to no property stays as written and is refused where it is used; a cycle is refused by name."""
    user("ann")
    hdfs = examples(tmp_path, "ann")
    unknown = tmp_path / "unknown.properties"
    unknown.write_text(job_properties(hdfs, "no-op").replace("nameNode=", "nameNodeTypo="))
    with pytest.raises(CommandError, match=r"\$\{nameNode\}/user/ann/examples/apps/no-op"):
        call_command("job", "-submit", "-config", str(unknown), "-user", "ann", stdout=io.StringIO())
    looping = tmp_path / "looping.properties"
    looping.write_text(job_properties(hdfs, "no-op") + "a=${b}\nb=${a}\n")
    with pytest.raises(CommandError, match="refers to itself"):
        call_command("job", "-submit", "-config", str(looping), "-user", "ann", stdout=io.StringIO())
    assert not WorkflowJob.objects.exists()


def test_user_name_is_the_submitting_user(tmp_path: Path) -> None:
    """`user.name` in the file naming someone else is refused for a user; `${user.name}` is the -user."""
    user("ann")
    user("bob")
    hdfs = examples(tmp_path, "ann")
    config = tmp_path / "claimed.properties"
    config.write_text(job_properties(hdfs, "no-op") + "user.name=ann\n")
    with pytest.raises(CommandError, match="does not match"):
        call_command("job", "-submit", "-config", str(config), "-user", "bob", stdout=io.StringIO())
    plain = tmp_path / "plain.properties"
    plain.write_text(job_properties(hdfs, "no-op"))
    with pytest.raises(CommandError, match="/user/bob/examples/apps/no-op"):  # bob has no examples tree
        call_command("job", "-submit", "-config", str(plain), "-user", "bob", stdout=io.StringIO())
    assert not WorkflowJob.objects.exists()


def test_a_coordinator_dry_run_needs_no_database(tmp_path: Path) -> None:
    """`job -dryrun` before `migrate` (no user table yet) plans the actions; the -user is only a name then."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "VAR_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path / 'empty.sqlite3'}"}
    done = subprocess.run(
        [sys.executable, "manage.py", "job", "-dryrun", "-config", "examples/pipeline/hourly.properties", "-user", "ann"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "action(s)" in done.stdout and "OperationalError" not in done.stderr
