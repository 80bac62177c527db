"""Oozie's `filter` strings (`name=value;name=value`) and paging parameters, parsed into querysets."""

from __future__ import annotations

import re
from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q, QuerySet

from coordinators.choices import ActionStatus, JobStatus
from datasets.timeline import parse_datetime
from oozieapi.errors import OozieError, bad_parameter

MAX_LEN = 1000  # bulk verbs and dry runs: Oozie's default length for actions (oozie.coord.actions.default.length)
MAX_PAGE = 5000  # job lists and a job's actions: Oozie has no cap; larger asks are served 5,000 (ADR 0013)
MAX_FILTER = 4096
_RELATIVE = re.compile(r"^-(\d{1,6})([dhm])$")
_UNITS = {"d": "days", "h": "hours", "m": "minutes"}
JOB_FILTER_NAMES = ("user", "name", "status", "id", "text", "startcreatedtime", "endcreatedtime", "sortby", "group")
FREQUENCY_FILTER_NAMES = ("frequency", "unit")  # coordinator lists only (CoordinatorEngine.FILTER_NAMES)
SORT_FIELDS = {"createdtime": "-created_at", "lastmodifiedtime": "-last_modified"}

# Oozie's client enums (org.apache.oozie.client.*.Status): every value a client may send in a filter.
# A value in these (or a status our models hold) is accepted and matches what has it, possibly
# nothing; anything else is no status at all and is refused with Oozie's code.
OOZIE_JOB_STATUSES = (  # Job.Status: coordinator and bundle jobs (JobsFilterUtils, CoordinatorEngine)
    "PREMATER", "PREP", "RUNNING", "SUSPENDED", "SUCCEEDED", "KILLED", "FAILED", "PAUSED", "PREPPAUSED",
    "PREPSUSPENDED", "RUNNINGWITHERROR", "SUSPENDEDWITHERROR", "PAUSEDWITHERROR", "DONEWITHERROR", "IGNORED",
)
OOZIE_WORKFLOW_STATUSES = ("PREP", "RUNNING", "SUCCEEDED", "KILLED", "FAILED", "SUSPENDED")  # WorkflowJob.Status
OOZIE_COORD_ACTION_STATUSES = (  # CoordinatorAction.Status, in Oozie's order (its E0421 message lists them)
    "WAITING", "READY", "SUBMITTED", "RUNNING", "SUSPENDED", "TIMEDOUT", "SUCCEEDED", "KILLED", "FAILED",
    "IGNORED", "SKIPPED",
)
OOZIE_WORKFLOW_ACTION_STATUSES = (  # WorkflowAction.Status
    "PREP", "RUNNING", "OK", "ERROR", "USER_RETRY", "START_RETRY", "START_MANUAL", "DONE", "END_RETRY",
    "END_MANUAL", "KILLED", "FAILED",
)
# The `unit` of Oozie's frequency filter, and the (frequency, unit) pairs it stores for it.
_FILTER_UNITS = {"months": "MONTH", "days": "DAY", "hours": "MINUTE", "minutes": "MINUTE"}


def int_parameter(params: Any, name: str, default: int, *, minimum: int, maximum: int) -> int:
    """A whole-number query parameter (E0303 when negative or not a number), clamped into [minimum, maximum].

    Clamping keeps Oozie's tolerance of `offset=0` (read as 1) and of a `len` above the cap.
    """
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    if not re.fullmatch(r"[0-9]{1,10}", raw.strip()):
        raise bad_parameter(name, f"{raw[:40]} (expected a whole number of 0 or more, at most 10 digits)")
    return max(minimum, min(maximum, int(raw)))


def bool_parameter(params: Any, name: str) -> bool:
    """`true`/`false` (case-insensitive; missing is false), E0303 otherwise."""
    raw = (params.get(name) or "false").strip().lower()
    if raw not in ("true", "false"):
        raise bad_parameter(name, params.get(name))
    return raw == "true"


