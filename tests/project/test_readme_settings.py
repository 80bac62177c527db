"""Every environment variable the service reads is documented in the README."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Modules that read the environment: the settings (env_* helpers) and the launcher (os.environ).
SOURCES = ("project/settings.py", "project/management/commands/up.py")


def environment_names(source: Path) -> set[str]:
    """Names passed as the first argument to env_*(...), os.environ.get(...), os.getenv(...) or os.environ[...]."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            function = node.func
            called = function.id if isinstance(function, ast.Name) else getattr(function, "attr", "")
            owner = ast.unparse(function.value) if isinstance(function, ast.Attribute) else ""
            if called.startswith("env_") or called == "getenv" or (called == "get" and owner == "os.environ"):
                names.add(str(node.args[0].value))
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
            if isinstance(node.slice, ast.Constant):
                names.add(str(node.slice.value))
    return names


def test_the_parser_finds_what_settings_read() -> None:
    """The scan is not vacuous: it sees the variables every deployment sets."""
    names = environment_names(ROOT / "project/settings.py")
    assert {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "COORD_INPUT_CHECK_SECONDS"} <= names
    assert {"PORT", "EMBEDDED_REDIS_PORT", "ADMIN_PASSWORD"} <= environment_names(ROOT / "project/management/commands/up.py")


@pytest.mark.parametrize("source", SOURCES)
def test_every_environment_variable_is_in_the_readme(source: str) -> None:
    """Each variable appears in README.md as `NAME` (the settings table, or the section it belongs to)."""
    readme = (ROOT / "README.md").read_text()
    missing = sorted(name for name in environment_names(ROOT / source) if f"`{name}`" not in readme)
    assert not missing, f"{source} reads {', '.join(missing)}, which README.md does not document"
