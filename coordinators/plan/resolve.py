"""Submission (phase 1): job properties and parameters in, a resolved coordinator out, or a clear error."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, tzinfo
from typing import Any

from coordinators.plan.library import FREQUENCY_FUNCTIONS, REGISTRY, STORAGE_FUNCTIONS
from coordinators.plan.logic import Logic, origin_note, resolve_logic
from coordinators.plan.ranges import REVERSED, check_literal_ranges
from datasets.timeline import (
    DEFAULT_MAX_INSTANCES,
    DatasetTimeline,
    Frequency,
    TimelineError,
    TimeUnit,
    format_datetime,
    frequency_minutes,
    iter_nominal_times,
    parse_datetime,
    parse_frequency,
    resolve_timezone,
)
from oozie.definitions import CoordinatorApp, DataIn, DefinitionError, merge_parameters
from oozie.el import (
    ELContext,
    ELError,
    Phase,
    calls_in,
    default_variables,
    evaluate,
    evaluate_node,
    evaluate_to_string,
    parse_template,
    partially_resolve,
    to_integer,
    unresolved_variables,
)
from oozie.el.nodes import Call, walk
from oozie.el.template import Expression
from oozie.properties import expand_properties

TIME_VARIABLES = frozenset({"YEAR", "MONTH", "DAY", "HOUR", "MINUTE"})
INSTANCE_FUNCTIONS = frozenset(
    f"coord:{name}"
    for name in ("current", "offset", "latest", "future", "absolute", "endOfDays", "endOfWeeks", "endOfMonths")
)
EXECUTION_ORDERS = ("FIFO", "LIFO", "LAST_ONLY", "NONE")
DEFAULTS = {"timeout": -1, "concurrency": 1, "execution": "FIFO", "throttle": 12}
#: The longest job name that can be stored: CoordinatorJob.app_name's max_length (a test keeps them equal).
MAX_NAME_LENGTH = 255


@dataclass(frozen=True, slots=True)
class ResolvedDataset:
    """A dataset with its time line, a URI template whose job variables are substituted, and its resolved done-flag."""

    name: str
    timeline: DatasetTimeline
    tz: tzinfo
    uri_template: str
    done_flag: str


@dataclass(frozen=True, slots=True)
class ResolvedCoordinator:
    """Everything phase 1 decides: times, frequency, controls, datasets; action text partly resolved."""

    app: CoordinatorApp
    name: str
    frequency: Frequency
    start: datetime
    end: datetime
    tz: tzinfo
    timeout: int
    concurrency: int
    execution: str
    throttle: int
    datasets: Mapping[str, ResolvedDataset]
    variables: Mapping[str, Any]
    user: str
    app_path: str
    configuration: tuple[tuple[str, str], ...]
    processing_tz: tzinfo
    #: The most instances one data-in may resolve to (or, for coord:latest, search); a runtime setting.
    max_instances: int = DEFAULT_MAX_INSTANCES
    #: `<input-logic>` resolved (spec 6.10); None: every input event is required.
    logic: Logic | None = None

    @property
    def logic_names(self) -> tuple[str, ...]:
        """The names coord:dataIn accepts besides the input events: named input-logic nodes."""
        return tuple(self.logic.named()) if self.logic is not None else ()

    def context(self, phase: Phase, **extra: Any) -> ELContext:
        """An EL context for later phases, with the job's variables."""
        base = {"user": self.user, "conf": self.variables, "job_tz": self.tz, "processing_tz": self.processing_tz}
        return ELContext(variables=self.variables, functions=REGISTRY, phase=phase, extra={**base, **extra})


def _fail(app: CoordinatorApp, element: str, message: str) -> DefinitionError:
    return DefinitionError(message, source=app.source, element=element)


def _later_phase(name: str) -> bool:
    function = REGISTRY.get(name)
    return function is not None and Phase.SUBMISSION not in function.phases


def _in_action(name: str) -> bool:
    """What app-path and configuration leave for action creation: later-phase calls and frequencies.

    Frequencies in an action are minutes at the nominal time (spec 4.4), unknown at submission.
    """
    return _later_phase(name) or name in FREQUENCY_FUNCTIONS


