"""Creation (phase 2): the plan of one action — nominal time, input and output URIs, configuration."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from coordinators.plan.compiled import Compiled, compile_expression, evaluate_compiled
from coordinators.plan.library import REGISTRY, STORAGE_FUNCTIONS, InstanceRef
from coordinators.plan.logic import as_json as logic_json
from coordinators.plan.logic import check_combine_ranges
from coordinators.plan.ranges import check_order
from coordinators.plan.resolve import ResolvedCoordinator, ResolvedDataset, uses_storage
from datasets.timeline import (
    TimelineError,
    expand_uri_template,
    format_datetime,
    iter_nominal_times,
    nominal_time,
    parse_datetime,
)
from oozie.definitions import DataIn, DefinitionError
from oozie.el import (
    ELContext,
    ELError,
    Expression,
    Phase,
    calls_in,
    evaluate,
    evaluate_node,
    parse_template,
    partially_resolve,
    to_integer,
    to_text,
)
from oozie.el.nodes import Call, Node, walk


@dataclass(frozen=True, slots=True)
class ActionPlan:
    """What an action is: its number (1-based), nominal time, resolved URIs and configuration.

    Inputs needing storage (coord:latest, coord:future) stay as their expressions until the
    action starts; `deferred` names those inputs.
    """

    number: int
    nominal_time: datetime
    data_in: dict[str, list[str]]
    data_out: dict[str, list[str]]
    app_path: str
    configuration: dict[str, str]
    deferred: tuple[str, ...] = ()
    #: `<input-logic>` (spec 6.10) as JSON, when the job has one: what makes the action ready.
    input_logic: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        """The dry-run JSON shape (`input_logic` only for a job with `<input-logic>`)."""
        out = {
            "number": self.number,
            "nominal_time": format_datetime(self.nominal_time),
            "data_in": self.data_in,
            "data_out": self.data_out,
            "app_path": self.app_path,
            "configuration": self.configuration,
        }
        if self.input_logic is not None:
            out["input_logic"] = self.input_logic
        return out


def instance_ref(value: Any, text: str, event: str, dataset: ResolvedDataset) -> InstanceRef:
    """What an `<instance>`-like expression evaluated to, as a dataset instance (or a clear error)."""
    if isinstance(value, InstanceRef):
        return value
    if isinstance(value, str):  # a literal datetime, as in the spec's example 6.3.1
        moment = parse_datetime(value.strip())
        index = dataset.timeline.index_at_or_before(moment)
        if index < 0 or dataset.timeline.instance(index) != moment:
            raise ELError(f"event {event!r}: {value.strip()} is not an instance of dataset {dataset.name!r}")
        return InstanceRef(index, dataset.timeline)
    raise ELError(f"event {event!r}: {text!r} must resolve to a dataset instance (coord:current, coord:offset)")


def instance_uri(coordinator: ResolvedCoordinator, dataset: ResolvedDataset, moment: datetime) -> str:
    """The URI of one dataset instance; URI constants are in the processing time zone (spec 5.1 "IMPORTANT")."""
    return expand_uri_template(dataset.uri_template, moment, coordinator.processing_tz)


def _uris(coordinator: ResolvedCoordinator, dataset: ResolvedDataset, refs: list[InstanceRef]) -> list[str]:
    return [instance_uri(coordinator, dataset, time) for ref in refs if (time := ref.time) is not None]


#: Instance URIs an ActionPlanner keeps per dataset (a sliding window shares almost all of them).
URI_CACHE_SIZE = 8_192
_EVALUATION_ERRORS = (ValueError, TypeError, ArithmeticError)


def _storage(name: str) -> bool:
    return name in STORAGE_FUNCTIONS


@dataclass(frozen=True, slots=True)
class _Bound:
    """An `<instance>`, `<start-instance>` or `<end-instance>` text, prepared once per job.

    `current` is n when the text is exactly `${coord:current(n)}` with n known for the whole
    job (a literal or job properties): its index is then the time line's, with no EL walk.
    Anything else, and any failure of that shortcut, goes through EL evaluation, whose
    result and error messages are the reference.
    """

    text: str
    role: str
    current: int | None


@dataclass(frozen=True, slots=True)
class _Input:
    """A data-in, prepared once per job: its dataset, whether it waits for storage, its bounds."""

    event: DataIn
    dataset: ResolvedDataset
    #: Whether it waits for storage (coord:latest/coord:future); None when a bound does not parse.
    storage: bool | None
    bounds: tuple[_Bound, ...]
    deferred_bounds: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Text:
    """An action text (app path, a configuration value) split and compiled once per job.

    parts: literal strings, deferred expressions (kept as `${...}`) and compiled ones; None
    when the text does not parse, so each action reports the error as an uncached plan does.
    """

    text: str
    parts: tuple[str | tuple[Expression, Compiled | None], ...] | None


def _constant_integer(node: Node, coordinator: ResolvedCoordinator, source: str) -> int | None:
    """The integer a call-free sub-expression has for the whole job (job variables only), or None."""
    if any(isinstance(part, Call) for part in walk(node)):
        return None
    try:
        return to_integer(evaluate_node(node, coordinator.context(Phase.CREATION), source))
    except (ELError, *_EVALUATION_ERRORS):
        return None  # left to the evaluation of each action, which reports it as it always did


def _bound(coordinator: ResolvedCoordinator, text: str, role: str) -> _Bound:
    try:
        segments = parse_template(text)
    except ELError:
        return _Bound(text, role, None)
    if len(segments) == 1 and isinstance(expression := segments[0], Expression):
        node = expression.node
        if isinstance(node, Call) and node.name == "coord:current" and len(node.args) == 1:
            return _Bound(text, role, _constant_integer(node.args[0], coordinator, expression.source))
    return _Bound(text, role, None)


def _text(coordinator: ResolvedCoordinator, text: str) -> _Text:
    try:
        segments = parse_template(text)
    except ELError:
        return _Text(text, None)
    parts: list[str | tuple[Expression, Compiled | None]] = []
    for segment in segments:
        if isinstance(segment, str):
            parts.append(segment)
        elif any(_storage(name) for name in calls_in(segment.node)):
            parts.append((segment, None))  # resolved when the action starts
        else:
            parts.append((segment, compile_expression(segment, coordinator.variables, REGISTRY, Phase.CREATION)))
    return _Text(text, tuple(parts))


class ActionPlanner:
    """Plans the actions of one job; what is the same for every action is computed once, here.

    Per job: which inputs wait for storage, the parsed `<instance>` bounds, the action texts
    split and their expressions compiled, and the URI of each dataset instance already expanded
    (consecutive actions of a sliding window share all but one). Nothing is shared between
    planners: one planner per job (or per materialize command). Plans are identical to
    evaluating every expression afresh (tests/coordinators/plan/test_planner.py).
    """

    def __init__(self, coordinator: ResolvedCoordinator, *, max_instances: int | None = None) -> None:
        self.coordinator = coordinator
        self.max_instances = coordinator.max_instances if max_instances is None else max_instances
        app = coordinator.app
        self._inputs: list[_Input] = []
        for event in app.input_events:
            texts = [*event.instances, event.start_instance, event.end_instance]
            storage: bool | None
            try:
                storage = any(uses_storage(text) for text in texts)
            except ELError:
                storage = None  # each action reports it, as an uncached plan does
            if event.instances:
                bounds = tuple(_bound(coordinator, text, "instance") for text in event.instances)
            else:
                bounds = (
                    _bound(coordinator, event.start_instance or "", "start"),
                    _bound(coordinator, event.end_instance or "", "end"),
                )
            dataset = coordinator.datasets[event.dataset]
            self._inputs.append(_Input(event, dataset, storage, bounds, tuple(t for t in texts if t)))
        self._outputs = [
            (out, coordinator.datasets[out.dataset], _bound(coordinator, out.instance, "instance"))
            for out in app.output_events
        ]
        self._logic_names = coordinator.logic_names
        self._app_path = _text(coordinator, coordinator.app_path)
        self._configuration = [(name, _text(coordinator, value)) for name, value in coordinator.configuration]
        self._uri_cache: dict[str, dict[int, str]] = {name: {} for name in coordinator.datasets}
        self._uri_cache_size = max(URI_CACHE_SIZE, 2 * self.max_instances)  # room for two of the widest ranges

    def plan(self, number: int, *, now: datetime, nominal: datetime | None = None) -> ActionPlan:
        """The plan of action `number` (1-based); `now` is the creation time (coord:actualTime)."""
        coordinator = self.coordinator
        if nominal is None:
            nominal = nominal_time(coordinator.start, number - 1, coordinator.frequency, coordinator.tz)
        try:
            data_in: dict[str, list[str]] = {}
            deferred: list[str] = []
            for prepared in self._inputs:
                storage = prepared.storage
                if storage is None:  # a bound that does not parse: this raises its ELError
                    storage = any(uses_storage(text) for text in prepared.deferred_bounds)
                if storage:
                    deferred.append(prepared.event.name)
                    data_in[prepared.event.name] = list(prepared.deferred_bounds)
                else:
                    data_in[prepared.event.name] = self._input_uris(prepared, nominal, now)
            data_out: dict[str, list[str]] = {}
            for out, dataset, bound in self._outputs:
                index = self._index(bound, out.name, dataset, nominal, now)
                data_out[out.name] = self._uris(dataset, [index])
            if coordinator.logic is not None:
                check_combine_ranges(coordinator.logic, data_in)
            # coord:dataIn of an input-logic name is known once the logic is satisfied (the
            # runtime's input check): until then it stays `${coord:dataIn('name')}`, as Oozie shows it.
            ctx = coordinator.context(
                Phase.CREATION, nominal=nominal, actual=now, data_in=data_in, data_out=data_out,
                deferred_in=(*deferred, *self._logic_names),
            )
            app_path = self._resolve(self._app_path, ctx)
            configuration = {name: self._resolve(text, ctx) for name, text in self._configuration}
        except (ELError, TimelineError) as exc:
            raise DefinitionError(
                f"action {number} ({format_datetime(nominal)}): {exc}", source=coordinator.app.source
            ) from None
        logic = None if coordinator.logic is None else {
            "requires": coordinator.logic.describe(), "tree": logic_json(coordinator.logic),
        }
        return ActionPlan(number, nominal, data_in, data_out, app_path, configuration, tuple(deferred), logic)

    def _index(self, bound: _Bound, event: str, dataset: ResolvedDataset, nominal: datetime, now: datetime) -> int:
        """The instance index a bound names at this nominal time (coord:current's, or EL's)."""
        if bound.current is not None:
            try:
                return dataset.timeline.current_index(nominal, bound.current)
            except _EVALUATION_ERRORS:
                pass  # EL evaluation below raises the error in its own words
        ctx = self.coordinator.context(Phase.CREATION, dataset=dataset, nominal=nominal, actual=now, role=bound.role)
        return instance_ref(evaluate(bound.text, ctx), bound.text, event, dataset).index

    def _input_uris(self, prepared: _Input, nominal: datetime, now: datetime) -> list[str]:
        """URIs of one data-in (not waiting for storage), oldest first."""
        event, dataset = prepared.event, prepared.dataset
        indexes = [self._index(bound, event.name, dataset, nominal, now) for bound in prepared.bounds]
        if event.instances:
            if len(indexes) > self.max_instances:
                raise TimelineError(f"event {event.name!r} names more than {self.max_instances} instances")
            return self._uris(dataset, indexes)
        first, last = indexes
        check_order(event, first, last, dataset.timeline)  # never an empty or clipped range (issue 16)
        return self._uris(dataset, dataset.timeline.indexes_between(first, last, max_instances=self.max_instances))

    def _uris(self, dataset: ResolvedDataset, indexes: Iterable[int]) -> list[str]:
        """The URIs of instances (those before the initial instance dropped), expanded once per planner."""
        cache = self._uri_cache[dataset.name]
        wanted = [index for index in indexes if index >= 0]
        missing = [index for index in wanted if index not in cache]
        if missing:
            if len(cache) + len(missing) > self._uri_cache_size:
                cache.clear()
                missing = wanted
            for index in missing:
                cache[index] = instance_uri(self.coordinator, dataset, dataset.timeline.instance(index))
        return [cache[index] for index in wanted]

    @staticmethod
    def _resolve(text: _Text, ctx: ELContext) -> str:
        """partially_resolve(text, ctx, defer=storage functions, final=True) on the text split once."""
        if text.parts is None:
            return partially_resolve(text.text, ctx, defer=_storage, final=True)
        out: list[str] = []
        for part in text.parts:
            if isinstance(part, str):
                out.append(part)
            elif part[1] is None:
                out.append("${" + part[0].source + "}")
            else:
                out.append(to_text(evaluate_compiled(part[1], part[0], ctx)))
        return "".join(out)


def plan_action(
    coordinator: ResolvedCoordinator,
    number: int,
    *,
    now: datetime,
    nominal: datetime | None = None,
    max_instances: int | None = None,
) -> ActionPlan:
    """The plan of action `number` (1-based). `now` is the creation time (coord:actualTime).

    max_instances defaults to the coordinator's (resolve_coordinator's max_instances).
    Planning many actions of a job: one ActionPlanner, which computes the job's part once.
    """
    return ActionPlanner(coordinator, max_instances=max_instances).plan(number, now=now, nominal=nominal)


def iter_action_plans(
    coordinator: ResolvedCoordinator, *, now: datetime, max_actions: int, max_instances: int | None = None
) -> Iterator[ActionPlan]:
    """Plans of every action from start to end (exclusive), at most max_actions."""
    planner = ActionPlanner(coordinator, max_instances=max_instances)
    times = iter_nominal_times(coordinator.start, coordinator.end, coordinator.frequency, coordinator.tz, limit=max_actions)
    for number, nominal in enumerate(times, start=1):
        yield planner.plan(number, now=now, nominal=nominal)
