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

MAX_LEN = 1000  # Oozie's own default cap for actions (oozie.coord.actions.default.length)
MAX_FILTER = 4096
_RELATIVE = re.compile(r"^-(\d{1,6})([dhm])$")
_UNITS = {"d": "days", "h": "hours", "m": "minutes"}
JOB_FILTER_NAMES = ("user", "name", "status", "id", "text", "startcreatedtime", "endcreatedtime", "sortby", "group")
SORT_FIELDS = {"createdtime": "-created_at", "lastmodifiedtime": "-last_modified"}


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


def filter_jobs(
    queryset: QuerySet[Any], text: str, now: datetime, statuses: Collection[str] = tuple(JobStatus.values),
) -> QuerySet[Any]:
    """The jobs filter of GET /jobs: AND between names, OR between values of one name (`statuses`: those of the job type)."""
    by_name: dict[str, list[str]] = {}
    for name, operator, value in _pairs(text, "E0420"):
        if name not in JOB_FILTER_NAMES or operator != "=":
            raise OozieError(400, "E0420", text, f"invalid name [{name}{operator}]; use {', '.join(JOB_FILTER_NAMES)}")
        by_name.setdefault(name, []).append(value)
    for name, values in by_name.items():
        if name == "status":
            wanted = {v.upper() for v in values}
            wrong = wanted - set(statuses)
            if wrong:
                raise OozieError(400, "E0420", text, f"invalid status value [{', '.join(sorted(wrong))}]")
            queryset = queryset.filter(status__in=wanted)
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


def filter_actions(queryset: QuerySet[Any], text: str) -> QuerySet[Any]:
    """The actions filter of GET /job/ID?show=info: status=, status!=, nominaltime with >, >=, <, <=."""
    wanted: set[str] = set()
    unwanted: set[str] = set()
    for name, operator, value in _pairs(text, "E0421"):
        if name == "status" and operator in ("=", "!="):
            status = value.upper()
            if status not in ActionStatus.values:
                raise OozieError(400, "E0421", text, f"invalid status value [{value}]")
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
