"""Every environment variable the service reads is documented in the manual (README.md and docs/*.md)."""

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


def manual() -> str:
    """The manual's text: the README's first screen and the pages in docs/ (the decisions in docs/adr/ are not it)."""
    return "\n".join(path.read_text() for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])


def test_the_manual_has_its_configuration_page() -> None:
    """docs/configuration.md holds the settings table the README points to (the scan below reads a real manual)."""
    page = (ROOT / "docs" / "configuration.md").read_text()
    assert "| `DATABASE_URL` |" in page and "(docs/configuration.md)" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("source", SOURCES)
def test_every_environment_variable_is_in_the_manual(source: str) -> None:
    """Each variable appears in the manual as `NAME` (docs/configuration.md's table, or the page it belongs to)."""
    text = manual()
    missing = sorted(name for name in environment_names(ROOT / source) if f"`{name}`" not in text)
    assert not missing, f"{source} reads {', '.join(missing)}, which the manual (README.md, docs/) does not document"
