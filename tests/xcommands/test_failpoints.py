"""Failpoints are inert unless configured, and kill the process at the point named when they are."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from xcommands import failpoints


def test_no_configuration_means_nothing_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without XCOMMANDS_FAILPOINTS, hitting any point returns."""
    monkeypatch.delenv(failpoints.VARIABLE, raising=False)
    failpoints.hit("coordinators.CoordSuspendXCommand:before-commit")


def test_other_points_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the named point acts."""
    monkeypatch.setenv(failpoints.VARIABLE, "a.AXCommand:before-commit=exit")
    failpoints.hit("b.BXCommand:before-commit")


@pytest.mark.parametrize("once", [False, True], ids=["exit", "exit-once"])
def test_the_process_dies_at_the_point(tmp_path: Path, once: bool) -> None:
    """`exit` kills the process with 137 each time; `exit-once` only the first time (a marker file records it)."""
    marker = tmp_path / "hit"
    action = f"exit-once:{marker}" if once else "exit"
    code = "from xcommands import failpoints; failpoints.hit('p'); print('survived')"
    env = {**os.environ, failpoints.VARIABLE: f"p={action}"}
    run = [sys.executable, "-c", code]
    first = subprocess.run(run, env=env, capture_output=True, text=True, check=False)  # noqa: S603
    assert first.returncode == failpoints.EXIT_CODE and "survived" not in first.stdout
    second = subprocess.run(run, env=env, capture_output=True, text=True, check=False)  # noqa: S603
    assert (second.returncode, "survived" in second.stdout) == ((0, True) if once else (failpoints.EXIT_CODE, False))
