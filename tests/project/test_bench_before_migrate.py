"""Every benchmark that stores rows, run before `migrate`, says so in one line and exits 1 (no traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tooling.management.commands.bench import BENCHMARKS, NO_DATABASE

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(set(BENCHMARKS) - NO_DATABASE))
def test_a_benchmark_before_migrate_says_so(name: str, tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'empty.sqlite3'}"}
    done = subprocess.run(  # noqa: S603 - our own manage.py
        [sys.executable, "manage.py", "bench", name, "--json"], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert "the database is not migrated" in done.stderr and "run `python manage.py migrate` first" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