def _frequency(raw: str, ctx: ELContext, app: CoordinatorApp, element: str) -> Frequency:
    """A frequency attribute: a frequency function, minutes (a number or a numeric property) or a cron expression."""
    value = evaluate(raw, ctx)
    if isinstance(value, Frequency):
        return value
    if isinstance(value, bool):
        raise _fail(app, element, f"frequency {value!r} is not a frequency")
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # ${120 / 2}: EL division is decimal
    if isinstance(value, int):
        return Frequency.minutes(value)
    try:
        return parse_frequency(str(value))
    except TimelineError as exc:
        raise _fail(app, element, f"{exc}{origin_note(raw, ctx)}") from None


def _check_materializes(
    app: CoordinatorApp, frequency: Frequency, start: datetime, end: datetime, tz: tzinfo, processing_tz: tzinfo
) -> None:
    """A job must have a nominal time before its end (Oozie's CoordSubmitXCommand, E1003), else it is refused."""
    if next(iter_nominal_times(start, end, frequency, tz, limit=1), None) is None:
        raise _fail(
            app, "frequency",
            f"Coordinator job with frequency '{frequency}' materializes no actions between start and end time "
            f"({format_datetime(start, processing_tz)} to {format_datetime(end, processing_tz)}, end exclusive)",
        )


def _control(app: CoordinatorApp, ctx: ELContext, name: str) -> Any:
    raw = getattr(app.controls, name)
    if raw is None or raw == "":
        return DEFAULTS[name]
    value = evaluate(raw, ctx)
    if isinstance(value, Frequency) and value.unit is not TimeUnit.CRON:
        # A time period such as <timeout>${coord:hours(2)}</timeout> (spec 4.4): its minutes at the start.
        start = parse_datetime(evaluate_to_string(app.start, ctx))
        value = frequency_minutes(value, start, resolve_timezone(evaluate_to_string(app.timezone, ctx)))
    if isinstance(value, str) and not value.strip():
        return DEFAULTS[name]  # a property that is empty: as if the element were absent (Oozie)
    if name == "execution":
        text = str(value).strip().upper()
        if text not in EXECUTION_ORDERS:
            raise _fail(app, name, f"execution must be one of {', '.join(EXECUTION_ORDERS)}, got {value!r}{origin_note(raw, ctx)}")
        return text
    try:
        number = to_integer(value, raw, name)  # "5" from job.properties, or 5.0 from ${10 / 2}
    except ELError:
        raise _fail(app, name, f"{name} must be an integer, got {value!r}{origin_note(raw, ctx)}") from None
    if name == "timeout" and number < -1:
        raise _fail(app, name, "timeout must be -1 (none), 0 or a number of minutes")
    if name in ("concurrency", "throttle") and number < 1 and not (name == "concurrency" and number == -1):
        raise _fail(app, name, f"{name} must be positive, got {number}")
    return number


def _short(text: str, limit: int = 60) -> str:
    """A value for a one-line message: repr'd, cut to about `limit` characters."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} characters)"


def _name(app: CoordinatorApp, ctx: ELContext) -> str:
    """The job's name with its variables resolved (Oozie trims it): 1 to MAX_NAME_LENGTH characters."""
    name = evaluate_to_string(app.name, ctx).strip()
    if not name:
        raise _fail(app, "name", f"name {_short(app.name)} resolves to an empty string; a job needs a name")
    if len(name) > MAX_NAME_LENGTH:
        raise _fail(
            app, "name", f"name {_short(app.name)} resolves to {len(name)} characters; at most {MAX_NAME_LENGTH}"
        )
    return name


def _check_variables(text: str, variables: Mapping[str, Any], app: CoordinatorApp, element: str, allowed: frozenset[str] = frozenset()) -> None:
    missing = unresolved_variables(text, variables) - allowed
    if missing:
        raise _fail(app, element, f"unresolved variable(s): {', '.join(sorted(missing))}")


