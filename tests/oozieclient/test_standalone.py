"""The `oozie` command stands alone: its script entry point, no Django or Celery imported, usable from another machine."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.coordinators.api.factories import user
from tests.oozieclient.ran import Ran
from tests.oozieclient.test_live import job_id, layout, properties
from workflows.models import WorkflowJob

ROOT = Path(__file__).resolve().parents[2]
# What the console script pip writes for `oozie = "oozieclient.cli:main"` does, run from the checkout.
SCRIPT = "import sys\nfrom oozieclient.cli import main\nsys.exit(main())\n"


def oozie(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The `oozie` command in a fresh interpreter without DJANGO_SETTINGS_MODULE (as on a client machine)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "OOZIE_"))}
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, *args], cwd=ROOT, env={**environ, **(env or {})},
        capture_output=True, text=True, timeout=60, check=False,
    )


def test_the_package_installs_the_oozie_script() -> None:
    """pyproject names `oozie = oozieclient.cli:main` and ships the package."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["oozie"] == "oozieclient.cli:main"
    assert any(pattern.startswith("oozieclient") for pattern in project["tool"]["setuptools"]["packages"]["find"]["include"])
    done = oozie("version")
    assert (done.returncode, done.stdout.split(": ")[0]) == (0, "Oozie client build version")


def test_it_imports_neither_django_nor_celery() -> None:
    """Every module of the package imported in a fresh interpreter: no django, celery, kombu, lxml or project package loaded."""
    code = (
        "import sys, oozieclient.cli, oozieclient.commands, oozieclient.http, oozieclient.render, oozieclient.properties\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'django', 'celery', 'kombu', 'rest_framework', 'redis', 'lxml', 'fsspec', 'oozie', 'oozieapi', 'kernel', 'project'})\n"
        "print(bad)\n"
    )
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, check=False, env={k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines() if "|" in line}
    assert "oozieclient" in imported and not imported & {"django", "celery", "lxml"}


def test_usage_errors_exit_255_without_a_server() -> None:
    """No sub-command, an unknown one, no URL: Oozie's messages and exit code -1 (255)."""
    missing = oozie()
    assert missing.returncode == 255 and missing.stderr.startswith("Invalid sub-command: Missing sub-command")
    unknown = oozie("frobnicate")
    assert unknown.returncode == 255 and "Invalid sub-command [frobnicate]" in unknown.stderr
    no_url = oozie("jobs")
    assert no_url.returncode == 255
    assert no_url.stderr == "Error: E0000 : Oozie URL is not available neither in command option or in the environment\n"
    assert oozie("help").stdout.startswith("usage:")


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_the_script_runs_a_workflow_from_another_process(live_server: Any, in_process_engine: None, tmp_path: Path) -> None:
    """A separate process with only OOZIE_URL and credentials submits Oozie's example and reads it back."""
    user("ann")
    hdfs = layout(tmp_path)
    env = {"OOZIE_URL": f"{live_server.url}/oozie", "OOZIE_USER": "ann", "OOZIE_PASSWORD": "ann-password-123"}
    ran = oozie("job", "-config", properties(tmp_path, hdfs, "no-op"), "-run", env=env)
    workflow = job_id(Ran(ran.returncode, ran.stdout, ran.stderr))
    assert WorkflowJob.objects.filter(pk=workflow).exists()
    info = oozie("job", "-info", workflow, env=env)
    assert info.returncode == 0 and f"Job ID : {workflow}" in info.stdout
    status = oozie("admin", "-status", env=env)
    assert (status.returncode, status.stdout) == (0, "Safemode: OFF\n")
