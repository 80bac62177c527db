"""`show=log`: a coordinator or bundle job's log, built from what the database keeps (no log files).

Two sources, merged by time: the commands run on the job's key (each command's outcome, its
attempts and last error, from the command engine's history, kept COMMAND_HISTORY_DAYS), and the
job's actions: for a coordinator each action's story from its row (created and for which
nominal time, submitted, running, ended with its error, or still waiting: what is missing, the
next check, the timeout); for a bundle its coordinators' errors. Every line about an action
names it (ACTION[<job>@<n>]), input checks included; materializations that created nothing
and input checks that changed nothing are summed up in one line each. Lines are formatted like
Oozie's log4j lines so that existing `grep`s keep working.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bundles.models import BundleJob
from coordinators.models import CoordinatorAction, CoordinatorJob
from oozieapi import trylog
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


# Periodic commands that usually change nothing: those that did are listed (with their actions),
# the others are summed up in one line per kind, so an action's story is not lost among them.
MATERIALIZE = "CoordMaterializeXCommand"
INPUT_CHECK = "CoordActionInputCheckXCommand"
QUIET_WHEN_IDLE = {
    MATERIALIZE: "created no action",
    INPUT_CHECK: "found no waiting action's inputs complete",
}
CHANGE_COUNTS = ("ready", "timedout", "failed", "submitted", "skipped")
NAMED_ACTIONS = 50  # an input check named more actions than this: one line names the first and the count


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _idle(short_name: str, status: str, result: Any) -> bool:
    """A materialization that created nothing, or an input check that changed nothing (or either skipped)."""
    if short_name not in QUIET_WHEN_IDLE or status not in ("SUCCEEDED", "SKIPPED"):
        return False
    if status == "SKIPPED":
        return True
    counts = result if isinstance(result, dict) else {}
    if short_name == MATERIALIZE:
        return not counts.get("created")
    return not any(counts.get(name) for name in CHANGE_COUNTS)


class _ActionTimes:
    """When the job's actions were submitted or ended, to name the actions a periodic input check changed."""

    def __init__(self, job: CoordinatorJob) -> None:
        rows = list(
            job.actions.order_by("-number").values("id", "submitted_at", "ended_at", "status")[:MAX_SOURCE_ROWS]
        )
        self.submitted = sorted((r["submitted_at"], r["id"]) for r in rows if r["submitted_at"] is not None)
        self.ended = sorted(
            (r["ended_at"], r["id"]) for r in rows
            if r["ended_at"] is not None and r["status"] in ("TIMEDOUT", "FAILED", "SKIPPED")
        )

    def between(self, first: datetime | None, last: datetime | None) -> list[str]:
        """Actions submitted, timed out, failed or skipped while the command ran, by id."""
        if first is None or last is None:
            return []
        found: list[str] = []
        for stamps in (self.submitted, self.ended):
            low = bisect_left(stamps, (first, ""))
            high = bisect_right(stamps, (last, "\uffff"))
            found += [action_id for _, action_id in stamps[low:high]]
        return sorted(set(found), key=_number)


def _number(action_id: str) -> int:
    number = action_id.rpartition("@")[2]
    return int(number) if number.isdigit() else 0


def _command_actions(job: LoggedJob, row: Mapping[str, Any], times: _ActionTimes | None) -> tuple[list[str], str]:
    """The action ids a command concerns (empty: the job as a whole) and what to add to its line."""
    params: Any = row["params"] if isinstance(row["params"], dict) else {}
    result: Any = row["result"] if isinstance(row["result"], dict) else {}
    short_name = str(row["name"]).rsplit(".", 1)[-1]
    number = params.get("number")
    if isinstance(number, int):
        return [CoordinatorAction.action_id(job.id, number)], ""
    numbers = params.get("numbers")
    counts = ", ".join(f"{name} {result[name]}" for name in CHANGE_COUNTS + ("waiting",) if result.get(name))
    if short_name == INPUT_CHECK:
        if isinstance(numbers, list) and numbers:
            ids = [CoordinatorAction.action_id(job.id, n) for n in numbers if isinstance(n, int)]
        else:
            ids = times.between(row["started_at"], row["finished_at"]) if times is not None else []
        return ids, f" ({counts})" if counts else ""
    if short_name == MATERIALIZE and result.get("created") and isinstance(result.get("last_action_number"), int):
        last, created = int(result["last_action_number"]), int(result["created"])
        first = last - created + 1
        ids = [CoordinatorAction.action_id(job.id, first)]
        return ids, f": created {created} action(s), @{first}" + (f" to @{last}" if last != first else "")
    return [], ""


