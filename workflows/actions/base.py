"""What an action executor is given and what it answers."""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field

OK = "OK"
ERROR = "ERROR"  # the action ran and failed: the node takes its error transition (user retry applies)
FAILED = "FAILED"  # the action could not run at all (disabled, unknown task): the workflow fails
MAX_MESSAGE_CHARS = 4000


@dataclass(frozen=True)
class ActionContext:
    """The node being run: its workflow job, its name, its configuration (global under its own), the user."""

    workflow_id: str
    node_name: str
    configuration: Mapping[str, str]
    user: str
    nominal_time: str = ""


@dataclass(frozen=True)
class ActionResult:
    """How an action ended: OK, ERROR or FAILED, an Oozie-style error code and message, its data and ids.

    `data` is what `wf:actionData(node)` returns; `transient` marks an infrastructure error
    (a lost connection, a timeout) the engine may retry by launching the node again.
    """

    status: str
    error_code: str = ""
    error_message: str = ""
    data: Mapping[str, str] = field(default_factory=dict)
    external_id: str = ""
    external_status: str = ""
    transient: bool = False


def error(code: str, message: str, *, transient: bool = False, external_status: str = "", external_id: str = "") -> ActionResult:
    """An ERROR result, its message cut to MAX_MESSAGE_CHARS."""
    return ActionResult(
        ERROR, code, message[:MAX_MESSAGE_CHARS], transient=transient,
        external_status=external_status or ERROR, external_id=external_id,
    )


def failed(code: str, message: str) -> ActionResult:
    """A FAILED result (the action could not run)."""
    return ActionResult(FAILED, code, message[:MAX_MESSAGE_CHARS], external_status=FAILED)


def exception_text(exc: BaseException) -> str:
    """The exception's one-line text, as a traceback's last line shows it."""
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()
