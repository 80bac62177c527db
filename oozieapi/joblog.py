"""`show=log`: a coordinator or bundle job's log, built from what the database keeps (no log files).

Two sources, merged by time: the commands run on the job's key (each command's outcome, its
attempts and last error, from the command engine's history, kept COMMAND_HISTORY_DAYS), and the
error messages of its actions (task failures, timeouts; a bundle's coordinators that could not
be submitted). Lines are formatted like Oozie's log4j
lines so that existing `grep`s keep working.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bundles.models import BundleJob
from coordinators.models import CoordinatorAction, CoordinatorJob
from oozieapi.errors import OozieError, one_line
from xcommands.models import Command

MAX_SOURCE_ROWS = 5000  # the most recent commands and action errors read per request
# Line levels: ERROR for failed commands and action errors, WARN while rolling back, else INFO.
COMMAND_LEVEL = {"FAILED": "ERROR", "PARKED": "ERROR", "ROLLING_BACK": "WARN", "SKIPPED": "INFO"}
LoggedJob = CoordinatorJob | BundleJob


@dataclass(frozen=True)
class LogLine:
    """One line of the job log."""

    at: datetime
    level: str
    source: str
    action: str
    text: str

    def render(self, job: LoggedJob) -> str:
        """`2026-11-23 10:00:00,123  INFO CoordKillXCommand - USER[ann] ... JOB[...] ACTION[...] text`."""
        stamp = self.at.strftime("%Y-%m-%d %H:%M:%S,") + f"{self.at.microsecond // 1000:03d}"
        return (
            f"{stamp} {self.level:>5} {self.source} - USER[{job.owner.get_username()}] GROUP[-] TOKEN[-] "
            f"APP[{job.app_name}] JOB[{job.id}] ACTION[{self.action or '-'}] {self.text}"
        )


def parse_log_filter(text: str) -> dict[str, str]:
    """Oozie's `logfilter` (`loglevel=ERROR|WARN;text=...;action=3`); E0302 for an unknown option."""
    options: dict[str, str] = {}
    for token in (t.strip() for t in text.split(";")):
        if not token:
            continue
        name, _, value = token.partition("=")
        name = name.strip().lower()
        if name not in ("loglevel", "text", "action", "limit") or not value:
            raise OozieError(400, "E0302", f"logfilter {token}")
        options[name] = value.strip()
    for level in options.get("loglevel", "ERROR").upper().split("|"):
        if level not in ("ERROR", "WARN", "INFO", "DEBUG"):
            raise OozieError(400, "E0302", f"logfilter loglevel={level}")
    if "limit" in options and not options["limit"].isdigit():
        raise OozieError(400, "E0302", f"logfilter limit={options['limit']}")
    return options


def _command_lines(job: LoggedJob) -> list[LogLine]:
    rows = (
        Command.objects.filter(key=job.id)
        .order_by("-seq")
        .values("seq", "name", "status", "params", "attempts", "enqueued_at", "finished_at", "last_error")[:MAX_SOURCE_ROWS]
    )
    lines = []
    for row in rows:
        params: Any = row["params"] if isinstance(row["params"], dict) else {}
        number = params.get("number")
        action = CoordinatorAction.action_id(job.id, number) if isinstance(number, int) else ""
        short_name = str(row["name"]).rsplit(".", 1)[-1]
        detail = f"{row['status'].lower()} after {row['attempts']} attempt(s)"
        if row["last_error"]:
            detail += f": {one_line(row['last_error'])}"
        level = COMMAND_LEVEL.get(row["status"], "INFO")
        lines.append(LogLine(row["finished_at"] or row["enqueued_at"], level, f"{short_name}:{row['seq']}", action, detail))
    return lines


def _action_lines(job: LoggedJob) -> list[LogLine]:
    rows = (
        job.actions.exclude(error_message="")
        .order_by("-last_modified")
        .values("id", "status", "error_message", "last_modified")[:MAX_SOURCE_ROWS]
    )
    return [
        LogLine(row["last_modified"], "ERROR", "CoordinatorAction", row["id"], f"{row['status']}: {one_line(row['error_message'])}")
        for row in rows
    ]


def job_log(job: LoggedJob, *, options: dict[str, str], errors_only: bool = False) -> list[str]:
    """The job's log lines, oldest first, narrowed by the log filter."""
    lines = sorted(_command_lines(job) + _action_lines(job), key=lambda line: line.at)
    levels = {"ERROR"} if errors_only else set(options.get("loglevel", "ERROR|WARN|INFO|DEBUG").upper().split("|"))
    text = options.get("text", "")
    action = options.get("action", "")
    chosen = [
        line for line in lines
        if line.level in levels
        and (not text or text in line.text)
        and (not action or line.action.endswith(f"@{action}"))
    ]
    if "limit" in options:
        chosen = chosen[-int(options["limit"]):] if int(options["limit"]) else []
    return [line.render(job) for line in chosen]