def resolve_coordinator(
    app: CoordinatorApp,
    properties: Mapping[str, str],
    *,
    user: str,
    processing_timezone: str = "UTC",
    max_instances: int = DEFAULT_MAX_INSTANCES,
) -> ResolvedCoordinator:
    """Apply parameters and job properties to a definition; every unresolved variable is an error naming it.

    Resolves the name, times, frequencies, time zones, controls, datasets (done-flag too), app path
    and configuration names and values; checks the variables of events and of the SLA block.

    max_instances caps how many instances one data-in may resolve to (COORD_MAX_INSTANCES_PER_INPUT).
    """
    merged = expand_properties(merge_parameters(app, dict(properties)), user=user, source=app.source)
    variables: dict[str, Any] = {**default_variables(), **merged}
    processing_tz = resolve_timezone(processing_timezone)
    ctx = ELContext(
        variables=variables, functions=REGISTRY, phase=Phase.SUBMISSION,
        extra={"user": user, "conf": merged, "processing_tz": processing_tz},
    )
    element = "coordinator-app"
    try:
        element = "name"
        job_name = _name(app, ctx)
        element = "frequency"
        frequency = _frequency(app.frequency, ctx, app, element)
        element = "start"
        start = parse_datetime(evaluate_to_string(app.start, ctx))
        element = "end"
        end = parse_datetime(evaluate_to_string(app.end, ctx))
        if end <= start:
            raise _fail(
                app, "end", f"end {app.end!r} is not after start {app.start!r} (end is exclusive: "
                "a job with a single action at T needs an end after T)",
            )
        element = "timezone"
        tz = resolve_timezone(evaluate_to_string(app.timezone, ctx))
        if frequency.unit is TimeUnit.CRON:
            frequency = replace(frequency, zone=processing_tz)  # cron reads the processing zone's clock (4.4.4)
        _check_materializes(app, frequency, start, end, tz, processing_tz)
        controls = {}
        for name in DEFAULTS:
            element = name
            controls[name] = _control(app, ctx, name)
        datasets: dict[str, ResolvedDataset] = {}
        # ${YEAR} ... ${MINUTE} in a URI template belong to the instance, not to EL constants.
        template_variables = {k: v for k, v in variables.items() if k not in TIME_VARIABLES or k in merged}
        template_ctx = replace(ctx, variables=template_variables)
        for dataset in app.datasets:
            element = f"dataset {dataset.name}"
            ds_frequency = _frequency(dataset.frequency, ctx, app, element)
            ds_tz = resolve_timezone(evaluate_to_string(dataset.timezone, ctx))
            initial = parse_datetime(evaluate_to_string(dataset.initial_instance, ctx))
            _check_variables(dataset.uri_template, template_variables, app, element, TIME_VARIABLES)
            template = partially_resolve(dataset.uri_template, template_ctx, keep_unresolved_variables=True, final=True)
            done_flag = evaluate_to_string(dataset.done_flag, ctx).strip()
            datasets[dataset.name] = ResolvedDataset(
                dataset.name, DatasetTimeline(initial, ds_frequency, ds_tz), ds_tz, template, done_flag
            )
        event_texts = [(e.name, [*e.instances, e.start_instance, e.end_instance]) for e in app.input_events]
        event_texts += [(e.name, [e.instance]) for e in app.output_events]
        for event_name, texts in event_texts:
            element = f"event {event_name}"
            for text in texts:
                if text:
                    _check_variables(text, variables, app, element)
                    if not any(isinstance(s, Expression) for s in parse_template(text)):
                        parse_datetime(text.strip())  # a literal instance must at least be a datetime
        _check_storage_functions(app, ctx)
        for event in app.input_events:
            element = f"event {event.name}"
            problem = check_literal_ranges(event, ctx, datasets[event.dataset].timeline)
            if problem is not None:
                raise _fail(app, element, problem)
        logic = None
        if app.logic is not None:
            element = "input-logic"
            storage = frozenset(
                e.name for e in app.input_events
                if any(uses_storage(text) for text in (*e.instances, e.start_instance, e.end_instance))
            )
            reserved = frozenset([*(e.name for e in app.input_events), *(e.name for e in app.output_events)])
            logic = resolve_logic(app.logic, ctx, app.input_events, storage_events=storage, reserved=reserved)
        element = "app-path"
        _check_variables(app.action.app_path, variables, app, element)
        app_path = partially_resolve(app.action.app_path, ctx, defer=_in_action)
        configuration = []
        for written_name, value in app.action.configuration:
            element = f"property {written_name}"
            # Oozie resolves property names at submission too; a name cannot wait for the action.
            property_name = evaluate_to_string(written_name, ctx).strip()
            _check_variables(value, variables, app, element)
            configuration.append((property_name, partially_resolve(value, ctx, defer=_in_action)))
        if app.sla is not None:
            # Evaluated when each action is created (coordinators/sla), with these same variables:
            # a missing one is the submitter's error, not an untracked SLA or text kept as `${...}`.
            for field_name, text in app.sla.as_dict().items():
                _check_variables(text, variables, app, f"sla:{field_name}")
    except DefinitionError:
        raise
    except (ELError, TimelineError) as exc:
        raise _fail(app, element, str(exc)) from None
    return ResolvedCoordinator(
        app=app, name=job_name, frequency=frequency, start=start, end=end, tz=tz,
        timeout=controls["timeout"], concurrency=controls["concurrency"], execution=controls["execution"],
        throttle=controls["throttle"], datasets=datasets, variables=variables, user=user,
        app_path=app_path, configuration=tuple(configuration), processing_tz=processing_tz,
        max_instances=max_instances, logic=logic,
    )