def _command_lines(job: LoggedJob) -> list[LogLine]:
    rows = (
        Command.objects.filter(key=job.id)
        .order_by("-seq")
        .values("seq", "name", "status", "params", "result", "attempts", "enqueued_at", "started_at", "finished_at",
                "last_error")[:MAX_SOURCE_ROWS]
    )
    times = _ActionTimes(job) if isinstance(job, CoordinatorJob) else None
    lines = []
    idle: dict[str, list[datetime]] = {}
    for row in rows:
        short_name = str(row["name"]).rsplit(".", 1)[-1]
        at = row["finished_at"] or row["enqueued_at"]
        if _idle(short_name, row["status"], row["result"]):
            idle.setdefault(short_name, []).append(at)
            continue
        actions, extra = _command_actions(job, row, times)
        detail = f"{row['status'].lower()} after {row['attempts']} attempt(s){extra}"
        if row["last_error"]:
            detail += f": {one_line(row['last_error'])}"
        level = COMMAND_LEVEL.get(row["status"], "INFO")
        source = f"{short_name}:{row['seq']}"
        if len(actions) > NAMED_ACTIONS:
            detail += f"; {len(actions)} actions, {actions[0]} to {actions[-1]}"
            actions = actions[:1]
        lines += [LogLine(at, level, source, action, detail) for action in actions or [""]]
    for short_name, stamps in idle.items():
        first, last = min(stamps), max(stamps)
        lines.append(LogLine(
            last, "INFO", short_name, "",
            f"{len(stamps)} run(s) from {_stamp(first)} to {_stamp(last)} {QUIET_WHEN_IDLE[short_name]} "
            "(summed up here, not listed one by one)",
        ))
    return lines


def _action_story(job: CoordinatorJob) -> list[LogLine]:
    """Each action's life from its row: created (and what it waits for), submitted, running, ended, or still waiting."""
    rows = (
        job.actions.order_by("-number")
        .values("id", "number", "status", "nominal_time", "created_time", "data_in", "missing_dependencies",
                "next_check_at", "check_count", "timeout_at", "external_id", "submitted_at", "started_at", "ended_at",
                "error_message", "last_modified")[:MAX_SOURCE_ROWS]
    )
    lines = []
    for row in rows:
        action, status = row["id"], row["status"]
        inputs = sum(len(uris) for uris in row["data_in"].values()) if isinstance(row["data_in"], dict) else 0
        lines.append(LogLine(
            row["created_time"], "INFO", "CoordinatorAction", action,
            f"created for nominal time {_stamp(row['nominal_time'])}, {inputs} input instance(s)",
        ))
        if row["submitted_at"] is not None:
            run = f", run {row['external_id']}" if row["external_id"] else ""
            lines.append(LogLine(row["submitted_at"], "INFO", "CoordinatorAction", action, f"inputs complete, SUBMITTED{run}"))
        if row["started_at"] is not None:
            lines.append(LogLine(row["started_at"], "INFO", "CoordinatorAction", action, "RUNNING"))
        error = one_line(row["error_message"])
        if status in ("WAITING", "READY"):
            missing = row["missing_dependencies"] if isinstance(row["missing_dependencies"], list) else []
            detail = f"{status} after {row['check_count']} check(s)"
            if missing:
                first = missing[0][0] if isinstance(missing[0], list) and missing[0] else missing[0]
                detail += f", {len(missing)} input(s) missing, first {first}"
            if row["next_check_at"] is not None and status == "WAITING":
                detail += f", next check {_stamp(row['next_check_at'])}"
            if row["timeout_at"] is not None:
                detail += f", times out {_stamp(row['timeout_at'])}"
            level = "ERROR" if error else "INFO"
            lines.append(LogLine(row["last_modified"], level, "CoordinatorAction", action,
                                 detail + (f": {error}" if error else "")))
        elif row["ended_at"] is not None or status not in ("SUBMITTED", "RUNNING"):
            level = "ERROR" if error or status in ("FAILED", "TIMEDOUT") else "INFO"
            lines.append(LogLine(row["ended_at"] or row["last_modified"], level, "CoordinatorAction", action,
                                 status + (f": {error}" if error else "")))
        elif error:
            lines.append(LogLine(row["last_modified"], "ERROR", "CoordinatorAction", action, f"{status}: {error}"))
    return lines


def _action_lines(job: LoggedJob) -> list[LogLine]:
    """A bundle's coordinators that could not be submitted or ended in error; a coordinator's actions' stories."""
    if isinstance(job, CoordinatorJob):
        return _action_story(job)
    rows = (
        job.actions.exclude(error_message="")
        .order_by("-last_modified")
        .values("id", "status", "error_message", "last_modified")[:MAX_SOURCE_ROWS]
    )
    return [
        LogLine(row["last_modified"], "ERROR", "CoordinatorAction", row["id"], f"{row['status']}: {one_line(row['error_message'])}")
        for row in rows
    ]


def _try_lines(job: LoggedJob) -> list[LogLine]:
    """A coordinator's tries: each run's nodes (naming the action) and its commands that failed or warned."""
    if not isinstance(job, CoordinatorJob):
        return []
    return [LogLine(line.at, line.level, line.source, line.action, line.text)
            for line in trylog.lines_of(trylog.of_coordinator(job.id), by_action=True)]


def job_log(job: LoggedJob, *, options: dict[str, str], errors_only: bool = False) -> list[str]:
    """The job's log lines, oldest first, narrowed by the log filter."""
    lines = sorted(_command_lines(job) + _action_lines(job) + _try_lines(job), key=lambda line: line.at)
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

