"""Action start (phase 3): coord:latest and coord:future resolved against available instances.

Pure: storage is reached only through the `is_available(uri, done_flag)` callback the runtime
passes (it checks storage and remembers positive answers); no clock, no Django.

Semantics (spec 6.6.6 / 6.6.7, newer reference 6.6.6 / 6.6.7, Oozie's CoordELFunctions):

- coord:latest(n), n <= 0: walking back one instance at a time from the dataset instance at
  or before the action's actual (creation) time, never before the initial instance, the
  (-n)th available instance (0 = the newest available). Gaps are skipped. Oozie's
  `oozie.service.ELService.latest-el.use-current-time` (default false) searches from the
  time of the check instead: pass it as `current_time`.
- coord:future(n, limit), n >= 0, limit > 0: walking forward from the instance at or before
  the action's nominal time (current(0)), checking it and at most `limit` instances after
  it, the nth available one (0 = the first available). Instances before the initial one
  are skipped.
- A range (start-instance/end-instance) of coord:latest(a)..coord:latest(b), a <= b <= 0,
  is every available instance ranked a to b; of coord:future(a, x)..coord:future(b, limit),
  a <= b, every available one ranked a to b within the end's limit. Ranges list oldest
  first, like every other range. A range never mixes kinds (refused at submission).
- `<instance>` lists may mix coord:current/offset/... with latest/future: each instance
  resolves on its own, in the order written.

A data-in whose search does not find enough available instances is `unresolved`: the action
keeps waiting and the runtime asks again later (new instances may appear).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from coordinators.plan.library import STORAGE_FUNCTIONS, InstanceRef, StorageQuery
from coordinators.plan.logic import Outcome, evaluate_logic, named_uris
from coordinators.plan.materialize import ActionPlan, instance_ref, instance_uri
from coordinators.plan.resolve import ResolvedCoordinator, ResolvedDataset, uses_storage
from datasets.timeline import TimelineError, TooManyInstancesError, format_datetime
from oozie.definitions import DataIn, DefinitionError
from oozie.el import ELError, Phase, evaluate, partially_resolve

Availability = Callable[[str, str], bool]
#: The (uri, done_flag) pairs among these already recorded as available, storage not asked (one call for many).
Recorded = Callable[[list[tuple[str, str]]], set[tuple[str, str]]]

#: Instances a latest/future search looks up in the recorded answers at once, before asking storage one by one.
LOOK_AHEAD = 200


@dataclass(frozen=True, slots=True)
class StartResolution:
    """An action's inputs and workflow configuration at start, with coord:latest/coord:future resolved.

    `unresolved` names the data-ins that do not have enough available instances yet: they keep
    their expressions in `data_in`, `${coord:dataIn('name')}` stays in `configuration` and
    `app_path`, and the action keeps waiting. Empty `unresolved` means the action may start.
    """

    data_in: dict[str, list[str]]
    app_path: str
    configuration: dict[str, str]
    unresolved: tuple[str, ...] = ()

    @property
    def ready(self) -> bool:
        """True when every input is resolved to concrete URIs."""
        return not self.unresolved


class _Checker:
    """is_available with answers remembered for one resolution (a URI is asked about once).

    With `recorded` and `on_storage` (the runtime's two halves of is_available), a search first
    looks up a block of the instances it may walk through in the recorded answers, in one call
    (`look_ahead`), then asks storage only about those not recorded, one at a time as it walks:
    a coord:latest that walks back over thousands of missing instances does not ask the
    database about each (storage is asked about each either way, as Oozie does).
    """

    def __init__(self, is_available: Availability, recorded: Recorded | None = None,
                 on_storage: Availability | None = None) -> None:
        self.is_available = is_available
        self.recorded, self.on_storage = recorded, on_storage
        self.answers: dict[tuple[str, str], bool] = {}
        self.not_recorded: set[tuple[str, str]] = set()

    def look_ahead(self, pairs: list[tuple[str, str]]) -> None:
        """Look these up in the recorded answers at once (nothing without `recorded`)."""
        if self.recorded is None or self.on_storage is None:
            return
        todo = [pair for pair in dict.fromkeys(pairs) if pair not in self.answers and pair not in self.not_recorded]
        if not todo:
            return
        found = self.recorded(todo)
        for pair in todo:
            if pair in found:
                self.answers[pair] = True
            else:
                self.not_recorded.add(pair)

    def __call__(self, uri: str, done_flag: str) -> bool:
        key = (uri, done_flag)
        if key not in self.answers:
            if key in self.not_recorded and self.on_storage is not None:
                self.answers[key] = bool(self.on_storage(uri, done_flag))
            else:
                self.answers[key] = bool(self.is_available(uri, done_flag))
        return self.answers[key]


@dataclass(frozen=True, slots=True)
class _Search:
    """What one data-in needs: the coordinator, its dataset, the action's times and the storage check."""

    coordinator: ResolvedCoordinator
    dataset: ResolvedDataset
    nominal: datetime
    actual: datetime
    latest_from: datetime
    check: _Checker
    max_instances: int

    def evaluate(self, text: str, role: str, event: str) -> InstanceRef | StorageQuery:
        ctx = self.coordinator.context(
            Phase.START, dataset=self.dataset, nominal=self.nominal, actual=self.actual, role=role
        )
        value = evaluate(text, ctx)
        return value if isinstance(value, StorageQuery) else instance_ref(value, text, event, self.dataset)

    def available(self, index: int) -> str | None:
        """The URI of instance `index` when it is available, else None."""
        uri = self.uri(index)
        return uri if self.check(uri, self.dataset.done_flag) else None

    def uri(self, index: int) -> str:
        return instance_uri(self.coordinator, self.dataset, self.dataset.timeline.instance(index))

    def look_ahead(self, indexes: range) -> None:
        """The recorded answers for these instances, in one look (`_Checker.look_ahead`)."""
        flag = self.dataset.done_flag
        self.check.look_ahead([(self.uri(index), flag) for index in indexes])

    def walk(self, indexes: range) -> Iterator[int]:
        """These instance indexes in order, their recorded answers looked up ahead in blocks growing to LOOK_AHEAD."""
        position, size = 0, 8
        while position < len(indexes):
            block = indexes[position:position + size]
            self.look_ahead(block)
            yield from block
            position += size
            size = min(size * 2, LOOK_AHEAD)

    def latest(self, first: int, last: int) -> list[str] | None:
        """Available instances ranked first..last (0 newest, then -1 ...), oldest first; None if too few yet."""
        timeline = self.dataset.timeline
        newest = timeline.index_at_or_before(self.latest_from)
        lowest = max(0, newest - self.max_instances + 1)  # never before the initial instance, never unbounded
        found: list[str] = []
        rank = 0
        for index in self.walk(range(newest, lowest - 1, -1)):
            uri = self.available(index)
            if uri is not None:
                if first <= rank <= last:
                    found.append(uri)
                if rank == first:
                    return found[::-1]
                rank -= 1
        return None

    def future(self, first: int, last: int, limit: int) -> list[str] | None:
        """Available instances ranked first..last (0 = first available from current(0)), within limit; None if too few."""
        if limit + 1 > self.max_instances:
            raise TooManyInstancesError(
                f"coord:future looks {limit} instances ahead; at most {self.max_instances - 1} are allowed"
            )
        start = self.dataset.timeline.index_at_or_before(self.nominal)
        found: list[str] = []
        rank = 0
        for index in self.walk(range(max(start, 0), start + limit + 1)):
            uri = self.available(index)
            if uri is None:
                continue
            if first <= rank <= last:
                found.append(uri)
            if rank == last:
                return found
            rank += 1
        return None

    def run(self, query: StorageQuery, first: int | None = None) -> list[str] | None:
        """Resolve one query (or the range first..query for a range's end)."""
        low = query.n if first is None else first
        if query.n - low + 1 > self.max_instances:
            raise TooManyInstancesError(
                f"the range resolves to {query.n - low + 1} instances; at most {self.max_instances} are allowed"
            )
        if query.kind == "latest":
            return self.latest(low, query.n)
        return self.future(low, query.n, query.limit)


def _resolve_input(search: _Search, event: DataIn) -> list[str] | None:
    """URIs of one data-in at action start, or None when storage does not have enough instances yet."""
    if event.is_range:
        start_text, end_text = event.start_instance or "", event.end_instance or ""
        start = search.evaluate(start_text, "start", event.name)
        end = search.evaluate(end_text, "end", event.name)
        if not isinstance(start, StorageQuery) or not isinstance(end, StorageQuery) or start.kind != end.kind:
            raise ELError(f"event {event.name!r}: start-instance and end-instance must both be coord:latest or coord:future")
        if start.n > end.n:
            raise ELError(
                f"event {event.name!r}: start-instance should be equal or earlier than the end-instance: "
                f"start-instance {start} is after end-instance {end}"
            )
        return search.run(end, first=start.n)
    uris: list[str] = []
    for text in event.instances:
        value = search.evaluate(text, "instance", event.name)
        if isinstance(value, StorageQuery):
            found = search.run(value)
            if found is None:
                return None
            uris.extend(found)
        elif (time := value.time) is not None:  # before the initial instance: dropped (6.6.10)
            uris.append(instance_uri(search.coordinator, search.dataset, time))
    return uris


def deferred_inputs(coordinator: ResolvedCoordinator, plan: ActionPlan) -> tuple[str, ...]:
    """Names of the plan's data-ins waiting for storage (kept as expressions at creation)."""
    return tuple(
        event.name for event in coordinator.app.input_events
        if event.name in plan.deferred
        or any(uses_storage(text) for text in (*event.instances, event.start_instance, event.end_instance))
    )


def resolve_at_start(
    coordinator: ResolvedCoordinator,
    plan: ActionPlan,
    *,
    actual_time: datetime,
    is_available: Availability,
    max_instances: int | None = None,
    current_time: datetime | None = None,
    recorded: Recorded | None = None,
    on_storage: Availability | None = None,
) -> StartResolution:
    """Resolve an action's coord:latest/coord:future inputs, then its app path and configuration.

    actual_time is the action's creation time (coord:actualTime(), the one plan_action got
    as `now`); coord:latest searches back from it, or from current_time when given (Oozie's
    latest-el.use-current-time). is_available(uri, done_flag) answers from storage; it is
    asked about each URI at most once per call; given `recorded` and `on_storage` instead of it
    for the instances a search walks through (is_available split in two: the answers recorded,
    looked up many at once, and storage), the database is not asked about each on its own.
    max_instances (default: the coordinator's)
    bounds how many instances one data-in may resolve to and how far a search may go.
    A definition error found only now (coord:latest(1), a reversed range) raises
    DefinitionError naming the action.
    """
    deferred = deferred_inputs(coordinator, plan)
    if not deferred:
        return StartResolution(dict(plan.data_in), plan.app_path, dict(plan.configuration))
    limit = coordinator.max_instances if max_instances is None else max_instances
    check = _Checker(is_available, recorded, on_storage)
    nominal = plan.nominal_time
    data_in = dict(plan.data_in)
    unresolved: list[str] = []
    try:
        for event in coordinator.app.input_events:
            if event.name not in deferred:
                continue
            dataset = coordinator.datasets[event.dataset]
            search = _Search(coordinator, dataset, nominal, actual_time, current_time or actual_time, check, limit)
            uris = _resolve_input(search, event)
            if uris is None:
                unresolved.append(event.name)
                data_in[event.name] = [t for t in (*event.instances, event.start_instance, event.end_instance) if t]
            else:
                data_in[event.name] = uris
        ctx = coordinator.context(
            Phase.START, nominal=nominal, actual=actual_time, data_in=data_in, data_out=plan.data_out,
            deferred_in=(*unresolved, *coordinator.logic_names),  # logic names: when the logic is satisfied
        )

        def defer(name: str) -> bool:
            return name in STORAGE_FUNCTIONS

        app_path = partially_resolve(coordinator.app_path, ctx, defer=defer, final=True)
        configuration = {name: partially_resolve(value, ctx, defer=defer, final=True) for name, value in coordinator.configuration}
    except (ELError, TimelineError) as exc:
        raise DefinitionError(
            f"action {plan.number} ({format_datetime(nominal)}) at start: {exc}", source=coordinator.app.source
        ) from None
    return StartResolution(data_in, app_path, configuration, tuple(unresolved))


def logic_outcome(
    coordinator: ResolvedCoordinator, data_in: Mapping[str, list[str]], *, is_available: Availability,
    waited: timedelta | None,
) -> Outcome:
    """The state of the job's `<input-logic>` for an action's inputs (spec 6.10; the job must have one).

    is_available(uri, done_flag) answers from storage; inputs still written as coord:latest/
    coord:future expressions are not available. waited: time since max(nominal, creation).
    """
    if coordinator.logic is None:
        raise ValueError("logic_outcome needs a job with <input-logic>")
    return evaluate_logic(coordinator.logic, data_in, _available(coordinator, is_available), waited)


def _available(coordinator: ResolvedCoordinator, is_available: Availability) -> Callable[[str, str], bool]:
    flags = {event.name: coordinator.datasets[event.dataset].done_flag for event in coordinator.app.input_events}
    check = _Checker(is_available)
    return lambda event, uri: not uri.startswith("${") and check(uri, flags[event])


def resolve_when_ready(
    coordinator: ResolvedCoordinator, plan: ActionPlan, *, actual_time: datetime, is_available: Availability
) -> StartResolution:
    """App path and configuration once the input logic is satisfied: coord:dataIn of a logic name is its URIs.

    A named node that is not satisfied on its own (the other branch of an `<or>`) gives ''.
    Inputs still waiting for coord:latest/coord:future keep `${coord:dataIn('name')}`.
    """
    if coordinator.logic is None:
        raise ValueError("resolve_when_ready needs a job with <input-logic>")
    try:
        named = named_uris(coordinator.logic, plan.data_in, _available(coordinator, is_available))
        waiting = tuple(name for name, uris in plan.data_in.items() if any(uri.startswith("${") for uri in uris))
        ctx = coordinator.context(
            Phase.START, nominal=plan.nominal_time, actual=actual_time, data_in={**plan.data_in, **named},
            data_out=plan.data_out, deferred_in=waiting,
        )

        def defer(name: str) -> bool:
            return name in STORAGE_FUNCTIONS

        app_path = partially_resolve(coordinator.app_path, ctx, defer=defer, final=True)
        configuration = {name: partially_resolve(value, ctx, defer=defer, final=True) for name, value in coordinator.configuration}
    except (ELError, TimelineError) as exc:
        raise DefinitionError(
            f"action {plan.number} ({format_datetime(plan.nominal_time)}) when ready: {exc}", source=coordinator.app.source
        ) from None
    return StartResolution(dict(plan.data_in), app_path, configuration)
