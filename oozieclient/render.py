"""Oozie's CLI output: the info blocks, the job tables, the dates, as lines of text.

Labels, columns and separators follow the examples of DG_CommandLineTool.md (a workflow's
`-info` with its actions table, the `jobs` listings of workflows, coordinators and bundles, the
bulk verbs' answer) and OozieCLI for what the examples do not show (coordinator and bundle
`-info`, a coordinator action, a workflow action). A missing value prints `-` (maskIfNull); a
date prints `yyyy-MM-dd HH:mm zzz` in the `-timezone` zone (GMT by default), with seconds
under `-verbose` (maskDate). Columns are padded as Java's `%-Ns` pads: a longer value pushes
the rest of its row right, it is never cut.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from email.utils import parsedate_to_datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

LINE_WIDTH = 132  # OozieCLI.LINE_WIDTH
RULER = "-" * LINE_WIDTH
_GMT_OFFSET = re.compile(r"^(?:GMT|UTC)([+-])(\d{1,2}):?(\d{2})?$")

# Widths of the columns, from the examples' headers and OozieCLI's formatters.
WORKFLOW_JOBS = (("Job Id", 41), ("Workflow Name", 22), ("Status", 11), ("Run", 5), ("User", 10), ("Group", 10),
                 ("Created", 23), ("Started", 24), ("Ended", 0))
COORD_JOBS = (("Job ID", 41), ("App Name", 23), ("Status", 12), ("Freq", 5), ("Unit", 13), ("Started", 24),
              ("Next Materialized", 0))
BUNDLE_JOBS = (("Job ID", 41), ("Bundle Name", 15), ("Status", 10), ("Kickoff", 20), ("Created", 20), ("User", 13),
               ("Group", 0))
WORKFLOW_ACTIONS = (("Action Name", 24), ("Type", 12), ("Status", 11), ("Transition", 12), ("External Id", 23),
                    ("External Status", 17), ("Error Code", 14), ("Start", 24), ("End", 0))
COORD_ACTIONS = (("ID", 43), ("Status", 10), ("Ext ID", 37), ("Err Code", 10), ("Created", 21), ("Nominal Time", 21),
                 ("Last Mod", 0))
BUNDLE_COORDS = (("Job ID", 41), ("Status", 15), ("Freq", 5), ("Unit", 13), ("Started", 24), ("Next Materialized", 0))
ALL_RUNS = (("Job ID", 41), ("Status", 10), ("Started", 24), ("Ended", 0))

WORKFLOW_TERMINAL = frozenset({"SUCCEEDED", "KILLED", "FAILED"})
JOB_TERMINAL = frozenset({"SUCCEEDED", "KILLED", "FAILED", "DONEWITHERROR", "IGNORED"})
ACTION_TERMINAL = frozenset({"SUCCEEDED", "KILLED", "FAILED", "TIMEDOUT", "SKIPPED", "IGNORED", "OK", "ERROR"})


def resolve_zone(name: str | None) -> tzinfo | None:
    """A Java time-zone id as a zone: `GMT`, `America/New_York`, `GMT+05:30`; None is the machine's local zone.

    An unknown id is GMT, as Oozie's CLI falls back (TimeZone.getTimeZone).
    """
    if name is None:
        return None
    if name in ("GMT", "UTC", "Z", ""):
        return UTC if name != "GMT" else timezone(timedelta(0), "GMT")
    offset = _GMT_OFFSET.match(name)
    if offset:
        sign = -1 if offset.group(1) == "-" else 1
        delta = timedelta(hours=int(offset.group(2)), minutes=int(offset.group(3) or 0))
        return timezone(sign * delta, f"{offset.group(1)}{offset.group(2).zfill(2)}:{offset.group(3) or '00'}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return timezone(timedelta(0), "GMT")


def parse_date(value: Any) -> datetime | None:
    """An Oozie JSON date (RFC 822, `Fri, 23 Nov 2026 10:00:00 GMT`) as an aware datetime; None when absent or unreadable."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def mask_date(value: Any, zone: tzinfo | None, verbose: bool = False) -> str:
    """OozieCLI.maskDate: `2026-11-23 10:00 GMT` (seconds when verbose) in `zone`; `-` for no date."""
    moment = parse_date(value)
    if moment is None:
        return "-"
    local = moment.astimezone(zone) if zone is not None else moment.astimezone()
    name = local.tzname() or "GMT"
    return local.strftime("%Y-%m-%d %H:%M:%S " if verbose else "%Y-%m-%d %H:%M ") + name


def mask(value: Any) -> str:
    """OozieCLI.maskIfNull: `-` for a missing or empty value."""
    if value is None or value == "":
        return "-"
    return str(value)


