"""The shell action (DG_ShellActionExtension): a command run by the worker, only where an operator allows it.

Off unless WORKFLOW_SHELL_ENABLED is true: a shell action runs any program with the
worker's rights, so turning it on trusts every user who may submit workflows (ADR 0022).
The command is executed directly (exec and args, no shell parsing) in a fresh temporary
directory that is also its HOME, with a small environment (PATH, locale, time zone) plus
its env-vars (`$NAME` in a value is expanded, so PATH=$PATH:/opt/bin works as in Oozie) and
OOZIE_ACTION_CONF_XML naming the action's configuration. URIs under a STORAGE_URI_MAP prefix in
its args and env-vars are passed mapped (`hdfs://nn/in` -> `file:///srv/hdfs/in`). It runs in its own process group:
the whole group is killed after WORKFLOW_SHELL_TIMEOUT_SECONDS, and whatever it left running
when it ends. With capture-output, stdout is Java properties (at most WORKFLOW_MAX_OUTPUT_DATA
bytes) and becomes the node's action data.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings

from kernel import capture as try_capture
from kernel import storage
from oozie.definitions import DefinitionError, parse_properties, serialize_hadoop_configuration
from workflows.actions.base import OK, ActionContext, ActionResult, error, exception_text, failed
from workflows.actions.data import over_limit
from workflows.actions.options import max_output_data, shell_enabled, shell_timeout_seconds
from workflows.settings import lease_seconds
from xcommands import heartbeat

KEPT_ENVIRONMENT = ("PATH", "LANG", "LANGUAGE", "TZ")  # and LC_*; nothing else of the worker's (no secrets)
TAIL_CHARS = 2000
_VARIABLE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def base_environment(workdir: str) -> dict[str, str]:
    """The worker's PATH, locale and time zone; HOME is the action's own directory."""
    env = {key: value for key, value in os.environ.items() if key in KEPT_ENVIRONMENT or key.startswith("LC_")}
    env.setdefault("PATH", os.defpath)
    env.update(HOME=workdir, PWD=workdir)
    return env


def _environment(pairs: list[str], workdir: str) -> dict[str, str] | str:
    """The command's environment, or the message naming a malformed env-var (JA010)."""
    env = base_environment(workdir)
    for pair in pairs:
        name, separator, value = pair.partition("=")
        if not separator or not name.strip():
            return f"Wrong ENV format [{pair}] in <env-var> , key=value format expected"
        env[name.strip()] = _VARIABLE.sub(lambda match: env.get(match.group(1), ""), storage.map_uris_in(value))
    return env


def _write_configuration(configuration: Mapping[str, str], workdir: str) -> str:
    """The action's configuration as Hadoop XML in its directory; '' when a property cannot be written as XML."""
    try:
        data = serialize_hadoop_configuration({str(k): str(v) for k, v in configuration.items()})
    except DefinitionError:
        return ""
    path = os.path.join(workdir, "action.xml")
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def tail(path: str) -> str:
    """The last TAIL_CHARS of a file, as text."""
    with open(path, "rb") as handle:
        handle.seek(max(0, os.path.getsize(path) - TAIL_CHARS))
        return handle.read().decode("utf-8", errors="replace").strip()


def keep_output(stdout_path: str, stderr_path: str) -> None:
    """The command's stdout and stderr into the try's log (kernel.tries: the tail, bounded, secrets masked)."""
    limit = int(settings.TRY_LOG_MAX_CHARS)
    for title, path in (("stdout", stdout_path), ("stderr", stderr_path)):
        size = os.path.getsize(path)
        with open(path, "rb") as handle:
            handle.seek(max(0, size - limit))
            text = handle.read().decode("utf-8", errors="replace")
        if size > limit:
            text = f"[... {size - limit} earlier bytes dropped ...]\n{text}"
        try_capture.attach(title, text)


#: The guard every command runs under: it kills the command's process group when this process dies.
GUARD = str(Path(__file__).with_name("shell_guard.py"))
#: How often a running command's lease is looked at (the heartbeat thread confirms it).
LEASE_CHECK_SECONDS = 0.5


def _runnable(program: str, env: Mapping[str, str]) -> bool:
    """Whether the program names an executable file (a bare name: on the action's PATH), as exec would find it."""
    if os.sep in program:
        return os.path.isfile(program) and os.access(program, os.X_OK)
    return shutil.which(program, path=env.get("PATH", os.defpath)) is not None


class LeaseLost(Exception):
    """The lease this process runs the command under is lost (xcommands.heartbeat.lost)."""


