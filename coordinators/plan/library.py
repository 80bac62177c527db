"""The coord: EL function library, by phase (DESIGN section 6).

Functions read their context from ELContext.extra:
  "user", "conf"          submitting user, job properties (every phase)
  "nominal", "actual"     the action's nominal and actual (creation) time (creation, start)
  "job_tz", "processing_tz"
  "dataset"               the ResolvedDataset an <instance> expression is evaluated for
  "role"                  "instance", "start" or "end": how coord:offset lines up with instances
  "data_in", "data_out"   resolved URIs per event name (for coord:dataIn / coord:dataOut)
  "deferred_in"           data-in names still waiting for storage: coord:dataIn echoes itself for them
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from coordinators.plan.ranges import role_name
from datasets.timeline import (
    DatasetTimeline,
    Frequency,
    TimeUnit,
    date_offset,
    date_tz_offset,
    days_in_month,
    epoch_time,
    format_datetime,
    format_time,
    frequency_minutes,
    hours_in_day,
    parse_datetime,
    resolve_timezone,
    start_of_period,
    tz_offset,
)
from oozie.el import (
    ELContext,
    ELEvaluationError,
    ELFunction,
    FunctionRegistry,
    Phase,
    to_integer,
)

SUBMISSION_ONWARDS = frozenset({Phase.SUBMISSION, Phase.CREATION, Phase.START})
CREATION_ONWARDS = frozenset({Phase.CREATION, Phase.START})
START_ONLY = frozenset({Phase.START})
STORAGE_FUNCTIONS = frozenset({"coord:latest", "coord:future"})
FREQUENCY_FUNCTIONS = frozenset(
    f"coord:{kind}" for kind in ("minutes", "hours", "days", "months", "endOfDays", "endOfWeeks", "endOfMonths")
)


@dataclass(frozen=True, slots=True)
class InstanceRef:
    """What coord:current / coord:offset return: a dataset instance index on its time line.

    The time is computed only when asked for, so a range's size is checked (against the
    instance cap) before any far-away instance is.
    """

    index: int
    timeline: DatasetTimeline

    @property
    def time(self) -> datetime | None:
        """The instance's nominal time; None before the initial instance (dropped, spec 6.6.10)."""
        return self.timeline.instance(self.index) if self.index >= 0 else None

    def __str__(self) -> str:
        time = self.time
        return format_datetime(time) if time is not None else ""


@dataclass(frozen=True, slots=True)
class StorageQuery:
    """What coord:latest(n) and coord:future(n, limit) are at action start: a search over available instances.

    The start resolver (coordinators.plan.start) runs it against storage; kind is "latest" or "future".
    """

    kind: str
    n: int
    limit: int = 0

    def __str__(self) -> str:
        return f"coord:latest({self.n})" if self.kind == "latest" else f"coord:future({self.n}, {self.limit})"


class FrequencyValue(Frequency):
    """A Frequency that EL arithmetic can scale: ${coord:days(1) * 7}."""

    __slots__ = ()

    @staticmethod
    def el_binary(op: str, left: Any, right: Any) -> Any:
        """Only multiplication by a positive integer is meaningful."""
        freq, factor = (left, right) if isinstance(left, Frequency) else (right, left)
        if op != "*" or isinstance(factor, bool) or not isinstance(factor, int) or not isinstance(freq, Frequency):
            return NotImplemented
        return FrequencyValue(freq.amount * factor, freq.unit, freq.cron)


END_OF_UNITS = {"endOfDays": TimeUnit.END_OF_DAY, "endOfWeeks": TimeUnit.END_OF_WEEK, "endOfMonths": TimeUnit.END_OF_MONTH}


def _frequency(kind: str) -> ELFunction:
    def build(ctx: ELContext, n: Any) -> Any:
        n = to_integer(n, what=f"coord:{kind}()")  # a job property "3" is 3 (JSP EL coercion)
        if kind in END_OF_UNITS and "dataset" in ctx.extra:
            # In a start-instance (reference 6.6.9-6.6.11): the start of the day/week/month
            # n+1 periods from the nominal time's, which must be a dataset instance (Oozie's
            # StartInstanceFinder, then E1010 "not in phase"; issue 16).
            dataset = ctx.extra["dataset"]
            moment = start_of_period(_extra(ctx, "nominal", f"coord:{kind}"), n, END_OF_UNITS[kind], dataset.tz)
            index = dataset.timeline.exact_index(moment, role_name(ctx.extra.get("role")))
            return InstanceRef(index, dataset.timeline)
        names = {"endOfDays": "end_of_days", "endOfWeeks": "end_of_weeks", "endOfMonths": "end_of_months"}
        base = getattr(Frequency, names.get(kind, kind))(n)
        if ctx.phase is not Phase.SUBMISSION and "nominal" in ctx.extra:
            # In an action (configuration, instance arithmetic) Oozie's functions are numbers:
            # the minutes of the period starting at the nominal time (spec 4.4 table).
            return frequency_minutes(base, ctx.extra["nominal"], _in_dataset_tz(ctx, f"coord:{kind}"))
        return FrequencyValue(base.amount, base.unit)

    return ELFunction(f"coord:{kind}", build, SUBMISSION_ONWARDS, 1, 1)


