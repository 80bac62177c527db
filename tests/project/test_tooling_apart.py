"""Tooling stays out of the product (issue 25, item 4): benchmarks and drills live in tooling/, which no product module imports.

The product packages are the distribution's (pyproject's package list); tooling/ is not
among them. Every import is read from the source, those inside functions too. The commands
still work as documented: `manage.py bench` and `manage.py chaos` are found and answer --help.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.support.processes import ROOT


def product_packages() -> list[str]:
    """The top-level packages the distribution installs (pyproject's find-include patterns)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return [pattern.rstrip("*") for pattern in config["tool"]["setuptools"]["packages"]["find"]["include"]]


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_tooling_is_not_installed_with_the_product() -> None:
    packages = product_packages()
    assert "tooling" not in packages and "tests" not in packages
    assert {"project", "kernel", "coordinators", "operations", "workflows"} <= set(packages)


def test_no_product_module_imports_the_tooling() -> None:
    offenders = []
    for package in product_packages():
        for path in sorted((ROOT / package).rglob("*.py")):
            if any(name == "tooling" or name.startswith("tooling.") for name in imported_modules(path)):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_no_benchmark_or_drill_is_left_in_the_product() -> None:
    leftovers = [str(path.relative_to(ROOT)) for package in product_packages()
                 for path in (ROOT / package).rglob("*.py")
                 if "bench" in path.name or "chaos" in path.parts or path.name == "chaos.py"]
    assert leftovers == []


def test_bench_and_chaos_are_still_manage_py_commands() -> None:
    for command in ("bench", "chaos"):
        done = subprocess.run([sys.executable, "manage.py", command, "--help"], cwd=ROOT,  # noqa: S603
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        assert f"manage.py {command}" in done.stdout
