"""An Oozie apps tree runs unchanged: its hdfs:// URIs mapped (STORAGE_URI_MAP) to file:// and memory:// storage.

Oozie's examples name everything under `${nameNode}/user/${user.name}/${examplesRoot}`; with
`nameNode=hdfs://namenode:8020` left as shipped and the name node mapped to a local directory,
the application path, its fs action, its `fs:` functions and its sub-workflow all read and write
there; a dataset on `hdfs://` mapped to `memory://` is available once its done-flag is written there.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import fsspec
import pytest
from django.core.management import call_command
from django.utils import timezone

from coordinators.choices import ActionStatus
from coordinators.models import CoordinatorAction, CoordinatorJob
from datasets.availability import is_available
from oozie.definitions import parse_properties
from statusservice.tasks import input_checks
from tests.coordinators.api.factories import user
from tests.oozieapi.client import Oozie, error_of
from tests.support.coordinator_apps import minute
from tests.support.engine import run_pending_commands
from tests.support.workflow_apps import drive
from workflows.choices import WorkflowStatus as W
from workflows.models import WorkflowJob

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]

NAME_NODE = "hdfs://namenode:8020"
HOME = "${nameNode}/user/${wf:user()}/${examplesRoot}"
FS_DEMO = f"""<workflow-app xmlns="uri:oozie:workflow:0.5" name="fs-demo">
  <start to="mkdir"/>
  <action name="mkdir"><fs><mkdir path="{HOME}/output-data/demo"/></fs><ok to="check"/><error to="fail"/></action>
  <decision name="check"><switch>
    <case to="sub">${{fs:exists(concat(nameNode, '/user/ann/examples/output-data/demo'))}}</case>
    <default to="fail"/></switch></decision>
  <action name="sub"><sub-workflow><app-path>{HOME}/apps/no-op</app-path></sub-workflow><ok to="end"/><error to="fail"/></action>
  <kill name="fail"><message>failed at ${{wf:lastErrorNode()}}: ${{wf:errorMessage(wf:lastErrorNode())}}</message></kill>
  <end name="end"/>
</workflow-app>
"""
NO_OP = '<workflow-app xmlns="uri:oozie:workflow:0.2" name="no-op-wf"><start to="end"/><end name="end"/></workflow-app>'
JOB_PROPERTIES = f"""nameNode={NAME_NODE}
jobTracker=localhost:8032
queueName=default
examplesRoot=examples
oozie.wf.application.path=${{nameNode}}/user/${{user.name}}/${{examplesRoot}}/apps/fs-demo
"""


def name_node(tmp_path: Path) -> Path:
    """The examples tree under the directory the name node is mapped to."""
    apps = tmp_path / "hdfs" / "user" / "ann" / "examples" / "apps"
    for name, text in (("fs-demo", FS_DEMO), ("no-op", NO_OP)):
        (apps / name).mkdir(parents=True)
        (apps / name / "workflow.xml").write_text(text)
    return tmp_path / "hdfs"


def test_an_oozie_apps_tree_runs_unchanged_on_a_mapped_name_node(tmp_path: Path, settings: Any) -> None:
    """Submitted through the Oozie API as shipped: the fs action, fs:exists and the sub-workflow use the local tree."""
    hdfs = name_node(tmp_path)
    settings.STORAGE_URI_MAP = {NAME_NODE: f"file://{hdfs}"}
    client = Oozie(user("ann"), version="v1")
    response = client.submit(parse_properties(JOB_PROPERTIES), action="start")
    assert response.status_code == 201, error_of(response)
    drive()
    workflow = WorkflowJob.objects.get(pk=response.json()["id"])
    assert workflow.status == W.SUCCEEDED, workflow.error_message
    assert workflow.app_path == f"{NAME_NODE}/user/ann/examples/apps/fs-demo"  # the job keeps what was submitted
    assert (hdfs / "user" / "ann" / "examples" / "output-data" / "demo").is_dir()
    child = WorkflowJob.objects.get(parent_workflow=workflow)
    assert (child.status, child.app_name) == (W.SUCCEEDED, "no-op-wf")


def test_the_dry_run_shows_the_mapped_uris(tmp_path: Path, settings: Any) -> None:
    """`job -dryrun` of the workflow names where it is read from; without the mapping the hdfs:// tree is not there."""
    hdfs = name_node(tmp_path)
    config = tmp_path / "job.properties"
    config.write_text(JOB_PROPERTIES)
    user("ann")
    with pytest.raises(Exception, match="hdfs://namenode:8020/user/ann/examples/apps/fs-demo"):
        call_command("job", "-dryrun", "-config", str(config), "-user", "ann", stdout=io.StringIO())
    settings.STORAGE_URI_MAP = {NAME_NODE: f"file://{hdfs}"}
    out = io.StringIO()
    call_command("job", "-dryrun", "-config", str(config), "-user", "ann", "-format", "json", stdout=out)
    assert json.loads(out.getvalue())["app_path"] == f"file://{hdfs}/user/ann/examples/apps/fs-demo"