def _absolute(ctx: ELContext, timestamp: Any) -> InstanceRef:
    """coord:absolute(ts) in a start-instance: the dataset instance at ts (Oozie refuses one out of phase)."""
    dataset = _extra(ctx, "dataset", "coord:absolute")
    index = dataset.timeline.exact_index(parse_datetime(str(timestamp)), role_name(ctx.extra.get("role")))
    return InstanceRef(index, dataset.timeline)


def _extra(ctx: ELContext, name: str, function: str) -> Any:
    if name not in ctx.extra:
        raise ELEvaluationError(f"{function}() is not available here (it needs the {name.replace('_', ' ')})")
    return ctx.extra[name]


def _integer(value: Any, function: str) -> int:
    """An integer argument, coerced as JSP EL does (numeric strings from job properties are numbers)."""
    return to_integer(value, what=f"{function}()")


def _current(ctx: ELContext, n: Any) -> InstanceRef:
    dataset = _extra(ctx, "dataset", "coord:current")
    nominal = _extra(ctx, "nominal", "coord:current")
    index = dataset.timeline.current_index(nominal, _integer(n, "coord:current"))
    return InstanceRef(index, dataset.timeline)


def _offset(ctx: ELContext, n: Any, unit: Any) -> InstanceRef:
    dataset = _extra(ctx, "dataset", "coord:offset")
    nominal = _extra(ctx, "nominal", "coord:offset")
    index = dataset.timeline.offset_index(
        nominal, _integer(n, "coord:offset"), str(unit), fast_forward=ctx.extra.get("role") == "start"
    )
    return InstanceRef(index, dataset.timeline)


def _in_dataset_tz(ctx: ELContext, function: str) -> Any:
    dataset = ctx.extra.get("dataset")
    return dataset.tz if dataset is not None else _extra(ctx, "job_tz", function)


def _uris(ctx: ELContext, key: str, name: Any, function: str) -> str:
    if str(name) in ctx.extra.get("deferred_in", ()):
        return "${" + f"{function}('{name}')" + "}"  # resolved when the action starts
    resolved = _extra(ctx, key, function)
    if str(name) not in resolved:
        raise ELEvaluationError(f"{function}(): no event named {name!r}")
    return ",".join(resolved[str(name)])


def _latest(ctx: ELContext, n: Any) -> StorageQuery:
    """coord:latest(n), n <= 0: the (-n)th newest available instance, searched when the action starts."""
    _extra(ctx, "dataset", "coord:latest")
    value = _integer(n, "coord:latest")
    if value > 0:
        raise ELEvaluationError(f"coord:latest(n) takes n <= 0 (0 is the latest available instance), got {value}")
    return StorageQuery("latest", value)


def _future(ctx: ELContext, n: Any, limit: Any) -> StorageQuery:
    """coord:future(n, limit), n >= 0, limit > 0: the nth available instance from the nominal one, limit ahead."""
    _extra(ctx, "dataset", "coord:future")
    value, most = _integer(n, "coord:future"), _integer(limit, "coord:future")
    if value < 0:
        raise ELEvaluationError(f"coord:future(n, limit) takes n >= 0 (0 is the first available instance), got {value}")
    if most <= 0:
        raise ELEvaluationError(f"coord:future(n, limit) takes a positive limit, got {most}")
    return StorageQuery("future", value, most)


def _unsupported(name: str, why: str) -> ELFunction:
    def refuse(ctx: ELContext, *args: Any) -> Any:
        raise ELEvaluationError(f"{name}() is not supported: {why} (docs/adr/0004-time-semantics.md)")

    return ELFunction(name, refuse, SUBMISSION_ONWARDS, 0, 3)


