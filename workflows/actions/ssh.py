"""The ssh action (DG_SshActionExtension, ssh-action 0.1 and 0.2): a command run on another host through OpenSSH.

A site action type (workflows.actions.site) registered by default. The worker runs the
system's `ssh` client in batch mode (no password prompt: passwords never appear in the XML)
with the operator's key (WORKFLOW_SSH_KEY_FILE), host keys checked as
WORKFLOW_SSH_STRICT_HOST_KEY_CHECKING says, and WORKFLOW_SSH_OPTIONS. `<host>` is `[user@]host`
(no user: the workflow's owner; another user only while WORKFLOW_SSH_ALLOW_USER_AT_HOST).
The remote command runs in the user's home directory: `<command>` as a shell command, then
its arguments quoted (`<args>` split on blanks as Oozie splits them, `<arg>` (0.2) kept whole).

The client runs under the shell action's guard (shell_guard.py): its process group dies with
the worker process, when the node's lease is lost, and after WORKFLOW_SSH_TIMEOUT_SECONDS.
On the remote host the command runs under a small POSIX sh wrapper that watches the
connection's standard input: once the connection is gone (the client killed, the worker
dead), it kills the command's session process group, so no copy keeps running while the node
runs again elsewhere. The remote stdout and stderr are kept in the node's try log;
with `<capture-output/>` stdout is Java properties (WORKFLOW_MAX_OUTPUT_DATA) and becomes the
node's action data. A non-zero exit is an ERROR (code "1"); ssh's own failure (exit 255:
unreachable, refused key, unknown host key) is an ERROR SSH_ERROR naming ssh's message.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from typing import Any

from lxml import etree

from workflows.actions import shell
from workflows.actions.base import ActionContext, ActionResult, error, exception_text, failed
from workflows.actions.options import (
    ssh_allow_user_at_host,
    ssh_key_file,
    ssh_options,
    ssh_strict_host_key_checking,
    ssh_timeout_seconds,
)
from workflows.actions.site import SiteAction, child_text, child_texts, has_child, refuse
from workflows.settings import lease_seconds

#: ssh's exit status for its own errors (connection, authentication, host key).
SSH_FAILURE = 255
STRICT_VALUES = frozenset({"yes", "accept-new", "no"})
_HOST = re.compile(r"^(?:(?P<user>[A-Za-z0-9._][A-Za-z0-9._-]*)@)?(?P<host>[A-Za-z0-9_][A-Za-z0-9._-]*|\[[0-9A-Fa-f:.]+\])$")
_OPTION = re.compile(r"^[A-Za-z]+=\S.*$")
#: Run on the remote host by its POSIX sh: the command with stdin from /dev/null, and a watcher
#: reading the connection's stdin (fd 3): at its end (the connection is gone), the whole
#: session's process group is killed. The command's own exit status is the session's.
REMOTE_WRAPPER = (
    "exec 3<&0; ( {command} ) </dev/null 3<&- & c=$!; "
    "{{ cat <&3 >/dev/null 2>&1; kill -KILL 0; }} >/dev/null 2>&1 & w=$!; "
    "exec 3<&-; wait $c; s=$?; kill $w 2>/dev/null; exit $s"
)


def remote_command(command: str, arguments: list[str]) -> str:
    """The text the remote login shell runs: `sh -c '<wrapper around command + quoted arguments>'`."""
    line = " ".join([command, *(shlex.quote(argument) for argument in arguments)])
    return "sh -c " + shlex.quote(REMOTE_WRAPPER.format(command=line))


def arguments(spec: Mapping[str, Any]) -> list[str]:
    """The remote command's arguments: each `<args>` split on blanks (Oozie), each `<arg>` whole."""
    split = [word for value in spec.get("args", ()) for word in str(value).split()]
    return split + [str(value) for value in spec.get("arg", ())]


def destination(host: str, owner: str) -> tuple[str, str]:
    """(`user@host` to log in to, '') or ('', why it is refused)."""
    match = _HOST.match(host.strip())
    if match is None:
        return "", f"host [{host}] is not [user@]host"
    user = match.group("user") or owner
    if not user:
        return "", f"host [{host}] names no user and the workflow has no owner"
    if user != owner and not ssh_allow_user_at_host():
        return "", (f"host [{host}] names user [{user}], not the workflow's owner [{owner}] "
                    "(WORKFLOW_SSH_ALLOW_USER_AT_HOST is false)")
    return f"{user}@{match.group('host')}", ""


def client_command(login: str, remote: str) -> list[str] | str:
    """The ssh client's argument list, or why the operator's settings refuse it."""
    key = ssh_key_file()
    if not key:
        return "ssh actions need the operator's key: set WORKFLOW_SSH_KEY_FILE (no password is ever read from the XML)"
    if not os.path.isfile(key):
        return f"WORKFLOW_SSH_KEY_FILE [{key}] is not a file"
    strict = ssh_strict_host_key_checking()
    if strict not in STRICT_VALUES:
        return f"WORKFLOW_SSH_STRICT_HOST_KEY_CHECKING [{strict}] is not one of {', '.join(sorted(STRICT_VALUES))}"
    command = ["ssh", "-T", "-o", "BatchMode=yes", "-o", f"StrictHostKeyChecking={strict}", "-o", "IdentitiesOnly=yes",
               "-o", "PasswordAuthentication=no", "-o", "KbdInteractiveAuthentication=no", "-i", key]
    for option in ssh_options():
        if not _OPTION.match(option):
            return f"WORKFLOW_SSH_OPTIONS entry [{option}] is not Name=value"
        command += ["-o", option]
    return [*command, "--", login, remote]