def test_a_mapping_outside_the_roots_is_refused(tmp_path: Path, settings: Any) -> None:
    """The name node mapped to a directory outside COORD_APPLICATION_ROOTS: the submission is refused, nothing stored."""
    name_node(tmp_path)
    settings.STORAGE_URI_MAP = {NAME_NODE: "file:///etc"}
    response = Oozie(user("ann"), version="v1").submit(parse_properties(JOB_PROPERTIES), action="start")
    assert response.status_code == 400, error_of(response)
    assert "outside the application roots" in error_of(response)[2] and "file:///etc" in error_of(response)[2]
    assert not WorkflowJob.objects.exists()


DATASET_COORD = f"""<coordinator-app name="wait-for-hdfs" frequency="${{coord:days(1)}}" start="{{start}}" end="{{end}}"
    timezone="UTC" xmlns="uri:oozie:coordinator:0.4">
  <datasets><dataset name="logs" frequency="${{coord:days(1)}}" initial-instance="2020-01-01T00:00Z" timezone="UTC">
    <uri-template>{NAME_NODE}/data/logs/${{YEAR}}${{MONTH}}${{DAY}}</uri-template><done-flag>_SUCCESS</done-flag>
  </dataset></datasets>
  <input-events><data-in name="in" dataset="logs"><instance>${{coord:current(0)}}</instance></data-in></input-events>
  <action><workflow><app-path>{{app}}</app-path>
    <configuration><property><name>input</name><value>${{coord:dataIn('in')}}</value></property></configuration>
  </workflow></action>
</coordinator-app>
"""


def test_a_dataset_on_a_mapped_hdfs_becomes_available_when_its_done_flag_is_written(tmp_path: Path, settings: Any) -> None:
    """The dataset's hdfs:// URI is looked for on memory://; the action waits until _SUCCESS is written there."""
    settings.STORAGE_URI_MAP = {NAME_NODE: "memory://migrated"}
    start = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    day = start.strftime("%Y%m%d")
    memory = fsspec.filesystem("memory")
    memory.rm("/migrated", recursive=True) if memory.exists("/migrated") else None
    workflow_dir = name_node(tmp_path) / "user" / "ann" / "examples" / "apps" / "no-op"
    xml = (DATASET_COORD.replace("{start}", start.strftime("%Y-%m-%dT%H:%MZ")).replace("{end}", minute(1))
           .replace("{app}", str(workflow_dir)))
    (tmp_path / "coord").mkdir()
    (tmp_path / "coord" / "coordinator.xml").write_text(xml)
    config = tmp_path / "coord.properties"
    config.write_text(f"oozie.coord.application.path={tmp_path / 'coord'}\n")
    user("ann")
    out = io.StringIO()
    call_command("job", "-dryrun", "-config", str(config), "-user", "ann", stdout=out)
    assert f"data-in in: memory://migrated/data/logs/{day}" in out.getvalue()  # the dry-run shows where it is looked for
    assert f"input = memory://migrated/data/logs/{day}" in out.getvalue()
    call_command("job", "-run", "-config", str(config), "-user", "ann", stdout=io.StringIO())
    job = CoordinatorJob.objects.get()
    run_pending_commands()
    input_checks()
    run_pending_commands()
    action = job.actions.get(number=1)
    assert action.status == ActionStatus.WAITING
    uri = f"{NAME_NODE}/data/logs/{day}"
    assert action.data_in == {"in": [uri]}  # the action names the dataset as the coordinator does
    assert not is_available(uri, "_SUCCESS", timezone.now())
    memory.pipe(f"/migrated/data/logs/{day}/_SUCCESS", b"")
    CoordinatorAction.objects.filter(pk=action.pk).update(next_check_at=timezone.now())  # its backoff over
    input_checks()
    run_pending_commands()
    drive()
    run_pending_commands()
    action.refresh_from_db()
    assert action.status == ActionStatus.SUCCEEDED, action.error_message
    assert is_available(uri, "_SUCCESS", timezone.now())
    memory.rm("/migrated", recursive=True)
