"""The `oozie` command against the running service: Oozie's example layout submitted, read, killed and listed.

Each test runs the command's entry point (oozieclient.cli.main, what the installed `oozie`
script calls) over real HTTP against pytest-django's live server, as a user would from
another machine: no Django in the client, only OOZIE_URL and credentials.
"""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from coordinators.models import CoordinatorJob
from tests.coordinators.api.factories import token, user
from tests.oozieapi.test_oozie_job_properties import CRON_EXTRA, examples, job_properties
from tests.oozieclient.ran import RunOozie
from tests.support.engine import run_pending_commands
from workflows.models import WorkflowJob

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]

SHELL = """<workflow-app xmlns="uri:oozie:workflow:0.5" name="shell-wf">
    <start to="shell-node"/>
    <action name="shell-node">
        <shell xmlns="uri:oozie:shell-action:0.2">
            <job-tracker>${jobTracker}</job-tracker>
            <name-node>${nameNode}</name-node>
            <exec>echo</exec>
            <argument>my_output=Hello Oozie</argument>
            <capture-output/>
        </shell>
        <ok to="end"/>
        <error to="fail"/>
    </action>
    <kill name="fail"><message>Shell action failed [${wf:errorMessage(wf:lastErrorNode())}]</message></kill>
    <end name="end"/>
</workflow-app>
"""


def layout(tmp_path: Path, owner: str = "ann") -> Path:
    """Oozie's examples tree (no-op, cron, bundle) plus the shell example, under a local name node."""
    hdfs = examples(tmp_path, owner)
    shell = hdfs / "user" / owner / "examples" / "apps" / "shell"
    shell.mkdir(parents=True)
    (shell / "workflow.xml").write_text(SHELL)
    return hdfs


def properties(tmp_path: Path, hdfs: Path, app: str, *extra: str) -> str:
    """The example's job.properties (only nameNode changed) written to a file; its path."""
    text = job_properties(hdfs, "no-op" if app == "shell" else app, *extra)
    if app == "shell":
        text = text.replace("/apps/no-op", "/apps/shell")
    path = tmp_path / f"{app}-job.properties"
    path.write_text(text)
    return str(path)


def job_id(ran: Any) -> str:
    """The id of `job: <id>`."""
    assert ran.code == 0, ran.err
    match = re.fullmatch(r"job: (\S+)", ran.out.strip())
    assert match, ran.out
    return match.group(1)


def test_run_the_examples_as_shipped(run_oozie: RunOozie, tmp_path: Path) -> None:
    """`oozie job -config job.properties -run` for the no-op workflow and the cron coordinator: `job: <id>`, exit 0."""
    user("ann")
    hdfs = layout(tmp_path)
    workflow = job_id(run_oozie("job", "-config", properties(tmp_path, hdfs, "no-op"), "-run"))
    stored = WorkflowJob.objects.get(pk=workflow)
    assert stored.app_path == f"file://{hdfs}/user/ann/examples/apps/no-op"
    assert stored.configuration["user.name"] == "ann"
    assert stored.owner is not None and stored.owner.username == "ann"

    coordinator = job_id(run_oozie("job", "-config", properties(tmp_path, hdfs, "cron", *CRON_EXTRA), "-run"))
    job = CoordinatorJob.objects.get(pk=coordinator)
    assert coordinator.endswith("-C") and job.app_name == "cron-coord"
    assert job.configuration["workflowAppUri"] == f"file://{hdfs}/user/ann/examples/apps/cron"

    submitted = job_id(run_oozie("job", "-config", properties(tmp_path, hdfs, "no-op"), "-submit"))
    assert WorkflowJob.objects.get(pk=submitted).status == "PREP"
    assert run_oozie("job", "-start", submitted).code == 0
    run_pending_commands()
    assert WorkflowJob.objects.get(pk=submitted).status == "SUCCEEDED"


