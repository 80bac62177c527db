"""The ssh action (ssh-action 0.1 and 0.2) against a real sshd on loopback (tests/support/sshd.py).

Workflows are submitted and driven in this process as a worker runs them; the remote host is
this machine, so the remote command's files and processes can be looked at directly.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from kernel.models import TaskTry
from oozie.definitions import DefinitionError
from tests.support.engine import run_pending_commands
from tests.support.sshd import Server
from tests.support.workflow_apps import app, drive, submit
from tests.workflows.actions.test_shell import _assert_dead
from workflows.actions import ActionContext, execute
from workflows.actions.ssh import arguments, destination, remote_command
from workflows.choices import NodeStatus as N
from workflows.choices import WorkflowStatus as W
from workflows.models import WorkflowJob, WorkflowNode
from workflows.runner import run_node
from workflows.services import request_control
from xcommands import heartbeat

SSH01 = 'xmlns="uri:oozie:ssh-action:0.1"'
SSH02 = 'xmlns="uri:oozie:ssh-action:0.2"'


def ssh(name: str, body: str, version: str = SSH02, ok: str = "end") -> str:
    return f'<action name="{name}"><ssh {version}>{body}</ssh><ok to="{ok}"/><error to="fail"/></action>'


def test_args_are_split_on_blanks_and_arg_is_kept_whole() -> None:
    """Oozie: each <args> is split on blanks (even quoted), each <arg> (0.2) is one argument."""
    assert arguments({"args": ["a b", " c "], "arg": []}) == ["a", "b", "c"]
    assert arguments({"args": [], "arg": ["Hello World", ""]}) == ["Hello World", ""]
    assert "'Hello World'" in remote_command("echo", ["Hello World"])


@pytest.mark.parametrize(("host", "owner", "allowed", "expected"), [
    ("ann@edge", "bob", True, ("ann@edge", "")),
    ("edge", "bob", True, ("bob@edge", "")),
    ("ann@edge", "bob", False, ("", "host [ann@edge] names user [ann], not the workflow's owner [bob] "
                                    "(WORKFLOW_SSH_ALLOW_USER_AT_HOST is false)")),
    ("-oProxyCommand=x", "bob", True, ("", "host [-oProxyCommand=x] is not [user@]host")),
], ids=["user-at-host", "owner-by-default", "other-user-refused", "option-injection"])
def test_destination(settings: Any, host: str, owner: str, allowed: bool, expected: tuple[str, str]) -> None:
    """The login: the host's user, else the owner; another user only while allowed; never an option."""
    settings.WORKFLOW_SSH_ALLOW_USER_AT_HOST = allowed
    assert destination(host, owner) == expected


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_engine")
class TestSubmission:
    @pytest.mark.parametrize(("body", "version", "named"), [
        ("<host>h</host>", SSH02, "command"),
        ("<host>h</host><command>ls</command><args>a</args><arg>b</arg>", SSH02, "arg"),
        ("<host>h</host><command>ls</command><arg>b</arg>", SSH01, "arg"),
        ("<host>-oProxyCommand=evil</host><command>ls</command>", SSH02, "ssh host '-oProxyCommand=evil' is not [user@]host"),
        ("<host>h</host><command>ls</command><password>x</password>", SSH02, "password"),
    ], ids=["no-command", "args-and-arg", "arg-in-0.1", "option-as-host", "no-password-element"])
    def test_refused_at_submission(self, tmp_path: Path, body: str, version: str, named: str) -> None:
        """The XSD (per version) and the host's form are checked at submission: one line, nothing stored."""
        with pytest.raises(DefinitionError) as raised:
            submit(app(tmp_path, ssh("remote", body, version)))
        assert named in str(raised.value) and "\n" not in str(raised.value)
        assert not WorkflowJob.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_engine")
