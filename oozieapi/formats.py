"""Coordinator jobs and actions, and bundle jobs, in Oozie's JSON (JsonTags names, RFC 822 times, statuses as Oozie's)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, tzinfo
from functools import lru_cache
from typing import Any

from django.http import HttpResponse

from bundles.models import BundleJob
from coordinators.models import CoordinatorAction, CoordinatorJob
from datasets.timeline.datetimes import available_timezone_ids, resolve_timezone
from oozie.definitions import DefinitionError, serialize_hadoop_configuration
from oozie.properties import COORD_APP_PATH
from oozieapi.errors import bad_parameter

# What Oozie's externalStatus says about the launched work, from the action's status.
EXTERNAL_STATUS = {"SUBMITTED": "PREP", "RUNNING": "RUNNING", "SUCCEEDED": "SUCCEEDED", "FAILED": "FAILED", "KILLED": "KILLED"}


def json_response(data: Any, status: int = 200) -> HttpResponse:
    """JSON as Oozie sends it (`application/json;charset=UTF-8`)."""
    return HttpResponse(json.dumps(data), status=status, content_type="application/json;charset=UTF-8")


def display_timezone(name: str | None) -> tzinfo:
    """The `timezone` parameter (GMT when missing); E0303 for an unknown zone."""
    if name is None or name in ("GMT", "UTC", "Z", ""):
        return UTC
    if name not in _zone_names():
        raise bad_parameter("timezone", name)
    return resolve_timezone(name)


def rfc822(value: datetime | None, zone: tzinfo = UTC) -> str | None:
    """`Fri, 23 Nov 2026 10:00:00 GMT` (Oozie's JsonUtils.formatDateRfc822); None stays None."""
    if value is None:
        return None
    local = value.astimezone(zone)
    name = "GMT" if zone is UTC else (local.tzname() or "GMT")
    return local.strftime("%a, %d %b %Y %H:%M:%S ") + name


def configuration_xml(values: Mapping[str, Any]) -> str | None:
    """Properties as the Hadoop XML `<configuration>` string Oozie puts in `conf`/`runConf`."""
    try:
        return serialize_hadoop_configuration({str(k): _text(v) for k, v in values.items()}).decode("utf-8")
    except DefinitionError:
        return None  # a name XML cannot carry; the native API still shows the values


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return "" if value is None else str(value)


# How Oozie stores a frequency (CoordELFunctions.ph1_coord_*): hours become minutes, end-of units
# their calendar unit; this service keeps the unit as written (ADR 0013).
_OOZIE_UNITS = {"HOUR": ("MINUTE", 60), "END_OF_DAY": ("DAY", 1), "END_OF_WEEK": ("WEEK", 1),
                "END_OF_MONTH": ("MONTH", 1), "YEAR": ("MONTH", 12)}
INSTANCE_SEPARATOR = "#"  # CoordELFunctions.INSTANCE_SEPARATOR
RESOLVED_UNRESOLVED_SEPARATOR = "!!"  # CoordCommandUtils: what follows waits for coord:latest/future


def oozie_frequency(frequency: str, time_unit: str) -> tuple[str, str]:
    """(frequency, timeUnit) as Oozie reports them: `coord:hours(1)` is ("60", "MINUTE"), `coord:endOfDays(1)` ("1", "DAY")."""
    unit, factor = _OOZIE_UNITS.get(time_unit, (time_unit, 1))
    if factor != 1 and frequency.isdigit():
        return str(int(frequency) * factor), unit
    return frequency, unit


def missing_dependencies(pairs: Iterable[Any]) -> str | None:
    """Oozie's missingDependencies: the URIs still checked, with their done flag, `#`-separated.

    Stored as [uri, done-flag] pairs; Oozie checks `uri/done-flag` (FSURIHandler.getURIWithDoneFlag,
    none for an empty flag) and lists unresolved coord:latest/future instances after `!!`.
    """
    resolved: list[str] = []
    unresolved: list[str] = []
    for pair in pairs:
        parts = list(pair) if isinstance(pair, list | tuple) else [pair]
        uri, flag = str(parts[0]) if parts else "", str(parts[1] or "") if len(parts) > 1 else ""
        if uri.startswith("${"):
            unresolved.append(uri)
        else:
            resolved.append(uri + ("" if uri.endswith("/") else "/") + flag if flag else uri)
    text = INSTANCE_SEPARATOR.join(resolved)
    if unresolved:
        text += RESOLVED_UNRESOLVED_SEPARATOR + INSTANCE_SEPARATOR.join(unresolved)
    return text or None


def job_json(
    job: CoordinatorJob, actions: Iterable[CoordinatorAction] = (), *, total: int = 0,
    zone: tzinfo = UTC, with_conf: bool = True,
) -> dict[str, Any]:
    """A coordinator job as CoordinatorJobBean.toJSONObject writes it (plus createdTime, as the docs show)."""
    acl = job.acl or None
    frequency, time_unit = oozie_frequency(job.frequency, job.time_unit)
    return {
        "coordJobPath": job.configuration.get(COORD_APP_PATH) or job.app_path or None,
        "coordJobName": job.app_name,
        "coordJobId": job.id,
        "coordExternalId": None,
        "bundleId": job.bundle_id or None,
        "conf": configuration_xml(job.configuration) if with_conf else None,
        "status": job.status,
        "executionPolicy": job.execution,
        "frequency": frequency,
        "timeUnit": time_unit,
        "timeZone": job.timezone,
        "concurrency": job.concurrency,
        "timeOut": job.timeout,
        "lastAction": rfc822(job.next_materialize_at, zone),
        "nextMaterializedTime": rfc822(job.next_materialize_at, zone),
        "startTime": rfc822(job.start_time, zone),
        "endTime": rfc822(job.end_time, zone),
        "pauseTime": rfc822(job.pause_time, zone),
        "createdTime": rfc822(job.created_at, zone),
        "user": job.owner.get_username(),
        "group": acl,
        "acl": acl,
        "consoleUrl": None,
        "mat_throttling": job.throttle,
        "actions": [action_json(action, zone) for action in actions],
        "toString": f"Coordinator application id[{job.id}] status[{job.status}]",
        "total": total,
    }


def bundle_json(
    bundle: BundleJob, coordinators: Iterable[CoordinatorJob] = (), *, zone: tzinfo = UTC, with_conf: bool = True,
) -> dict[str, Any]:
    """A bundle job as BundleJobBean.toJSONObject writes it, its coordinators in `bundleCoordJobs`.

    Bundles have no frequency here: `timeUnit` is NONE and `timeOut` 0, as Oozie stores them.
    `startTime` is when it started (RUNNING), `endTime` the end time `-change` gave it.
    """
    acl = bundle.acl or None
    return {
        "bundleJobPath": bundle.app_path or None,
        "bundleJobName": bundle.app_name,
        "bundleJobId": bundle.id,
        "bundleExternalId": bundle.external_id or None,
        "conf": configuration_xml(bundle.configuration) if with_conf else None,
        "status": bundle.status,
        "timeUnit": "NONE",
        "timeOut": 0,
        "kickoffTime": rfc822(bundle.kick_off_time, zone),
        "startTime": rfc822(bundle.started_at, zone),
        "endTime": rfc822(bundle.end_time, zone),
        "pauseTime": rfc822(bundle.pause_time, zone),
        "createdTime": rfc822(bundle.created_at, zone),
        "user": bundle.owner.get_username(),
        "group": acl,
        "acl": acl,
        "consoleUrl": None,
        "bundleCoordJobs": [job_json(job, zone=zone, with_conf=with_conf) for job in coordinators],
        "toString": f"Bundle id[{bundle.id}] status[{bundle.status}]",
    }


def action_json(action: CoordinatorAction, zone: tzinfo = UTC) -> dict[str, Any]:
    """A coordinator action as JsonCoordinatorAction.toJSONObject writes it."""
    conf = configuration_xml(action.run_conf) if action.run_conf else None
    return {
        "id": action.id,
        "coordJobId": action.job_id,
        "type": None,
        "actionNumber": action.number,
        "createdConf": conf,
        "createdTime": rfc822(action.created_time, zone),
        "nominalTime": rfc822(action.nominal_time, zone),
        "externalId": action.external_id or None,
        "status": action.status,
        "runConf": conf,
        "lastModifiedTime": rfc822(action.last_modified, zone),
        "missingDependencies": missing_dependencies(action.missing_dependencies),
        "pushMissingDependencies": None,
        "externalStatus": EXTERNAL_STATUS.get(action.status) if action.external_id else None,
        "trackerUri": None,
        "consoleUrl": None,
        "errorCode": None,
        "errorMessage": action.error_message or None,
    }


@lru_cache(maxsize=1)
def _zone_names() -> frozenset[str]:
    """Every id `timezone` takes and /admin/available-timezones lists: zoneinfo names and Java's three-letter ids."""
    return frozenset(available_timezone_ids())


@lru_cache(maxsize=1)
def available_timezones_json() -> dict[str, list[dict[str, str]]]:
    """Every zone with its standard abbreviation, as /admin/available-timezones lists them."""
    winter, summer = datetime(2026, 1, 15, tzinfo=UTC), datetime(2026, 7, 15, tzinfo=UTC)
    zones = []
    for name in available_timezone_ids():  # zoneinfo names and Java's three-letter ids (PST, EST ...), as Oozie lists them
        zone = resolve_timezone(name)
        local = next((m.astimezone(zone) for m in (winter, summer) if not m.astimezone(zone).dst()), winter.astimezone(zone))
        zones.append({"timezoneDisplayName": f"{local.tzname()} ({name})", "timezoneId": name})
    return {"available-timezones": zones}