def test_info_log_and_kill_of_a_workflow(run_oozie: RunOozie, tmp_path: Path) -> None:
    """-info shows the run and its shell action, -log its story, -kill ends it KILLED (the block says so)."""
    user("ann")
    hdfs = layout(tmp_path)
    workflow = job_id(run_oozie("job", "-config", properties(tmp_path, hdfs, "shell"), "-run"))
    run_pending_commands()  # the shell node is handed to a worker (none runs here): the run stays RUNNING

    info = run_oozie("job", "-info", workflow)
    assert info.code == 0, info.err
    assert info.lines[0] == f"Job ID : {workflow}"
    assert "Workflow Name : shell-wf" in info.lines and "Status        : RUNNING" in info.lines
    assert "User          : ann" in info.lines
    node = next(line for line in info.lines if line.startswith("shell-node"))
    assert node.split()[1:3] == ["shell", "PREP"] or node.split()[1:3] == ["shell", "RUNNING"], node

    log = run_oozie("job", "-log", workflow)
    assert log.code == 0 and f"JOB[{workflow}]" in log.out and "USER[ann]" in log.out

    killed = run_oozie("job", "-kill", workflow)
    assert (killed.code, killed.out, killed.err) == (0, "", "")  # Oozie prints nothing on success
    run_pending_commands()
    assert WorkflowJob.objects.get(pk=workflow).status == "KILLED"
    assert "Status        : KILLED" in run_oozie("job", "-info", workflow).lines

    definition = run_oozie("job", "-definition", workflow)
    assert 'name="shell-wf"' in definition.out


def test_coordinator_info_and_definition(run_oozie: RunOozie, tmp_path: Path) -> None:
    """-info of a coordinator: Oozie's block (Job Name, Status, Concurrency ...) and its actions table."""
    user("ann")
    hdfs = layout(tmp_path)
    coordinator = job_id(run_oozie("job", "-config", properties(tmp_path, hdfs, "cron", *CRON_EXTRA), "-run"))
    run_pending_commands()
    info = run_oozie("job", "-info", coordinator, "-len", "3")
    assert info.code == 0, info.err
    assert info.lines[:2] == [f"Job ID : {coordinator}", "-" * 132]
    assert "Job Name    : cron-coord" in info.lines
    assert "Start Time  : 2026-01-01 00:00 GMT" in info.lines
    assert any(line.startswith("ID") and "Nominal Time" in line for line in info.lines)
    rows = [line for line in info.lines if line.startswith(f"{coordinator}@")]
    assert [row.split()[0] for row in rows] == [f"{coordinator}@{n}" for n in (1, 2, 3)]
    in_new_york = run_oozie("job", "-info", coordinator, "-len", "1", "-timezone", "America/New_York")
    assert "Start Time  : 2025-12-31 19:00 EST" in in_new_york.lines
    assert "<coordinator-app" in run_oozie("job", "-definition", coordinator).out


def test_token_authentication_and_user_name(run_oozie: RunOozie, tmp_path: Path) -> None:
    """With OOZIE_TOKEN, user.name is the login name (joe here): refused for ann's token, naming it; -D user.name=ann passes."""
    ann = user("ann")
    hdfs = layout(tmp_path)
    env = {"OOZIE_TOKEN": token(ann), "OOZIE_USER": "", "OOZIE_PASSWORD": ""}
    refused = run_oozie("job", "-config", properties(tmp_path, hdfs, "no-op"), "-run", env=env)
    assert refused.code == 255 and refused.out == ""
    assert refused.err.startswith("Error: E0500 : E0500: Not authorized, user.name 'joe' does not match"), refused.err
    assert "-D user.name=" in refused.err
    assert not WorkflowJob.objects.exists()
    accepted = run_oozie("job", "-config", properties(tmp_path, hdfs, "no-op"), "-run", "-D", "user.name=ann", env=env)
    assert WorkflowJob.objects.get(pk=job_id(accepted)).owner == ann
    wrong = run_oozie("admin", "-queuedump", env={**env, "OOZIE_TOKEN": "x" * 40})
    assert wrong.code == 255 and wrong.err.startswith("Error: E0500 : E0500: Not authorized"), wrong.err


