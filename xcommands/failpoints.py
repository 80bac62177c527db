"""Failpoints: make a worker die at a chosen point, to test what the engine promises when it does.

Off unless the environment variable XCOMMANDS_FAILPOINTS is set (tests and drills set it for
the workers they start). Its value is `point=action[,point=action...]`:

- point: `<command name>:before-commit`, reached after a command ran and before its
  transaction commits (so its effects are not yet visible to anyone);
- action: `exit` (the process dies at once, as with SIGKILL: no cleanup, nothing committed)
  or `exit-once:<marker file>` (dies the first time only: the marker records it).
"""

from __future__ import annotations

import os
from pathlib import Path

VARIABLE = "XCOMMANDS_FAILPOINTS"
EXIT_CODE = 137  # what a SIGKILLed process reports


def _actions() -> dict[str, str]:
    raw = os.environ.get(VARIABLE, "")
    pairs = (part.partition("=") for part in raw.split(",") if part.strip())
    return {point.strip(): action.strip() for point, _, action in pairs}


def hit(point: str) -> None:
    """Carry out the action configured for this point, if any (nothing at all when none is configured)."""
    if VARIABLE not in os.environ:
        return
    action = _actions().get(point)
    if action is None:
        return
    if action == "exit":
        os._exit(EXIT_CODE)
    if action.startswith("exit-once:"):
        marker = Path(action.removeprefix("exit-once:"))
        try:
            with marker.open("x"):
                pass
        except FileExistsError:
            return
        os._exit(EXIT_CODE)