def row(columns: Sequence[tuple[str, int]], values: Sequence[str]) -> str:
    """One line of a table: each value padded to its column's width (Java's `%-Ns`), the last as it is.

    A value as wide as its column or wider is followed by one space (Java would run it into the next).
    """
    cells = [
        (value.ljust(width) if len(value) < width else value + " ") if width else value
        for (_, width), value in zip(columns, values, strict=True)
    ]
    return "".join(cells).rstrip()


def header(columns: Sequence[tuple[str, int]]) -> str:
    """The header line of a table."""
    return row(columns, [name for name, _ in columns])


def labelled(pairs: Iterable[tuple[str, str]], width: int) -> list[str]:
    """`Label<pad> : value` lines, labels padded to `width` as OozieCLI pads them (a longer one is not)."""
    return [f"{label.ljust(width)} : {value}" for label, value in pairs]


# ---- jobs ---------------------------------------------------------------------------------------


def workflow_jobs(jobs: Sequence[Mapping[str, Any]], zone: tzinfo | None, verbose: bool = False) -> list[str]:
    """The `jobs` listing of workflow jobs: header, ruler, one row a job, a closing ruler (the example's shape)."""
    if not jobs:
        return ["No Jobs match your criteria!"]
    lines = [header(WORKFLOW_JOBS), RULER]
    for job in jobs:
        lines.append(row(WORKFLOW_JOBS, [
            mask(job.get("id")), mask(job.get("appName")), mask(job.get("status")), mask(job.get("run")),
            mask(job.get("user")), mask(job.get("group")), mask_date(job.get("createdTime"), zone, verbose),
            mask_date(job.get("startTime"), zone, verbose), mask_date(job.get("endTime"), zone, verbose),
        ]))
    lines.append(RULER)
    return lines


def coordinator_jobs(jobs: Sequence[Mapping[str, Any]], zone: tzinfo | None, verbose: bool = False) -> list[str]:
    """The `jobs -jobtype coordinator` listing: header, ruler, then each job followed by a ruler."""
    if not jobs:
        return ["No Jobs match your criteria!"]
    lines = [header(COORD_JOBS), RULER]
    for job in jobs:
        lines.append(row(COORD_JOBS, [
            mask(job.get("coordJobId")), mask(job.get("coordJobName")), mask(job.get("status")),
            mask(job.get("frequency")), mask(job.get("timeUnit")), mask_date(job.get("startTime"), zone, verbose),
            mask_date(job.get("nextMaterializedTime"), zone, verbose),
        ]))
        lines.append(RULER)
    return lines


def bundle_jobs(jobs: Sequence[Mapping[str, Any]], zone: tzinfo | None, verbose: bool = False) -> list[str]:
    """The `jobs -jobtype bundle` listing: header, ruler, then each job followed by a ruler."""
    if not jobs:
        return ["No Jobs match your criteria!"]
    lines = [header(BUNDLE_JOBS), RULER]
    for job in jobs:
        lines.append(row(BUNDLE_JOBS, [
            mask(job.get("bundleJobId")), mask(job.get("bundleJobName")), mask(job.get("status")),
            mask_date(job.get("kickoffTime"), zone, verbose), mask_date(job.get("createdTime"), zone, verbose),
            mask(job.get("user")), mask(job.get("group")),
        ]))
        lines.append(RULER)
    return lines


def jobs_listing(answer: Mapping[str, Any], zone: tzinfo | None, verbose: bool = False) -> list[str]:
    """Whichever list the answer holds (`workflows`, `coordinatorjobs`, `bundlejobs`)."""
    if "coordinatorjobs" in answer:
        return coordinator_jobs(answer.get("coordinatorjobs") or [], zone, verbose)
    if "bundlejobs" in answer:
        return bundle_jobs(answer.get("bundlejobs") or [], zone, verbose)
    return workflow_jobs(answer.get("workflows") or [], zone, verbose)


def bulk_modified(answer: Mapping[str, Any], zone: tzinfo | None, done: str) -> list[str]:
    """The answer of a bulk verb: `The following jobs have been killed` and the jobs as listed, or that none was."""
    jobs = answer.get("coordinatorjobs") or answer.get("bundlejobs") or answer.get("workflows") or []
    if not jobs:
        return ["bulk modify command did not modify any jobs"]
    return [f"The following jobs have been {done}", *jobs_listing(answer, zone)]


# ---- one job ------------------------------------------------------------------------------------