def _pairs(text: str, code: str) -> list[tuple[str, str, str]]:
    """`name=value;name!=value;...` -> (lower-cased name, operator, value)."""
    if len(text) > MAX_FILTER or "\x00" in text:
        raise OozieError(400, code, text[:80], "filter too long or not text")
    pairs = []
    for token in text.split(";"):
        token = token.strip()
        if not token:
            continue
        match = re.fullmatch(r"([A-Za-z.]+)\s*(!=|>=|<=|=|>|<)\s*(.*)", token)
        if match is None:
            raise OozieError(400, code, text, f"elements must be semicolon-separated name=value pairs, got {token!r}")
        pairs.append((match[1].lower(), match[2], match[3].strip()))
    return pairs


def _created_time(value: str, now: datetime, text: str) -> datetime:
    """`yyyy-MM-dd'T'HH:mm'Z'` or an offset from now: -2d, -3h, -5m."""
    relative = _RELATIVE.match(value)
    if relative:
        try:
            return now - timedelta(**{_UNITS[relative[2]]: int(relative[1])})
        except OverflowError:  # -999999d reaches before year 1
            raise OozieError(400, "E0420", text, f"{value!r} reaches before year 1") from None
    try:
        return parse_datetime(value)
    except ValueError:
        raise OozieError(400, "E0420", text, f"{value!r} is not yyyy-MM-ddTHH:mmZ or -Nd/-Nh/-Nm") from None


def accepted_statuses(*groups: Collection[str]) -> frozenset[str]:
    """The status values a filter accepts: Oozie's enum for the entity plus whatever our models hold."""
    return frozenset(value.upper() for group in groups for value in group)


def _has_frequency(queryset: QuerySet[Any]) -> bool:
    return any(field.name == "frequency" for field in queryset.model._meta.get_fields())


def filter_jobs(
    queryset: QuerySet[Any], text: str, now: datetime, statuses: Collection[str] = tuple(JobStatus.values),
) -> QuerySet[Any]:
    """The jobs filter of GET /jobs: AND between names, OR between values of one name.

    Status values are those of Oozie's Job.Status plus `statuses` (what the job type holds), in any
    case; one no job can have (PREMATER here) matches nothing. Coordinator lists also take
    Oozie's `frequency=N;unit=hours` pair.
    """
    names = JOB_FILTER_NAMES + (FREQUENCY_FILTER_NAMES if _has_frequency(queryset) else ())
    accepted = accepted_statuses(OOZIE_JOB_STATUSES, statuses)
    by_name: dict[str, list[str]] = {}
    for name, operator, value in _pairs(text, "E0420"):
        if name not in names or operator != "=":
            raise OozieError(400, "E0420", text, f"invalid name [{name}{operator}]; use {', '.join(names)}")
        if name == "status" and value.upper() not in accepted:
            raise OozieError(400, "E0420", text, f"invalid status [{value}]")
        by_name.setdefault(name, []).append(value)
    if "frequency" in by_name or "unit" in by_name:
        queryset = queryset.filter(_frequency_match(by_name, text))
    for name, values in by_name.items():
        if name == "status":
            queryset = queryset.filter(status__in={v.upper() for v in values})
        elif name == "user":
            queryset = queryset.filter(owner__username__in=values)
        elif name == "name":
            queryset = queryset.filter(app_name__in=values)
        elif name == "id":
            queryset = queryset.filter(pk__in=values)
        elif name == "text":
            match = Q()
            for value in values:
                match |= Q(app_name__icontains=value) | Q(owner__username__icontains=value) | Q(pk=value)
            queryset = queryset.filter(match)
        elif name == "startcreatedtime":
            queryset = queryset.filter(created_at__gte=_created_time(values[-1], now, text))
        elif name == "endcreatedtime":
            queryset = queryset.filter(created_at__lte=_created_time(values[-1], now, text))
        elif name == "group":
            pass  # discontinued in Oozie 3.2 (OOZIE-228): accepted and ignored, as Oozie does
    sort = by_name.get("sortby", ["createdTime"])[-1].lower()
    if sort not in SORT_FIELDS:
        raise OozieError(400, "E0420", text, f"sortby must be createdTime or lastModifiedTime, got {sort!r}")
    return queryset.order_by(SORT_FIELDS[sort], "-id")


