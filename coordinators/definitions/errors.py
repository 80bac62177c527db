"""Errors of definition parsing: each names the file, the line and the element."""

from __future__ import annotations


class DefinitionError(ValueError):
    """A coordinator/bundle definition or configuration is refused."""

    def __init__(self, message: str, *, source: str = "<inline>", line: int | None = None, element: str | None = None) -> None:
        self.source = source
        self.line = line
        self.element = element
        self.reason = message
        where = source + (f":{line}" if line else "")
        what = f" <{element}>" if element else ""
        super().__init__(f"{where}:{what} {message}" if what else f"{where}: {message}")