def workflow_job(job: Mapping[str, Any], zone: tzinfo | None, verbose: bool = False) -> list[str]:
    """`job -info <wf id>`: `Job ID : ...`, a ruler, the labels of the example, then its actions table."""
    lines = [f"Job ID : {mask(job.get('id'))}", RULER]
    lines += labelled([
        ("Workflow Name", mask(job.get("appName"))),
        ("App Path", mask(job.get("appPath"))),
        ("Status", mask(job.get("status"))),
        ("Run", mask(job.get("run"))),
        ("User", mask(job.get("user"))),
        ("Group", mask(job.get("group"))),
        ("Created", mask_date(job.get("createdTime"), zone, verbose)),
        ("Started", mask_date(job.get("startTime"), zone, verbose)),
        ("Last Modified", mask_date(job.get("lastModTime"), zone, verbose)),
        ("Ended", mask_date(job.get("endTime"), zone, verbose)),
    ], 13)
    lines.append(f"CoordAction ID: {mask(job.get('parentId'))}")  # OozieCLI.printJob's spelling
    actions = job.get("actions") or []
    if not actions:
        return [*lines, RULER]
    lines += ["Actions", RULER, header(WORKFLOW_ACTIONS), RULER]
    for action in actions:
        lines.append(row(WORKFLOW_ACTIONS, [
            mask(action.get("name")), mask(action.get("type")), mask(action.get("status")),
            mask(action.get("transition")), mask(action.get("externalId")), mask(action.get("externalStatus")),
            mask(action.get("errorCode")), mask_date(action.get("startTime"), zone, verbose),
            mask_date(action.get("endTime"), zone, verbose),
        ]))
        lines.append(RULER)
    return lines


def workflow_action(action: Mapping[str, Any], zone: tzinfo | None, verbose: bool = False) -> list[str]:
    """`job -info <wf id>@<node>`: OozieCLI.printWorkflowAction (the example shown with -verbose)."""
    pairs = [
        ("Console URL", mask(action.get("consoleUrl"))),
        ("Error Code", mask(action.get("errorCode"))),
        ("Error Message", mask(action.get("errorMessage"))),
        ("External ID", mask(action.get("externalId"))),
        ("External Status", mask(action.get("externalStatus"))),
        ("Name", mask(action.get("name"))),
        ("Retries", mask(action.get("retries"))),
        ("Tracker URI", mask(action.get("trackerUri"))),
        ("Type", mask(action.get("type"))),
        ("Started", mask_date(action.get("startTime"), zone, verbose)),
        ("Status", mask(action.get("status"))),
        ("Ended", mask_date(action.get("endTime"), zone, verbose)),
    ]
    if verbose:
        pairs += [("External Stats", str(action.get("stats"))), ("External ChildIDs", str(action.get("externalChildIDs")))]
    return [f"ID : {mask(action.get('id'))}", RULER, *labelled(pairs, 17), RULER]


def coordinator_job(job: Mapping[str, Any], zone: tzinfo | None, verbose: bool = False) -> list[str]:
    """`job -info <coord id>`: OozieCLI.printCoordJob, then its actions, each followed by a ruler."""
    lines = [f"Job ID : {mask(job.get('coordJobId'))}", RULER]
    lines += labelled([
        ("Job Name", mask(job.get("coordJobName"))),
        ("App Path", mask(job.get("coordJobPath"))),
        ("Status", mask(job.get("status"))),
        ("Start Time", mask_date(job.get("startTime"), zone)),
        ("End Time", mask_date(job.get("endTime"), zone)),
        ("Pause Time", mask_date(job.get("pauseTime"), zone)),
        ("Concurrency", mask(job.get("concurrency"))),
    ], 11)
    lines += [RULER, header(COORD_ACTIONS)]
    for action in job.get("actions") or []:
        lines.append(row(COORD_ACTIONS, [
            mask(action.get("id")), mask(action.get("status")), mask(action.get("externalId")),
            mask(action.get("errorCode")), mask_date(action.get("createdTime"), zone, verbose),
            mask_date(action.get("nominalTime"), zone, verbose), mask_date(action.get("lastModifiedTime"), zone, verbose),
        ]))
        lines.append(RULER)
    return lines


def coordinator_action(action: Mapping[str, Any], zone: tzinfo | None) -> list[str]:
    """`job -info <coord id>@<n>`: OozieCLI.printCoordAction."""
    missing = str(action.get("missingDependencies") or "").split("#")[0].split("!!")[0]
    return [f"ID : {mask(action.get('id'))}", RULER, *labelled([
        ("Action Number", mask(action.get("actionNumber"))),
        ("Console URL", mask(action.get("consoleUrl"))),
        ("Error Code", mask(action.get("errorCode"))),
        ("Error Message", mask(action.get("errorMessage"))),
        ("External ID", mask(action.get("externalId"))),
        ("External Status", mask(action.get("externalStatus"))),
        ("Job ID", mask(action.get("coordJobId"))),
        ("Tracker URI", mask(action.get("trackerUri"))),
        ("Created", mask_date(action.get("createdTime"), zone)),
        ("Nominal Time", mask_date(action.get("nominalTime"), zone)),
        ("Status", mask(action.get("status"))),
        ("Last Modified", mask_date(action.get("lastModifiedTime"), zone)),
        ("First Missing Dependency", mask(missing)),
    ], 20), RULER]


