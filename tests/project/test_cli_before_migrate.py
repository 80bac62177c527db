"""Every verb of the product's commands, run before `migrate`, says so in one line and exits 1 (no traceback).

kernel.cli.ProductCommand turns a missing table into "the database is not migrated (...): run
`python manage.py migrate` first"; the dry-runs of coordinators and bundles need no database
and keep working. Each verb runs in its own process against an empty SQLite file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COORD = "0000001-260101000000000-oozie-oozi-C"
BUNDLE = "0000002-260101000000000-oozie-oozi-B"
WORKFLOW = "0000003-260101000000000-oozie-oozi-W"
HOURLY = "examples/pipeline/hourly.properties"

VERBS = {
    "job-run": ["job", "-run", "-config", HOURLY],
    "job-submit": ["job", "-submit", "-config", HOURLY],
    "job-start": ["job", "-start", COORD],
    "job-info": ["job", "-info", COORD],
    "job-info-bundle": ["job", "-info", BUNDLE],
    "job-info-workflow": ["job", "-info", WORKFLOW],
    "job-kill": ["job", "-kill", COORD],
    "job-suspend-bundle": ["job", "-suspend", BUNDLE],
    "job-resume": ["job", "-resume", COORD],
    "job-change": ["job", "-change", COORD, "-value", "concurrency=2"],
    "job-rerun": ["job", "-rerun", COORD, "-action", "1"],
    "job-rerun-bundle": ["job", "-rerun", BUNDLE, "-coordinator", "hourly"],
    "job-rerun-workflow": ["job", "-rerun", WORKFLOW],
    "job-ignore": ["job", "-ignore", COORD],
    "job-update": ["job", "-update", COORD],
    "job-log": ["job", "-log", COORD],
    "jobs-list": ["jobs"],
    "jobs-bundles": ["jobs", "-jobtype", "bundle"],
    "jobs-kill": ["jobs", "-kill", "-filter", "user=ann"],
    "batch-submit": ["batch", "submit", "--profile", "example", "--type", "file", "--payload", "examples/ingest"],
    "batch-info": ["batch", "info", "bid1"],
    "batch-report": ["batch", "report", "bid1"],
    "batch-hold": ["batch", "hold", "coll"],
    "batch-release": ["batch", "release", "--batch", "bid1"],
    "batch-resume": ["batch", "resume", "jid1"],
    "batch-requeue": ["batch", "requeue", "jid1"],
    "batch-delete": ["batch", "delete", "--job", "jid1", "--yes"],
    "batch-priority": ["batch", "priority", "jid1", "3"],
    "batch-update-report": ["batch", "update-report", "bid1"],
    "user-add": ["user", "add", "ann"],
    "user-token": ["user", "token", "ann"],
}


def manage(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`manage.py ARGS` as the login user ann, against an empty database file."""
    env = {**os.environ, "VAR_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path / 'empty.sqlite3'}",
           "USER": "ann", "LOGNAME": "ann", "ALLOWED_TASKS": "actions.*,examples.*"}  # the example bundle's tasks
    return subprocess.run(  # noqa: S603 - our own manage.py
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )


@pytest.mark.parametrize("args", list(VERBS.values()), ids=list(VERBS))
def test_a_verb_before_migrate_says_so(args: list[str], tmp_path: Path) -> None:
    """One line naming `migrate`, exit status 1, no traceback, nothing on stdout."""
    done = manage(tmp_path, *args)
    assert done.returncode == 1, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()  # Django's system-check warnings, if any, come first
    assert lines[-1].startswith("CommandError: the database is not migrated ("), done.stderr[-2000:]
    assert lines[-1].endswith("run `python manage.py migrate` first")
    assert sum("migrate" in line for line in lines) == 1
    assert "Traceback" not in done.stderr and done.stdout == ""


@pytest.mark.parametrize("config", ["examples/pipeline/hourly.properties", "examples/pipeline/bundle.properties"])
def test_dry_runs_need_no_database(config: str, tmp_path: Path) -> None:
    """A coordinator or bundle dry-run before `migrate` plans its actions (the -user is only a name then)."""
    done = manage(tmp_path, "job", "-dryrun", "-config", config, "-len", "2")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "action(s)" in done.stdout and "Traceback" not in done.stderr
