"""The shell action: real /bin/sh scripts, captured output, timeouts that kill the process group, the off switch."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oozie.definitions import parse_hadoop_configuration
from project import settings as project_settings
from workflows.actions import ActionContext, ActionResult, execute

CONTEXT = ActionContext(
    workflow_id="0000001-260101000000000-oozie-W", node_name="script",
    configuration={"queueName": "default", "inputDir": "/data/in"}, user="ann",
)


@pytest.fixture
def enabled(settings: Any, tmp_path: Path) -> None:
    """Shell actions allowed, with a short timeout."""
    settings.WORKFLOW_SHELL_ENABLED = True
    settings.WORKFLOW_SHELL_TIMEOUT_SECONDS = 30
    settings.WORKFLOW_FS_ROOTS = [f"file://{tmp_path}"]


def sh(script: str, *args: str, env: list[str] | None = None, capture: bool = False, **extra: Any) -> ActionResult:
    spec = {"exec": "/bin/sh", "args": ["-c", script, "sh", *args], "env": env or [], "capture_output": capture, **extra}
    return execute("shell", spec, CONTEXT)


def test_disabled_by_default(settings: Any, tmp_path: Path) -> None:
    """Without WORKFLOW_SHELL_ENABLED nothing runs: FAILED, naming the setting."""
    settings.WORKFLOW_SHELL_ENABLED = False
    marker = tmp_path / "ran"
    result = sh(f"touch {marker}")
    assert (result.status, result.error_code) == ("FAILED", "SHELL_DISABLED")
    assert "WORKFLOW_SHELL_ENABLED" in result.error_message
    assert not marker.exists()


def test_the_project_default_is_off() -> None:
    """The shipped setting keeps shell actions off."""
    if os.environ.get("WORKFLOW_SHELL_ENABLED"):
        pytest.skip("the environment sets WORKFLOW_SHELL_ENABLED")
    assert project_settings.WORKFLOW_SHELL_ENABLED is False


@pytest.mark.usefixtures("enabled")
def test_captured_output_becomes_action_data() -> None:
    """With capture-output, stdout is read as Java properties: the node's action data."""
    result = sh('echo "rows=42"; echo "# a comment"; printf "path: /a b\\nmsg=$1\\n"', "hello world", capture=True)
    assert result.status == "OK", result
    assert result.data == {"rows": "42", "path": "/a b", "msg": "hello world"}
    assert result.external_status == "SUCCEEDED"
    assert int(result.external_id) > 0


@pytest.mark.usefixtures("enabled")
def test_output_not_captured_without_capture_output() -> None:
    """Without capture-output stdout is not data."""
    result = sh("echo rows=42")
    assert (result.status, dict(result.data)) == ("OK", {})


@pytest.mark.usefixtures("enabled")
def test_arguments_are_not_parsed_by_a_shell(tmp_path: Path) -> None:
    """exec and args go to the program as they are: no word splitting, globbing or substitution."""
    result = execute(
        "shell",
        {"exec": "/usr/bin/printf", "args": ["a=%s\\n", "$(touch x); *"], "env": [], "capture_output": True},
        CONTEXT,
    )
    assert result.data == {"a": "$(touch x); *"}