def _frequency_match(by_name: dict[str, list[str]], text: str) -> Q:
    """Oozie's `frequency=N[;unit=months|days|hours|minutes]` as the stored frequencies it means.

    Oozie stores hours as minutes (`coord:hours(2)` is 120 MINUTE) and end-of units as their
    unit; this service stores the unit as written, so one Oozie pair may be several of ours.
    """
    if "frequency" not in by_name:
        raise OozieError(
            400, "E0420", text, "time unit should be added only when frequency is specified. "
            "Either specify frequency also or else remove the time unit",
        )
    raw, unit_name = by_name["frequency"][-1], by_name.get("unit", ["minutes"])[-1].lower()
    try:
        amount = int(float(raw))
    except (ValueError, OverflowError):
        raise OozieError(400, "E0420", text, f"invalid value [{raw}] for frequency. A numerical value is expected") from None
    if unit_name not in _FILTER_UNITS:
        raise OozieError(
            400, "E0420", text, f"invalid value [{unit_name}] for time unit. Valid value is one of months, days, hours or minutes",
        )
    if unit_name == "hours":
        amount *= 60
    unit = _FILTER_UNITS[unit_name]
    stored = {(amount, unit)}
    if unit == "MINUTE" and amount % 60 == 0:
        stored.add((amount // 60, "HOUR"))
    if unit == "DAY":
        stored.add((amount, "END_OF_DAY"))
    if unit == "MONTH":
        stored.add((amount, "END_OF_MONTH"))
        if amount % 12 == 0:
            stored.add((amount // 12, "YEAR"))
    match = Q(pk__in=[])
    for value, stored_unit in stored:
        match |= Q(frequency=str(value), time_unit=stored_unit)
    return match


def filter_actions(
    queryset: QuerySet[Any], text: str, statuses: Collection[str] = OOZIE_COORD_ACTION_STATUSES,
) -> QuerySet[Any]:
    """The actions filter of GET /job/ID?show=info: status=, status!=, nominaltime with >, >=, <, <=.

    Status values are `statuses` (Oozie's CoordinatorAction.Status by default) plus those our
    actions hold, in any case; SUSPENDED, which no action here has, matches nothing.
    """
    accepted = accepted_statuses(statuses, ActionStatus.values)
    wanted: set[str] = set()
    unwanted: set[str] = set()
    for name, operator, value in _pairs(text, "E0421"):
        if name == "status" and operator in ("=", "!="):
            status = value.upper()
            if status not in accepted:
                raise OozieError(
                    400, "E0421", text,
                    f"invalid status value [{value}]. Valid status values are: [{', '.join(statuses)}]",
                )
            (wanted if operator == "=" else unwanted).add(status)
        elif name == "nominaltime" and operator in (">", ">=", "<", "<="):
            try:
                moment = parse_datetime(value)
            except ValueError:
                raise OozieError(400, "E0421", text, f"{value!r} is not yyyy-MM-ddTHH:mmZ") from None
            lookup = {">": "gt", ">=": "gte", "<": "lt", "<=": "lte"}[operator]
            queryset = queryset.filter(**{f"nominal_time__{lookup}": moment})
        else:
            raise OozieError(400, "E0421", text, f"invalid name [{name}{operator}]; use status=, status!=, nominaltime>=, nominaltime<")
    if wanted:
        queryset = queryset.filter(status__in=wanted)
    if unwanted:
        queryset = queryset.exclude(status__in=unwanted)
    return queryset
