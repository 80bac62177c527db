"""The `oozie` command's output, line by line, has the shape of the examples in Oozie's DG_CommandLineTool.md.

The examples are parsed out of the page (tests/oozieclient/reference): the same labels, the
same column headers, the dashed separators in the same places, as many rows as the example
shows. Values differ (ids, names, dates); where today's OozieCLI prints more than the page's
older examples, the additions are named here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.coordinators.api.factories import user
from tests.oozieapi.test_oozie_job_properties import CRON_EXTRA
from tests.oozieclient.doc_examples import example, label, shape
from tests.oozieclient.ran import RunOozie
from tests.oozieclient.test_live import job_id, layout, properties
from tests.support.engine import run_pending_commands

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]

INFO = "Checking the Information and Status of a Workflow, Coordinator or Bundle Job or a Coordinator Action"
HEADERS = ("Job I", "Action Name")
# OozieCLI.printJob today: `Job ID : <id>` above the first ruler, `Last Modified` and `CoordAction ID` among the labels.
NEWER_LABELS = ("Last Modified", "CoordAction ID")


@pytest.fixture
def ann(db: None) -> User:
    """ann, with Oozie's examples tree under her name."""
    return user("ann")


def test_job_run_prints_the_job_line(run_oozie: RunOozie, ann: User, tmp_path: Path) -> None:
    """`job: 15-20090525161321-oozie-joe` (Running a Workflow ... Job): one line, `job: ` and the id."""
    [expected] = example("Running a Workflow, Coordinator or Bundle Job")
    ran = run_oozie("job", "-config", properties(tmp_path, layout(tmp_path), "no-op"), "-run")
    assert ran.code == 0
    pattern = re.compile(r"job: \S+")
    assert pattern.fullmatch(expected) and pattern.fullmatch(ran.out.rstrip("\n")), (expected, ran.out)


def test_workflow_info_has_the_examples_labels_and_tables(run_oozie: RunOozie, ann: User, tmp_path: Path) -> None:
    """-info of a workflow: ruler, the labels in order, `Actions`, ruler, the actions header, ruler, a row, ruler."""
    workflow = job_id(run_oozie("job", "-config", properties(tmp_path, layout(tmp_path), "shell"), "-run"))
    run_pending_commands()
    lines = run_oozie("job", "-info", workflow).lines
    assert lines[0] == f"Job ID : {workflow}"
    ours = [line for line in lines[1:] if not line.startswith(NEWER_LABELS)]
    actions = [line for line in lines if line.startswith((":start:", "shell-node"))]
    assert len(actions) == 2  # Oozie lists the start node as an action too; the example shows one action
    expected = shape(example(INFO), HEADERS)
    assert expected[-2:] == ["row", "ruler"]
    assert shape(ours, HEADERS) == expected + ["row", "ruler"]
    assert [label(line) for line in lines[2:13]] == [
        "Workflow Name", "App Path", "Status", "Run", "User", "Group", "Created", "Started", "Last Modified", "Ended",
        "CoordAction ID",
    ]
    assert lines[12].startswith("CoordAction ID: ")


def test_workflow_jobs_listing(run_oozie: RunOozie, ann: User, tmp_path: Path) -> None:
    """`jobs`: the example's header (Job Id, Workflow Name, Status, Run ...), a ruler, two rows, a ruler."""
    hdfs = layout(tmp_path)
    ids = [job_id(run_oozie("job", "-config", properties(tmp_path, hdfs, "no-op"), "-run")) for _ in range(2)]
    lines = run_oozie("jobs", "-len", "2", "-filter", "status=RUNNING;status=SUCCEEDED;status=PREP").lines
    assert shape(lines, HEADERS) == shape(example("Checking the Status of multiple Workflow Jobs"), HEADERS)
    assert sorted(line.split()[0] for line in lines[2:4]) == sorted(ids)
    assert lines[2].split()[1:2] == ["no-op-wf"]


def _coordinators(run_oozie: RunOozie, tmp_path: Path, count: int) -> list[str]:
    hdfs = layout(tmp_path)
    config = properties(tmp_path, hdfs, "cron", *CRON_EXTRA)
    ids = [job_id(run_oozie("job", "-config", config, "-run")) for _ in range(count)]
    run_pending_commands()  # materialization: PREP becomes RUNNING
    return ids


