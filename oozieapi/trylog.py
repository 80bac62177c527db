"""The tries in a job's log (`show=log`, `show=errorlog`, `job -log`): each try's end, then what it logged.

Every try of a node (kernel.tries) gives one line for its end (ERROR for an error, with the
whole traceback on the lines after it, as Oozie's log4j lines carry a stack trace), and one
line per line it logged or printed, at the level and time the record had (a printed line takes
the level and time of the record before it, or the try's end).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from kernel.models import TaskTry
from oozieapi.errors import one_line

MAX_TRIES = 2000  # the most recent tries read per request
ERROR_STATUSES = frozenset({"ERROR", "FAILED", "LOST", "KILLED", "PARKED", "DISCARDED"})
#: kernel.capture.FORMAT's start: `2026-11-27 07:50:01,123 WARNING name: message` (UTC).
_RECORD = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) ([A-Z]+) ")
_LEVELS = {"CRITICAL": "ERROR", "ERROR": "ERROR", "WARNING": "WARN", "INFO": "INFO", "DEBUG": "DEBUG"}


@dataclass(frozen=True)
class TryLine:
    """One line about a try: when, the level, the source (see `source`), the node or action it names, the text."""

    at: datetime
    level: str
    source: str
    action: str
    text: str


def source(row: TaskTry) -> str:
    """Who the line is about, as Oozie names its log's sources: the node, the stage, the command."""
    if row.kind == TaskTry.Kind.NODE:
        return "WorkflowNode"
    if row.kind == TaskTry.Kind.STAGE:
        return f"BatchStage:{row.name}"
    return f"{row.name.rsplit('.', 1)[-1]}:{row.object_id}"


def end_line(row: TaskTry, action: str) -> TryLine:
    """The try's end: run, attempt, worker and outcome; its error and traceback."""
    level = "ERROR" if row.status in ERROR_STATUSES else "WARN" if row.status == "RETRY" else "INFO"
    run = f" of run {row.run}" if row.run else ""
    text = f"attempt {row.attempt}{run} on {row.worker or '-'}: {row.status}"
    if row.error_message:
        text += f": {one_line(row.error_message)}"
    if row.traceback:
        text += "\n" + row.traceback.rstrip("\n")
    return TryLine(row.ended_at, level, source(row), action, text)


def log_lines(row: TaskTry, action: str) -> Iterator[TryLine]:
    """What the try logged and printed, a line each."""
    level, at = "INFO", row.started_at or row.ended_at
    for line in row.log.splitlines():
        if not line.strip():
            continue
        if found := _RECORD.match(line):
            level = _LEVELS.get(found.group(3), "INFO")
            at = datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S").replace(
                microsecond=int(found.group(2)) * 1000, tzinfo=UTC)
            line = line[found.end():]
        yield TryLine(at, level, source(row), action, line)


def lines_of(rows: Iterable[TaskTry], *, by_action: bool) -> list[TryLine]:
    """Every line of these tries; `by_action`: lines name the coordinator action, else the node."""
    lines: list[TryLine] = []
    for row in rows:
        action = row.action_id if by_action else row.object_id
        lines += log_lines(row, action)
        lines.append(end_line(row, action))
    return lines


def of_workflow(workflow_id: str) -> list[TaskTry]:
    """The workflow run's node tries, oldest first (the most recent MAX_TRIES)."""
    rows = list(TaskTry.objects.filter(job_id=workflow_id).order_by("-id")[:MAX_TRIES])
    return rows[::-1]


def of_coordinator(job_id: str) -> list[TaskTry]:
    """The tries of every run of a coordinator's actions and of its commands that failed or warned, oldest first
    (the most recent MAX_TRIES)."""
    rows = list(TaskTry.objects.filter(root_id=job_id).order_by("-id")[:MAX_TRIES])
    return rows[::-1]