class SshAction(SiteAction):
    """ssh-action 0.1 and 0.2: host, command, args (0.2: or arg), capture-output."""

    action_type = "ssh"
    schemas = {
        "uri:oozie:ssh-action:0.1": "xsd/ssh-action-0.1.xsd",
        "uri:oozie:ssh-action:0.2": "xsd/ssh-action-0.2.xsd",
    }
    configurable = False

    def __init__(self) -> None:
        self._running: dict[tuple[str, str], int] = {}  # (workflow, node) -> the guard's pid (its group)
        self._lock = threading.Lock()

    def parse(self, element: etree._Element, *, node: str, source: str) -> dict[str, Any]:
        """The spec: {"host", "command", "args": [str], "arg": [str], "capture_output": bool}; a literal bad host refused."""
        host = child_text(element, "host")
        if "${" not in host and _HOST.match(host) is None:
            raise refuse(element, node, source, f"ssh host {host!r} is not [user@]host")
        command = child_text(element, "command")
        if not command:
            raise refuse(element, node, source, "ssh <command> is empty")
        return {
            "host": host, "command": command, "args": child_texts(element, "args"), "arg": child_texts(element, "arg"),
            "capture_output": has_child(element, "capture-output"),
        }

    def execute(self, spec: Mapping[str, Any], context: ActionContext) -> ActionResult:
        """Run the remote command to its end: OK (with captured data) or ERROR."""
        login, why = destination(str(spec.get("host", "")), context.user)
        if why:
            return error("SSH_HOST", f"ssh action [{context.node_name}]: {why}")
        remote = remote_command(str(spec.get("command", "")).strip(), arguments(spec))
        command = client_command(login, remote)
        if isinstance(command, str):
            return failed("SSH_CONFIG", f"ssh action [{context.node_name}] not run: {command}")
        if shutil.which("ssh") is None:
            return failed("SSH_CONFIG", f"ssh action [{context.node_name}] not run: no OpenSSH client (ssh) on this worker")
        workdir = tempfile.mkdtemp(prefix="wf-ssh-")
        try:
            return self._run(command, login, workdir, bool(spec.get("capture_output")), context)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def kill(self, spec: Mapping[str, Any], context: ActionContext) -> None:
        """Kill the client's process group: the connection closes, and the remote wrapper kills the command."""
        with self._lock:
            pid = self._running.get((context.workflow_id, context.node_name))
        if pid is not None:
            shell.kill_group(pid)

    def _run(self, command: list[str], login: str, workdir: str, capture: bool, context: ActionContext) -> ActionResult:
        stdout_path, stderr_path = os.path.join(workdir, ".stdout"), os.path.join(workdir, ".stderr")
        timeout = ssh_timeout_seconds()
        key = (context.workflow_id, context.node_name)
        with open(stdout_path, "wb") as stdout, open(stderr_path, "wb") as stderr:
            try:
                process = subprocess.Popen(  # noqa: S603 - the OpenSSH client, its options from the operator's settings
                    [sys.executable, "-I", shell.GUARD, "--stopped-limit", f"{lease_seconds():g}", "--keep-stdin", "--",
                     *command],
                    cwd=workdir, env=shell.base_environment(workdir), stdin=subprocess.PIPE,
                    stdout=stdout, stderr=stderr, start_new_session=True, close_fds=True,
                )
            except OSError as exc:
                return error(type(exc).__name__, f"ssh client cannot be run: {exception_text(exc)}")
            external_id = f"{login}:{process.pid}"
            with self._lock:
                self._running[key] = process.pid
            try:
                returncode = shell.wait_for(process, timeout)
            except subprocess.TimeoutExpired:
                return error(
                    "TIMEOUT", f"ssh command on [{login}] killed after {timeout:g} seconds (WORKFLOW_SSH_TIMEOUT_SECONDS)",
                    external_status="KILLED", external_id=external_id,
                )
            except shell.LeaseLost:
                return error(
                    "LEASE_LOST", f"ssh command on [{login}] killed: this worker lost the node's lease (the node was "
                    "killed, or the database was out of reach for a whole lease and the node may run elsewhere)",
                    external_status="KILLED", external_id=external_id,
                )
            finally:
                with self._lock:
                    self._running.pop(key, None)
                shell.kill_group(process.pid)
                if process.stdin is not None:
                    process.stdin.close()  # the remote watcher's end of input
                process.wait()
                shell.keep_output(stdout_path, stderr_path)
        if returncode == SSH_FAILURE:
            return error("SSH_ERROR", f"ssh to [{login}] failed: {shell.tail(stderr_path) or 'exit code 255'}",
                         external_status="FAILED", external_id=external_id)
        if returncode != 0:
            how = f"exit code [{returncode}]" if returncode > 0 else f"killed by signal [{-returncode}]"
            stderr_tail = shell.tail(stderr_path)
            return error("1", f"ssh command on [{login}] {how}" + (f": {stderr_tail}" if stderr_tail else ""),
                         external_status="FAILED", external_id=external_id)
        return shell.succeeded(stdout_path, capture, external_id)