def test_coordinator_jobs_listing(run_oozie: RunOozie, ann: User, tmp_path: Path) -> None:
    """`jobs -jobtype coordinator`: header (Job ID, App Name, Status, Freq Unit, Started, Next Materialized), each row ruled."""
    ids = _coordinators(run_oozie, tmp_path, 2)
    lines = run_oozie("jobs", "-jobtype", "coordinator").lines
    assert shape(lines, HEADERS) == shape(example("Checking the Status of multiple Coordinator Jobs"), HEADERS)
    assert {lines[2].split()[0], lines[4].split()[0]} == set(ids)
    assert lines[2].split()[1:5] == ["cron-coord", "RUNNING", "10", "MINUTE"]


def test_bundle_jobs_listing(run_oozie: RunOozie, ann: User, tmp_path: Path) -> None:
    """`jobs -jobtype bundle`: header (Job ID, Bundle Name, Status, Kickoff, Created, User, Group), each row ruled."""
    hdfs = layout(tmp_path)
    config = properties(tmp_path, hdfs, "bundle", *CRON_EXTRA)
    ids = [job_id(run_oozie("job", "-config", config, "-run")) for _ in range(3)]
    lines = run_oozie("jobs", "-jobtype", "bundle").lines
    assert shape(lines, HEADERS) == shape(example("Checking the Status of multiple Bundle Jobs"), HEADERS)
    assert {line.split()[0] for line in lines[2::2]} == set(ids)
    assert lines[2].split()[1] == "bundle-app" and lines[2].split()[-1] == "-"  # no group: masked

    info = run_oozie("job", "-info", ids[0]).lines
    assert info[:2] == [f"Job ID : {ids[0]}", "-" * 132]
    assert [label(line) for line in info[2:6]] == ["Job Name", "App Path", "Status", "Kickoff time"]


def test_bulk_kill_answers_the_jobs_it_killed(run_oozie: RunOozie, ann: User, tmp_path: Path, settings: Any) -> None:
    """`jobs -kill -filter name=cron-coord -jobtype coordinator`: the example's first line, then the listing."""
    settings.OOZIE_BULK_WAIT_SECONDS = 0  # no worker here: the answer lists the jobs selected, the commands run below
    ids = _coordinators(run_oozie, tmp_path, 3)
    ran = run_oozie("jobs", "-kill", "-filter", "name=cron-coord", "-jobtype", "coordinator")
    assert ran.code == 0, ran.err
    expected = example("Bulk kill, suspend or resume multiple jobs")
    assert ran.lines[0] == expected[0].replace("killed|suspended|resumed", "killed")
    assert shape(ran.lines, HEADERS) == shape(expected, HEADERS)
    run_pending_commands()
    after = run_oozie("jobs", "-jobtype", "coordinator", "-filter", "status=KILLED").lines
    assert {line.split()[0] for line in after[2::2]} == set(ids)
    none = run_oozie("jobs", "-resume", "-filter", "name=no-such-app", "-jobtype", "coordinator")
    assert none.lines == ["bulk modify command did not modify any jobs"]


def test_admin_lines(run_oozie: RunOozie, ann: User) -> None:
    """-status is the example's `Safemode: OFF`; -version `Oozie server build version: <v>`."""
    assert run_oozie("admin", "-status").lines == example("Checking the Status of the Oozie System")
    [expected] = example("Displaying the Build Version of the Oozie System")
    [ours] = run_oozie("admin", "-version").lines
    assert ours.split(": ")[0] == expected.split(": ")[0] == "Oozie server build version"


def test_an_error_is_the_examples_one_line(run_oozie: RunOozie, ann: User) -> None:
    """`Error: E0303 : E0303: Invalid parameter value, ...`: Error, the code, ` : `, the server's message starting with the code."""
    [expected] = example("Starting a Workflow, Coordinator or Bundle Job", 1)
    ran = run_oozie("job", "-start", "0000000-000000000000000-oozie-ann-C")
    assert ran.code == 255 and ran.out == ""
    pattern = re.compile(r"Error: (E\d{4}) : \1: .+")
    assert pattern.fullmatch(expected) and pattern.fullmatch(ran.err.rstrip("\n")), (expected, ran.err)
