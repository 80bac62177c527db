"""The examples of Oozie's DG_CommandLineTool.md, and the shape of a command's output to compare with them.

The page draws a blank output line as `.` and a line starting with `-` as `.-...` (its wiki
escape); `example` undoes that. `shape` names each line's kind: a dashed separator, a table
header (its column names), a labelled line (its label), a row, or text; a separator is a line of
dashes whatever its width (the page's older examples draw 160, OozieCLI.LINE_WIDTH is 132).
"""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).parent / "reference" / "DG_CommandLineTool.md"
_COLUMNS = re.compile(r"\s{2,}")
_LABEL = re.compile(r"^([A-Za-z][A-Za-z ]*?)\s*:(?:\s|$)")


def example(heading: str, index: int = 0) -> list[str]:
    """The output lines of the `index`th example under `### heading` (its `$ oozie ...` line dropped)."""
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"### {heading}\n")
    end = text.find("\n### ", start + 1)
    section = text[start:end if end > 0 else len(text)]
    blocks = re.findall(r"```\n(.*?)```", section, flags=re.S)
    lines = blocks[index].rstrip("\n").split("\n")
    output: list[str] = []
    for line in lines:
        if line.lstrip().startswith("$") and "oozie" in line:
            continue
        output.append("" if line == "." else line[1:] if line.startswith(".-") else line)
    while output and not output[0].strip():
        output.pop(0)
    return output


def is_ruler(line: str) -> bool:
    """A separator: dashes only, at least 80 of them."""
    stripped = line.strip()
    return len(stripped) >= 80 and set(stripped) == {"-"}


def columns(line: str) -> list[str]:
    """The column names of a table header (cells are at least two spaces apart)."""
    return _COLUMNS.split(line.strip())


def label(line: str) -> str:
    """The label of a `Label : value` line ("" when it has none; a row's `:start:` cell is no label)."""
    match = _LABEL.match(line)
    return match.group(1).strip() if match else ""


def shape(lines: list[str], headers: tuple[str, ...] = ()) -> list[str]:
    """Each line's kind: `ruler`, `header:<columns>` (a line starting with one of `headers`), `label:<label>`, `row`."""
    kinds: list[str] = []
    for line in lines:
        if is_ruler(line):
            kinds.append("ruler")
        elif any(line.startswith(h) for h in headers):
            kinds.append("header:" + "|".join(columns(line)))
        elif label(line):
            kinds.append("label:" + label(line))
        elif line.strip():
            kinds.append("row")
        else:
            kinds.append("blank")
    return kinds