def uses_storage(text: str | None) -> bool:
    """Whether an expression needs storage (coord:latest / coord:future)."""
    return bool(instance_kinds(text) & STORAGE_FUNCTIONS)


def instance_kinds(text: str | None) -> frozenset[str]:
    """The instance functions an expression calls (coord:current, coord:latest, ...)."""
    if not text:
        return frozenset()
    return frozenset(
        name for segment in parse_template(text) if isinstance(segment, Expression) for name in calls_in(segment.node)
    )


def _literal_arguments(text: str | None, ctx: ELContext) -> list[tuple[str, tuple[Any, ...]]]:
    """coord:latest/coord:future calls whose arguments are known at submission, with their values."""
    found: list[tuple[str, tuple[Any, ...]]] = []
    for segment in parse_template(text or ""):
        if not isinstance(segment, Expression):
            continue
        for node in walk(segment.node):
            if isinstance(node, Call) and node.name in STORAGE_FUNCTIONS:
                try:
                    found.append((node.name, tuple(evaluate_node(arg, ctx, segment.source) for arg in node.args)))
                except ELError:
                    continue  # depends on the action (coord:hoursInDay ...): checked at start
    return found


def _check_storage_arguments(app: CoordinatorApp, event: DataIn, ctx: ELContext) -> None:
    """latest(n) needs n <= 0, future(n, limit) n >= 0 and limit > 0, a range start <= end: refused now if literal."""
    ranks: list[int] = []
    for text in (*event.instances, event.start_instance, event.end_instance):
        for name, args in _literal_arguments(text, ctx):
            values = [a for a in args if isinstance(a, int) and not isinstance(a, bool)]
            if len(values) != len(args):
                raise _fail(app, f"event {event.name}", f"{name}() takes integers, got {args!r}")
            if name == "coord:latest" and values[0] > 0:
                raise _fail(app, f"event {event.name}", f"coord:latest(n) takes n <= 0 (0 is the latest), got {values[0]}")
            if name == "coord:future" and (values[0] < 0 or values[1] <= 0):
                raise _fail(app, f"event {event.name}", f"coord:future(n, limit) takes n >= 0 and limit > 0, got {values}")
            if text in (event.start_instance, event.end_instance):
                ranks.append(values[0])
    if event.is_range and len(ranks) == 2 and ranks[0] > ranks[1]:
        raise _fail(app, f"event {event.name}", f"{REVERSED}: start-instance ({ranks[0]}) is after end-instance ({ranks[1]})")


def _check_storage_functions(app: CoordinatorApp, ctx: ELContext) -> None:
    """coord:latest/coord:future only in data-in instances, and a range never mixes them with other functions.

    Oozie refuses a range whose start and end are of different kinds (E1010: "start-instance
    and end-instance both should be either latest or current or future"), and resolves
    latest/future only for input events, at action start.
    """
    for event in app.input_events:
        _check_storage_arguments(app, event, ctx)
        if not event.is_range:
            continue
        start = instance_kinds(event.start_instance) & INSTANCE_FUNCTIONS
        end = instance_kinds(event.end_instance) & INSTANCE_FUNCTIONS
        if (start | end) & STORAGE_FUNCTIONS and not (start == end and len(start) == 1):
            raise _fail(
                app, f"event {event.name}",
                "start-instance and end-instance must both be coord:latest or both coord:future "
                f"(got {event.start_instance!r} and {event.end_instance!r})",
            )
    for out in app.output_events:
        if uses_storage(out.instance):
            raise _fail(app, f"event {out.name}", "coord:latest/coord:future resolve input events only, not a data-out")
    texts = [("app-path", app.action.app_path), *((f"property {name}", value) for name, value in app.action.configuration)]
    for element, text in texts:
        if uses_storage(text):
            raise _fail(app, element, "coord:latest/coord:future belong in a data-in instance; use coord:dataIn('name') here")