def _processing_tz(ctx: ELContext) -> Any:
    return ctx.extra.get("processing_tz") or resolve_timezone("UTC")


HCATALOG = "HCatalog (hcat://) datasets are out of scope"
UNSUPPORTED = (
    *(
        _unsupported(f"coord:{name}", HCATALOG)
        for name in (
            "databaseIn", "databaseOut", "tableIn", "tableOut", "dataInPartitionFilter", "dataInPartitionMin",
            "dataInPartitionMax", "dataInPartitions", "dataOutPartitions", "dataOutPartitionValue",
        )
    ),
    _unsupported("coord:version", "asynchronous datasets are out of scope (spec 6.4, TBD)"),
)


FUNCTIONS = (
    *(_frequency(kind) for kind in ("minutes", "hours", "days", "months", "endOfDays", "endOfWeeks", "endOfMonths")),
    ELFunction("coord:absolute", _absolute, CREATION_ONWARDS, 1, 1),
    ELFunction("coord:user", lambda ctx: str(_extra(ctx, "user", "coord:user")), SUBMISSION_ONWARDS, 0, 0),
    ELFunction("coord:conf", lambda ctx, name: str(_extra(ctx, "conf", "coord:conf").get(str(name), "")), SUBMISSION_ONWARDS, 1, 1),
    ELFunction("coord:current", _current, CREATION_ONWARDS, 1, 1),
    ELFunction("coord:offset", _offset, CREATION_ONWARDS, 2, 2),
    ELFunction(
        "coord:hoursInDay",
        lambda ctx, n: hours_in_day(_extra(ctx, "nominal", "coord:hoursInDay"), _integer(n, "coord:hoursInDay"), _in_dataset_tz(ctx, "coord:hoursInDay")),
        CREATION_ONWARDS, 1, 1,
    ),
    ELFunction(
        "coord:daysInMonth",
        lambda ctx, n: days_in_month(_extra(ctx, "nominal", "coord:daysInMonth"), _integer(n, "coord:daysInMonth"), _in_dataset_tz(ctx, "coord:daysInMonth")),
        CREATION_ONWARDS, 1, 1,
    ),
    ELFunction(
        "coord:tzOffset",
        lambda ctx: tz_offset(_extra(ctx, "nominal", "coord:tzOffset"), _in_dataset_tz(ctx, "coord:tzOffset"), _extra(ctx, "job_tz", "coord:tzOffset")),
        CREATION_ONWARDS, 0, 0,
    ),
    ELFunction(
        "coord:nominalTime",
        lambda ctx: format_datetime(_extra(ctx, "nominal", "coord:nominalTime"), _processing_tz(ctx)),
        CREATION_ONWARDS, 0, 0,
    ),
    ELFunction(
        "coord:actualTime",
        lambda ctx: format_datetime(_extra(ctx, "actual", "coord:actualTime"), _processing_tz(ctx)),
        CREATION_ONWARDS, 0, 0,
    ),
    ELFunction("coord:dataIn", lambda ctx, name: _uris(ctx, "data_in", name, "coord:dataIn"), CREATION_ONWARDS, 1, 1),
    ELFunction("coord:dataOut", lambda ctx, name: _uris(ctx, "data_out", name, "coord:dataOut"), CREATION_ONWARDS, 1, 1),
    ELFunction(
        "coord:dateOffset",
        lambda ctx, base, n, unit: date_offset(str(base), _integer(n, "coord:dateOffset"), str(unit), _processing_tz(ctx)),
        SUBMISSION_ONWARDS, 3, 3,
    ),
    ELFunction(
        "coord:dateTzOffset",
        lambda ctx, base, tz: date_tz_offset(str(base), resolve_timezone(str(tz)), _processing_tz(ctx)),
        SUBMISSION_ONWARDS, 2, 2,
    ),
    ELFunction(
        "coord:formatTime", lambda ctx, ts, pattern: format_time(str(ts), str(pattern), _processing_tz(ctx)),
        SUBMISSION_ONWARDS, 2, 2,
    ),
    ELFunction("coord:epochTime", lambda ctx, ts, millis: epoch_time(str(ts), millis), SUBMISSION_ONWARDS, 2, 2),
    ELFunction("coord:latest", _latest, START_ONLY, 1, 1),
    ELFunction("coord:future", _future, START_ONLY, 2, 2),
)

REGISTRY = FunctionRegistry().with_functions(*FUNCTIONS, *UNSUPPORTED)