def bundle_job(job: Mapping[str, Any], zone: tzinfo | None, verbose: bool = False) -> list[str]:
    """`job -info <bundle id>`: OozieCLI.printBundleJob, its coordinators each followed by a ruler."""
    lines = [f"Job ID : {mask(job.get('bundleJobId'))}", RULER]
    lines += labelled([
        ("Job Name", mask(job.get("bundleJobName"))),
        ("App Path", mask(job.get("bundleJobPath"))),
        ("Status", mask(job.get("status"))),
    ], 8)
    lines.append(f"Kickoff time   : {mask_date(job.get('kickoffTime'), zone, verbose)}")  # OozieCLI.printBundleJob's spacing
    lines += [RULER, header(BUNDLE_COORDS), RULER]
    for coordinator in job.get("bundleCoordJobs") or []:
        lines.append(row(BUNDLE_COORDS, [
            mask(coordinator.get("coordJobId")), mask(coordinator.get("status")), mask(coordinator.get("frequency")),
            mask(coordinator.get("timeUnit")), mask_date(coordinator.get("startTime"), zone, verbose),
            mask_date(coordinator.get("nextMaterializedTime"), zone, verbose),
        ]))
        lines.append(RULER)
    return lines


def all_runs(runs: Sequence[Mapping[str, Any]], zone: tzinfo | None) -> list[str]:
    """`job -info <coord id>@<n> -allruns`: every workflow run of the action, each followed by a ruler."""
    lines = [header(ALL_RUNS), RULER]
    for run in runs:
        lines.append(row(ALL_RUNS, [mask(run.get("id")), mask(run.get("status")),
                                    mask_date(run.get("startTime"), zone), mask_date(run.get("endTime"), zone)]))
        lines.append(RULER)
    return lines


def coordinator_actions(actions: Sequence[Mapping[str, Any]], with_status: bool = False) -> list[str]:
    """The actions a rerun, a scoped kill or an ignore answered (`Action ID<TAB>Nominal Time[<TAB>Status]`)."""
    if not actions:
        return [] if with_status else ["No Actions match your criteria!"]
    lines = ["Action ID\tNominal Time" + ("\tStatus" if with_status else ""), RULER]
    for action in actions:
        cells = [mask(action.get("id")), mask_date(action.get("nominalTime"), timezone(timedelta(0), "GMT"))]
        if with_status:
            cells.append(mask(action.get("status")))
        lines.append("\t".join(cells))
    return lines


def timezones(answer: Mapping[str, Any]) -> list[str]:
    """`info -timezones`: the example's preamble, then `SHORT_NAME (ID)` per zone."""
    lines = [
        'The format is "SHORT_NAME (ID)"',
        "Give the ID to the -timezone argument",
        "GMT offsets can also be used (e.g. GMT-07:00, GMT-0700, GMT+05:30, GMT+0530)",
        "Available Time Zones :",
    ]
    for zone in answer.get("available-timezones") or []:
        lines.append("      " + str(zone.get("timezoneDisplayName") or zone.get("timezoneId")))
    return lines


def queue_dump(answer: Mapping[str, Any]) -> list[str]:
    """`admin -queuedump` as OozieClient.getQueueDump lists it: the queue, a line of stars, the uniqueness map."""
    queue = [str(e["callableDump"]) for e in answer.get("queueDump") or [] if isinstance(e, dict) and e.get("callableDump")]
    unique = [str(e["uniqueEntryDump"]) for e in answer.get("uniqueMapDump") or []
              if isinstance(e, dict) and e.get("uniqueEntryDump")]
    return [
        "[Server Queue Dump]:", *(queue or ["Queue dump is null!"]),
        "******************************************",
        "[Server Uniqueness Map Dump]:", *(unique or ["Uniqueness dump is null!"]),
    ]


def key_values(values: Mapping[str, Any]) -> list[str]:
    """`key : value` lines sorted by key (admin -servers, -configuration)."""
    return [f"{key} : {values[key]}" for key in sorted(values)]


def dryrun(text: str) -> list[str]:
    """A dry run's answer as OozieCLI prints it: `OK` for a workflow; a coordinator's split per action instance."""
    if text == "OK" or "action for new instance" not in text:
        return [text]
    parts = text.split("action for new instance")
    lines = ["***coordJob after parsing: ***", parts[0], f"***total coord actions is {len(parts) - 1} ***"]
    for number, part in enumerate(parts[1:], start=1):
        lines += [RULER, f"coordAction instance: {number}:", part]
    return lines