def test_errors_are_one_line_and_exit_255(run_oozie: RunOozie, tmp_path: Path) -> None:
    """An unknown id, a bad option, no URL, an unreachable server: `Error: ...` (or `Invalid sub-command`) and 255."""
    user("ann")
    missing = run_oozie("job", "-info", "0000000-000000000000000-oozie-ann-W")
    assert (missing.code, missing.out) == (255, "")
    assert missing.err == "Error: E0604 : E0604: Job does not exist [0000000-000000000000000-oozie-ann-W]\n"
    coordinator = run_oozie("job", "-kill", "0000009-000000000000000-oozie-ann-C")
    assert coordinator.code == 255 and coordinator.err.startswith("Error: E0604 : ")
    both = run_oozie("job", "-info", "x-W", "-kill", "x-W")
    assert both.code == 255 and both.err.startswith("Invalid sub-command: -kill and -info cannot be used together")
    unknown = run_oozie("job", "-frobnicate")
    assert unknown.code == 255 and unknown.err.startswith("Invalid sub-command: ")
    no_url = run_oozie("admin", "-status", env={}, replace_env=True)
    assert no_url.code == 255 and "Oozie URL is not available" in no_url.err
    down = run_oozie("admin", "-status", "-oozie", "http://127.0.0.1:9/oozie")
    assert down.code == 255 and down.err.startswith("Error: IO_ERROR : ")
    no_config = run_oozie("job", "-run")
    assert no_config.code == 255 and "configuration is not specified" in no_config.err


def test_an_application_on_the_clients_disk_is_explained(run_oozie: RunOozie, tmp_path: Path, settings: Any) -> None:
    """The server cannot read a local path (outside its application roots here): its error, then what to do."""
    user("ann")
    hdfs = layout(tmp_path)
    settings.COORD_APPLICATION_ROOTS = ["file:///srv/oozie-apps"]
    ran = run_oozie("job", "-config", properties(tmp_path, hdfs, "no-op"), "-run")
    assert ran.code == 255 and ran.out == ""
    first, hint = ran.err.rstrip("\n").split("\n")
    assert first.startswith("Error: E0")
    assert f"is on this machine's disk ({hdfs}/user/ann/examples/apps/no-op)" in hint
    assert "reads application paths on its own storage" in hint
    assert "run the command again with -upload" in hint
    assert not WorkflowJob.objects.exists()


def test_admin_status_version_servers_and_timezones(run_oozie: RunOozie) -> None:
    """-status, -version (the server's build), -servers, -timezones; -queuedump is for job admins."""
    user("ann")
    user("root", staff=True)
    assert run_oozie("admin", "-status").lines == ["Safemode: OFF"]
    assert run_oozie("admin", "-version").lines == [f"Oozie server build version: {version('oozie-py')}"]
    servers = run_oozie("admin", "-servers").lines
    assert len(servers) == 1 and re.fullmatch(r"\S+ : http://\S+/oozie/?", servers[0]), servers
    zones = run_oozie("info", "-timezones").lines
    assert zones[3] == "Available Time Zones :" and "      EST (America/New_York)" in zones
    refused = run_oozie("admin", "-queuedump")
    assert refused.code == 255 and refused.err.startswith("Error: E0500 : "), refused.err
    dump = run_oozie("admin", "-queuedump", env={"OOZIE_USER": "root", "OOZIE_PASSWORD": "root-password-123"})
    assert dump.code == 0 and dump.lines[0] == "[Server Queue Dump]:" and "[Server Uniqueness Map Dump]:" in dump.lines


def test_validate_checks_locally_when_the_server_has_no_endpoint(run_oozie: RunOozie, tmp_path: Path) -> None:
    """This service has no /v2/validate: Oozie's fallback line, then a well-formedness check, said to be only that."""
    user("ann")
    good = tmp_path / "workflow.xml"
    good.write_text(SHELL)
    ran = run_oozie("validate", str(good))
    assert ran.code == 0, ran.err
    assert ran.lines[0] == "Using client-side validation. Check out Oozie server version."
    assert ran.lines[1].startswith("Well-formed workflow-app (checked on this machine: XML syntax only")
    bad = tmp_path / "broken.xml"
    bad.write_text("<workflow-app><start to='end'></workflow-app>")
    refused = run_oozie("validate", str(bad))
    assert refused.code == 255 and refused.err.startswith("Error: E0700 : XML error, broken.xml: mismatched tag")