@pytest.mark.usefixtures("enabled")
def test_environment_is_clean_and_env_vars_are_added(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command sees PATH and its env-vars ($NAME expanded), not the worker's secrets; HOME is its own directory."""
    monkeypatch.setenv("DJANGO_SECRET_KEY", "do-not-leak")
    result = sh(
        'echo "secret=${DJANGO_SECRET_KEY:-none}"; echo "greeting=$GREETING"; echo "path=$PATH"; '
        'echo "home=$HOME"; echo "cwd=$(pwd)"; echo "conf=$OOZIE_ACTION_CONF_XML"',
        env=["GREETING=hi=there", "PATH=$PATH:/opt/extra"], capture=True,
    )
    assert result.status == "OK", result
    assert result.data["secret"] == "none"
    assert result.data["greeting"] == "hi=there"
    assert result.data["path"].endswith(":/opt/extra") and len(result.data["path"]) > len(":/opt/extra")
    assert result.data["home"] == result.data["cwd"]
    assert os.path.basename(result.data["cwd"]).startswith("wf-shell-")
    assert not os.path.exists(result.data["cwd"]), "the working directory is removed afterwards"
    assert result.data["conf"].startswith(result.data["cwd"])


@pytest.mark.usefixtures("enabled")
def test_action_configuration_file() -> None:
    """OOZIE_ACTION_CONF_XML names the action's configuration as Hadoop XML (DG_ShellActionExtension)."""
    result = sh('printf "xml=%s\\n" "$(cat "$OOZIE_ACTION_CONF_XML" | tr -d "\\n")"', capture=True)
    assert parse_hadoop_configuration(result.data["xml"]) == dict(CONTEXT.configuration)


@pytest.mark.usefixtures("enabled")
def test_non_zero_exit_is_an_error_with_stderr() -> None:
    """A non-zero exit is ERROR with Oozie's shell code 1; the message has the exit code and stderr's end."""
    result = sh("echo 'disk full' >&2; exit 3", capture=True)
    assert (result.status, result.error_code, result.external_status) == ("ERROR", "1", "FAILED")
    assert "exit code [3]" in result.error_message
    assert "disk full" in result.error_message
    assert dict(result.data) == {}


@pytest.mark.usefixtures("enabled")
def test_timeout_kills_the_process_group(settings: Any, tmp_path: Path) -> None:
    """After WORKFLOW_SHELL_TIMEOUT_SECONDS the whole group dies (children too): ERROR TIMEOUT, KILLED."""
    settings.WORKFLOW_SHELL_TIMEOUT_SECONDS = 1
    pidfile = tmp_path / "child.pid"
    started = time.monotonic()
    result = sh(f"sleep 60 & echo $! > {pidfile}; wait")
    assert time.monotonic() - started < 20
    assert (result.status, result.error_code, result.external_status) == ("ERROR", "TIMEOUT", "KILLED")
    assert "WORKFLOW_SHELL_TIMEOUT_SECONDS" in result.error_message
    _assert_dead(int(pidfile.read_text()))


@pytest.mark.usefixtures("enabled")
def test_background_children_do_not_outlive_the_action(tmp_path: Path) -> None:
    """What the command leaves running when it ends is killed with its process group."""
    pidfile = tmp_path / "bg.pid"
    result = sh(f"sleep 60 > /dev/null 2>&1 & echo $! > {pidfile}")
    assert result.status == "OK"
    _assert_dead(int(pidfile.read_text()))


def _assert_dead(pid: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        with open(f"/proc/{pid}/stat") as handle:  # a zombie waiting for its reaper is dead too
            if handle.read().split(")")[-1].split()[0] == "Z":
                return
        time.sleep(0.05)
    pytest.fail(f"process {pid} is still running")


@pytest.mark.usefixtures("enabled")
def test_output_over_the_limit_is_an_error(settings: Any) -> None:
    """Captured output beyond WORKFLOW_MAX_OUTPUT_DATA bytes is refused, as Oozie's 2 KB limit."""
    settings.WORKFLOW_MAX_OUTPUT_DATA = 100
    result = sh("i=0; while [ $i -lt 20 ]; do echo key$i=0123456789; i=$((i+1)); done", capture=True)
    assert (result.status, result.error_code) == ("ERROR", "OUTPUT_LIMIT")
    assert "exceeds its limit [100]" in result.error_message
    assert dict(result.data) == {}
    settings.WORKFLOW_MAX_OUTPUT_DATA = 2048
    assert sh("i=0; while [ $i -lt 20 ]; do echo key$i=0123456789; i=$((i+1)); done", capture=True).status == "OK"


@pytest.mark.usefixtures("enabled")
def test_missing_program_is_an_error() -> None:
    """A program that does not exist cannot be run: ERROR naming it."""
    result = execute("shell", {"exec": "/no/such/program", "args": [], "env": [], "capture_output": False}, CONTEXT)
    assert (result.status, result.error_code) == ("ERROR", "FileNotFoundError")
    assert "/no/such/program" in result.error_message


@pytest.mark.usefixtures("enabled")
@pytest.mark.parametrize("pair", ["NOVALUE", "=value"])
def test_malformed_env_var_fails(pair: str) -> None:
    """An env-var that is not NAME=value is Oozie's JA010 (FAILED)."""
    result = sh("true", env=[pair])
    assert (result.status, result.error_code) == ("FAILED", "JA010")


@pytest.mark.usefixtures("enabled")
def test_prepare_runs_before_the_command(tmp_path: Path) -> None:
    """prepare creates the output directory before the command writes there."""
    out = tmp_path / "out"
    result = sh(f"echo x > {out}/file", prepare=[{"op": "mkdir", "path": f"file://{out}"}])
    assert result.status == "OK", result
    assert (out / "file").read_text() == "x\n"


# A pool process that runs one shell action and is then SIGKILLed (the OOM killer, a crash).
POOL_PROCESS = """
import sys, django
django.setup()
from workflows.actions.shell import _run
_run(["sh", "-c", sys.argv[1]], {"PATH": "/usr/bin:/bin"}, sys.argv[2], False)
"""


@contextlib.contextmanager
def pool_running_a_shell(tmp_path: Path, **env: str) -> Iterator[tuple[subprocess.Popen[bytes], int, int]]:
    """A process like a worker's pool process running one shell action that started a background child.

    Yields the process, the command's pid and its background child's pid; the process is
    killed afterwards, stopped or not."""
    pidfile = tmp_path / "pids"
    script = f"sleep 300 & echo $$ $! > {pidfile}; sleep 300"
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "project.settings", "WORKFLOW_SHELL_ENABLED": "true", **env}
    pool = subprocess.Popen([sys.executable, "-c", POOL_PROCESS, script, str(tmp_path)],  # noqa: S603
                            cwd=Path(__file__).resolve().parents[3], env=environment)
    try:
        deadline = time.monotonic() + 30
        while not (pidfile.exists() and len(pidfile.read_text().split()) == 2) and time.monotonic() < deadline:
            time.sleep(0.05)
        shell, background = (int(pid) for pid in pidfile.read_text().split())
        yield pool, shell, background
    finally:
        pool.send_signal(signal.SIGCONT)
        pool.kill()
        pool.wait(10)


def test_a_shell_command_dies_with_the_worker_process_that_ran_it(tmp_path: Path) -> None:
    """Issue 24, item 7: SIGKILL the process running a shell action: the command and what it started die within seconds,
    so a relaunched node never runs beside an earlier copy of its command."""
    with pool_running_a_shell(tmp_path) as (pool, shell, background):
        os.kill(pool.pid, signal.SIGKILL)
        pool.wait(10)
        _assert_dead(shell)
        _assert_dead(background)


def test_a_shell_command_dies_when_its_worker_process_is_stopped_past_the_lease(tmp_path: Path) -> None:
    """Issue 24, item 7: SIGSTOP the process running a shell action (a frozen host): once it has been stopped for
    the node's lease, after which the node may run elsewhere, the command and its children are killed."""
    with pool_running_a_shell(tmp_path, WORKFLOW_LEASE_SECONDS="2") as (pool, shell, background):
        time.sleep(3)  # running longer than the lease is fine while the worker process runs
        os.kill(shell, 0)
        os.kill(pool.pid, signal.SIGSTOP)
        stopped = time.monotonic()
        _assert_dead(shell)
        _assert_dead(background)
        assert 2 <= time.monotonic() - stopped < 6


@pytest.mark.usefixtures("enabled")
def test_migrated_uris_in_arguments_and_env_vars_are_mapped(settings: Any, tmp_path: Path) -> None:
    """An Oozie app's `hdfs://` arguments and env-vars reach the command as the storage STORAGE_URI_MAP maps them to."""
    settings.STORAGE_URI_MAP = {"hdfs://namenode:8020": f"file://{tmp_path}"}
    result = sh(
        'echo "arg=$1"; echo "flag=$2"; echo "env=$INPUT"; echo "other=$3"',
        "hdfs://namenode:8020/user/ann/in", "-Dout=hdfs://namenode:8020/user/ann/out", "hdfs://elsewhere/x",
        env=["INPUT=hdfs://namenode:8020/data/a,hdfs://namenode:8020/data/b"], capture=True,
    )
    assert result.status == "OK", result
    assert result.data == {
        "arg": f"file://{tmp_path}/user/ann/in", "flag": f"-Dout=file://{tmp_path}/user/ann/out",
        "env": f"file://{tmp_path}/data/a,file://{tmp_path}/data/b", "other": "hdfs://elsewhere/x",
    }