def wait_for(process: subprocess.Popen[bytes], timeout: float | None) -> int:
    """The command's exit code; TimeoutExpired past `timeout`, LeaseLost as soon as the run's lease is lost."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        step = LEASE_CHECK_SECONDS if deadline is None else min(LEASE_CHECK_SECONDS, max(0.0, deadline - time.monotonic()))
        try:
            return process.wait(timeout=step)
        except subprocess.TimeoutExpired:
            if deadline is not None and time.monotonic() >= deadline:
                raise
        if heartbeat.lost():
            raise LeaseLost


def kill_group(pid: int) -> None:
    """SIGKILL a process group (the guard's: the command and all it started); gone already is fine."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already


def execute(spec: Mapping[str, Any], context: ActionContext) -> ActionResult:
    """Run the command: OK (with captured data), ERROR on a non-zero exit ("1"), a timeout or bad output."""
    if not shell_enabled():
        return failed(
            "SHELL_DISABLED",
            f"shell action [{context.node_name}] not run: shell actions are disabled on this service "
            "(an operator may allow them with WORKFLOW_SHELL_ENABLED=true)",
        )
    # A migrated application's URIs (`hdfs://nn/...` in an argument or env-var) name where they map to (STORAGE_URI_MAP).
    command = [str(spec.get("exec", "")).strip(), *(storage.map_uris_in(str(arg)) for arg in spec.get("args", ()))]
    if not command[0]:
        return failed("JA010", f"shell action [{context.node_name}] has no <exec>")
    workdir = tempfile.mkdtemp(prefix="wf-shell-")
    try:
        env = _environment([str(pair) for pair in spec.get("env", ())], workdir)
        if isinstance(env, str):
            return failed("JA010", env)
        conf_path = _write_configuration(context.configuration, workdir)
        if conf_path:
            env["OOZIE_ACTION_CONF_XML"] = conf_path
        return _run(command, env, workdir, bool(spec.get("capture_output", False)))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _run(command: list[str], env: dict[str, str], workdir: str, capture: bool) -> ActionResult:
    stdout_path, stderr_path = os.path.join(workdir, ".stdout"), os.path.join(workdir, ".stderr")
    timeout = shell_timeout_seconds()
    if not _runnable(command[0], env):
        return error("FileNotFoundError", f"shell command [{command[0]}] cannot be run: no such executable program")
    with open(stdout_path, "wb") as stdout, open(stderr_path, "wb") as stderr:
        try:
            # Through the guard (shell_guard.py), the command's process group dies with this process.
            process = subprocess.Popen(  # noqa: S603 - runs what the workflow names: the point of the action, gated by a setting
                [sys.executable, "-I", GUARD, "--stopped-limit", f"{lease_seconds():g}", "--", *command],
                cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                stdout=stdout, stderr=stderr, start_new_session=True, close_fds=True,
            )
        except OSError as exc:
            return error(type(exc).__name__, f"shell command [{command[0]}] cannot be run: {exception_text(exc)}")
        external_id = str(process.pid)
        try:
            returncode = wait_for(process, timeout)
        except subprocess.TimeoutExpired:
            kill_group(process.pid)
            process.wait()
            return error(
                "TIMEOUT", f"shell command [{command[0]}] killed after {timeout:g} seconds (WORKFLOW_SHELL_TIMEOUT_SECONDS)",
                external_status="KILLED", external_id=external_id,
            )
        except LeaseLost:
            kill_group(process.pid)
            process.wait()
            return error(
                "LEASE_LOST", f"shell command [{command[0]}] killed: this worker lost the node's lease (the node "
                "was killed, or the database was out of reach for a whole lease and the node may run elsewhere)",
                external_status="KILLED", external_id=external_id,
            )
        finally:
            kill_group(process.pid)  # what it left running in the background goes with it
            keep_output(stdout_path, stderr_path)
    if returncode != 0:
        how = f"exit code [{returncode}]" if returncode > 0 else f"killed by signal [{-returncode}]"
        stderr_tail = tail(stderr_path)
        return error(
            "1", f"shell command [{command[0]}] {how}" + (f": {stderr_tail}" if stderr_tail else ""),
            external_status="FAILED", external_id=external_id,
        )
    return succeeded(stdout_path, capture, external_id)


def succeeded(stdout_path: str, capture: bool, external_id: str) -> ActionResult:
    """OK, with stdout as the action data (Java properties, WORKFLOW_MAX_OUTPUT_DATA) when captured; else ERROR."""
    data: dict[str, str] = {}
    if capture:
        size, limit = os.path.getsize(stdout_path), max_output_data()
        if message := over_limit(size, limit):
            return error("OUTPUT_LIMIT", message, external_status="FAILED", external_id=external_id)
        with open(stdout_path, "rb") as handle:
            text = handle.read().decode("utf-8", errors="replace")
        try:
            data = parse_properties(text, source="stdout")
        except DefinitionError as exc:
            return error("OUTPUT_FORMAT", f"captured output is not Java properties: {exc}",
                         external_status="FAILED", external_id=external_id)
    return ActionResult(OK, data=data, external_id=external_id, external_status="SUCCEEDED")