class TestAgainstSshd:
    def test_capture_output_feeds_a_decision_and_the_output_is_in_the_try(self, tmp_path: Path, sshd: Server) -> None:
        """0.2: the remote stdout (Java properties) is wf:actionData; stdout and stderr are kept in the try's log."""
        body = (f"<host>{sshd.host}</host><command>echo</command><arg>rows=42</arg><capture-output/>")
        directory = app(tmp_path, ssh("remote", body, ok="d") + (
            '<decision name="d"><switch><case to="end">${wf:actionData("remote")["rows"] gt 40}</case>'
            '<default to="fail"/></switch></decision>'))
        workflow = submit(directory)
        drive()
        workflow.refresh_from_db()
        assert workflow.status == W.SUCCEEDED, workflow.error_message
        node = WorkflowNode.objects.get(workflow=workflow, name="remote")
        assert (node.type, node.data) == ("ssh", {"rows": "42"})
        assert node.external_id.startswith(f"{sshd.host}:")
        (kept,) = TaskTry.objects.filter(object_id=node.id)
        assert "rows=42" in kept.log

    def test_version_0_1_args_and_stderr_and_exit_code(self, tmp_path: Path, sshd: Server) -> None:
        """0.1: <args> split on blanks; a non-zero exit is ERROR "1" naming the code and stderr's tail, both streams kept."""
        script = tmp_path / "remote.sh"
        script.write_text('echo "out:$1:$2"; echo "trouble $2" >&2; exit 3\n')
        body = f"<host>{sshd.host}</host><command>sh {script}</command><args>first second</args>"
        workflow = submit(app(tmp_path, ssh("remote", body, SSH01)))
        drive()
        workflow.refresh_from_db()
        node = WorkflowNode.objects.get(workflow=workflow, name="remote")
        assert (node.status, node.error_code, workflow.status) == (N.ERROR, "1", W.KILLED)
        assert node.error_message == f"ssh command on [{sshd.host}] exit code [3]: trouble second"
        (kept,) = TaskTry.objects.filter(object_id=node.id)
        assert "out:first:second" in kept.log and "trouble second" in kept.log

    def test_an_unknown_host_key_is_refused(self, tmp_path: Path, sshd: Server, settings: Any) -> None:
        """StrictHostKeyChecking=yes with a known_hosts that lacks the server: ERROR SSH_ERROR, nothing run."""
        settings.WORKFLOW_SSH_OPTIONS = [f"Port={sshd.port}", f"UserKnownHostsFile={tmp_path / 'empty'}"]
        marker = tmp_path / "ran"
        workflow = submit(app(tmp_path, ssh("remote", f"<host>{sshd.host}</host><command>touch {marker}</command>")))
        drive()
        node = WorkflowNode.objects.get(workflow=workflow, name="remote")
        assert (node.status, node.error_code) == (N.ERROR, "SSH_ERROR")
        assert "Host key verification failed" in node.error_message
        assert not marker.exists()

    def test_without_the_operators_key_it_fails_naming_the_setting(self, tmp_path: Path, settings: Any) -> None:
        """No WORKFLOW_SSH_KEY_FILE: FAILED SSH_CONFIG naming the setting (never a password prompt)."""
        settings.WORKFLOW_SSH_KEY_FILE = ""
        workflow = submit(app(tmp_path, ssh("remote", "<host>h</host><command>true</command>")))
        drive()
        node = WorkflowNode.objects.get(workflow=workflow, name="remote")
        assert (node.status, node.error_code) == (N.FAILED, "SSH_CONFIG")
        assert "WORKFLOW_SSH_KEY_FILE" in node.error_message


    def test_killing_the_workflow_kills_the_remote_command(self, tmp_path: Path, sshd: Server, settings: Any) -> None:
        """A workflow killed while its ssh node runs: the worker's lease is refused, the remote command dies, the node is KILLED."""
        settings.WORKFLOW_LEASE_SECONDS = 3
        pidfile = tmp_path / "pid"
        body = (f"<host>{sshd.host}</host><command>sh</command><arg>-c</arg>"
                f"<arg>echo $$ > {pidfile}; exec sleep 60</arg>")
        workflow = submit(app(tmp_path, ssh("remote", body)))
        run_pending_commands()
        node = WorkflowNode.objects.get(workflow=workflow, name="remote", status=N.PREP)
        outcome: list[str] = []
        worker = threading.Thread(target=lambda: outcome.append(run_node(node.pk, node.attempt, "test")))
        began = time.monotonic()
        worker.start()
        while not pidfile.exists() and time.monotonic() - began < 20:
            time.sleep(0.05)
        assert pidfile.exists(), "the remote command never started"
        assert request_control(workflow.id, "kill", check=lambda _: None)
        run_pending_commands()
        worker.join(30)
        assert not worker.is_alive() and outcome == ["fenced"]
        _assert_dead(int(pidfile.read_text()))
        workflow.refresh_from_db()
        node.refresh_from_db()
        assert (workflow.status, node.status) == (W.KILLED, N.KILLED)
        (kept,) = TaskTry.objects.filter(object_id=node.id)
        assert (kept.status, kept.error_code) == ("DISCARDED", "LEASE_LOST")


@pytest.fixture
def refusable() -> Iterator[list[bool]]:
    """A lease kind whose renewals are refused once the list is not empty (the node moved on)."""
    refused: list[bool] = []

    def renew(held: dict[Any, int], expires: datetime) -> list[Any]:
        return [] if refused else list(held)

    heartbeat.register_kind("test-ssh-refusable", renew, lambda: 3.0)
    yield refused
    heartbeat._KINDS.pop("test-ssh-refusable", None)


@pytest.mark.django_db(transaction=True)  # the heartbeat thread's renewals touch the connection
def test_the_remote_command_is_killed_when_the_lease_is_lost(tmp_path: Path, sshd: Server,
                                                             refusable: list[bool]) -> None:
    """Lease lost: the ssh client's group is killed, the connection closes, and the remote command dies with it."""
    pidfile = tmp_path / "pid"
    spec = {"host": sshd.host, "command": "sh", "args": [], "capture_output": False,
            "arg": ["-c", f"echo $$ > {pidfile}; exec sleep 60"]}
    context = ActionContext(workflow_id="0000001-260101000000000-oozie-W", node_name="remote", configuration={},
                            user=sshd.user)
    with heartbeat.lease("test-ssh-refusable", "row", 1):
        began = time.monotonic()
        deadline = began + 20

        def lose_when_started() -> None:
            while not pidfile.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            refusable.append(True)

        # The remote command starts first; then the next renewal finds the row taken.
        threading.Thread(target=lose_when_started, daemon=True).start()
        result = execute("ssh", spec, context)
    assert (result.status, result.error_code) == ("ERROR", "LEASE_LOST"), result
    assert time.monotonic() - began < 25
    assert pidfile.exists(), "the remote command never started"
    _assert_dead(int(pidfile.read_text()))