def test_verbs_on_a_coordinator_and_poll(run_oozie: RunOozie, tmp_path: Path) -> None:
    """-suspend, -resume, -change print nothing and take effect; -poll -verbose prints statuses until a terminal one."""
    user("ann")
    hdfs = layout(tmp_path)
    coordinator = job_id(run_oozie("job", "-config", properties(tmp_path, hdfs, "cron", *CRON_EXTRA), "-run"))
    run_pending_commands()
    for verb, status in (("-suspend", "SUSPENDED"), ("-resume", "RUNNING")):
        ran = run_oozie("job", verb, coordinator)
        assert (ran.code, ran.out, ran.err) == (0, "", "")
        run_pending_commands()
        assert CoordinatorJob.objects.get(pk=coordinator).status == status
    assert run_oozie("job", "-change", coordinator, "-value", "concurrency=3").code == 0
    run_pending_commands()
    assert CoordinatorJob.objects.get(pk=coordinator).concurrency == 3
    no_value = run_oozie("job", "-change", coordinator)
    assert no_value.code == 255 and "-value option needs to be specified" in no_value.err

    workflow = job_id(run_oozie("job", "-config", properties(tmp_path, hdfs, "no-op"), "-run"))
    run_pending_commands()
    polled = run_oozie("job", "-poll", workflow, "-interval", "0.001", "-timeout", "1", "-verbose")
    assert (polled.code, polled.lines) == (0, ["SUCCEEDED"])


def test_kill_of_coordinator_actions(run_oozie: RunOozie, tmp_path: Path) -> None:
    """-kill ID -action 1-2 / -date A: the actions to be killed, as Oozie's printCoordActions; the job runs on."""
    user("ann")
    hdfs = layout(tmp_path)
    coordinator = job_id(run_oozie("job", "-config", properties(tmp_path, hdfs, "cron", *CRON_EXTRA), "-run"))
    run_pending_commands()
    job = CoordinatorJob.objects.get(pk=coordinator)
    live = ("WAITING", "READY", "SUBMITTED", "RUNNING")
    assert job.last_action_number >= 3 and set(job.actions.values_list("status", flat=True)) <= set(live)
    nominal = {a.number: a.nominal_time.strftime("%Y-%m-%d %H:%M GMT") for a in job.actions.all()}

    killed = run_oozie("job", "-kill", coordinator, "-action", "1-2")
    assert (killed.code, killed.err) == (0, ""), killed.err
    assert killed.lines == ["Action ID\tNominal Time", "-" * 132,
                            f"{coordinator}@1\t{nominal[1]}", f"{coordinator}@2\t{nominal[2]}"]
    run_pending_commands()
    assert dict(job.actions.filter(number__lte=3).values_list("number", "status"))[3] in live
    assert set(job.actions.filter(number__lte=2).values_list("status", flat=True)) == {"KILLED"}
    assert CoordinatorJob.objects.get(pk=coordinator).status not in ("KILLED", "SUCCEEDED")  # the job goes on

    dated = run_oozie("job", "-kill", coordinator, "-date", nominal[3].replace(" GMT", "Z").replace(" ", "T"))
    assert (dated.code, dated.lines[2:]) == (0, [f"{coordinator}@3\t{nominal[3]}"]), dated.err
    run_pending_commands()
    assert job.actions.get(number=3).status == "KILLED"

    ended = run_oozie("job", "-kill", coordinator, "-action", "1")
    assert ended.code == 255 and ended.err.startswith("Error: E1020 : E1020: Could not kill coord job"), ended.err
    bad = run_oozie("job", "-kill", coordinator, "-action", "1-x")
    assert bad.code == 255 and "E0302" in bad.err and "expected a number" in bad.err
    both = run_oozie("job", "-kill", coordinator, "-action", "4", "-date", nominal[4])
    assert both.code == 255 and "either date or action expected" in both.err
    assert job.actions.get(number=4).status in live  # nothing was killed by the refusals
