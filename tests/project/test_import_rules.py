"""Imports sit at the top of modules: one left inside a function says why on its line (ADR 0030)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKIPPED = {".venv", "var", "node_modules", ".git", "migrations"}
NOQA = re.compile(r"^#\s*noqa:[^#]*\bPLC0415\b(?P<rest>.*)$")


def _python_files() -> list[Path]:
    return [
        path for path in ROOT.rglob("*.py")
        if not SKIPPED.intersection(path.relative_to(ROOT).parts)
    ]


def test_every_import_left_inside_a_function_gives_its_reason() -> None:
    """`# noqa: PLC0415 - <reason>`: a reason of three words or more, and never a cycle."""
    unexplained: list[str] = []
    seen = 0
    for path in _python_files():
        source = path.read_text(encoding="utf-8")
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            found = NOQA.search(token.string) if token.type == tokenize.COMMENT else None
            if found is None:
                continue
            seen += 1
            reason = found.group("rest").strip(" -:;,")
            if len(reason.split()) < 3 or re.search(r"\bcycl", reason, re.IGNORECASE):
                unexplained.append(f"{path.relative_to(ROOT)}:{token.start[0]}: {token.line.strip()}")
    assert seen > 0, "the check found no annotated import at all: its pattern no longer matches"
    assert not unexplained, "imports inside functions without a reason:\n" + "\n".join(unexplained)


def test_ruff_checks_imports_inside_functions_everywhere() -> None:
    """PLC0415 is selected and no file or folder is exempt from it."""
    config = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    selected = re.search(r"^select = \[(?P<codes>[^\]]*)\]", config, re.MULTILINE)
    assert selected is not None and '"PLC0415"' in selected.group("codes")
    ignores = config.split("[tool.ruff.lint.per-file-ignores]", 1)[-1].split("\n[", 1)[0]
    assert "PLC0415" not in ignores


def test_no_test_imports_a_conftest() -> None:
    """A conftest holds its directory's fixtures; what other trees share lives in tests/support/ (plugins of the root)."""
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in (ROOT / "tests").rglob("*.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.match(r"\s*(from\s+\S*conftest\s+import|import\s+\S*conftest)", line)
    ]
    assert not offenders, offenders
