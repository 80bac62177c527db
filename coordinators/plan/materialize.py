"""Creation (phase 2): the plan of one action — nominal time, input and output URIs, configuration."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from coordinators.definitions import DataIn, DefinitionError
from coordinators.el import ELError, Phase, evaluate, partially_resolve
from coordinators.plan.library import STORAGE_FUNCTIONS, InstanceRef
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


def _resolve_input(
    coordinator: ResolvedCoordinator, event: DataIn, nominal: datetime, now: datetime, max_instances: int
) -> list[str] | None:
    """URIs of one data-in, latest first; None when it needs storage (deferred to action start)."""
    dataset = coordinator.datasets[event.dataset]
    texts = [*event.instances, event.start_instance, event.end_instance]
    if any(uses_storage(text) for text in texts):
        return None

    def ctx(role: str) -> Any:
        return coordinator.context(Phase.CREATION, dataset=dataset, nominal=nominal, actual=now, role=role)

    if event.instances:
        refs = [instance_ref(evaluate(text, ctx("instance")), text, event.name, dataset) for text in event.instances]
        if len(refs) > max_instances:
            raise TimelineError(f"event {event.name!r} names more than {max_instances} instances")
        return _uris(coordinator, dataset, refs)
    start_text, end_text = event.start_instance or "", event.end_instance or ""
    first = instance_ref(evaluate(start_text, ctx("start")), start_text, event.name, dataset)
    last = instance_ref(evaluate(end_text, ctx("end")), end_text, event.name, dataset)
    check_order(event, first.index, last.index, dataset.timeline)  # never an empty or clipped range (issue 16)
    times = dataset.timeline.between(first.index, last.index, max_instances=max_instances)
    return [instance_uri(coordinator, dataset, t) for t in times]


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
    """
    if max_instances is None:
        max_instances = coordinator.max_instances
    if nominal is None:
        nominal = nominal_time(coordinator.start, number - 1, coordinator.frequency, coordinator.tz)
    app = coordinator.app
    try:
        data_in: dict[str, list[str]] = {}
        deferred: list[str] = []
        for event in app.input_events:
            uris = _resolve_input(coordinator, event, nominal, now, max_instances)
            if uris is None:
                deferred.append(event.name)
                bounds = [t for t in (*event.instances, event.start_instance, event.end_instance) if t]
                data_in[event.name] = bounds
            else:
                data_in[event.name] = uris
        data_out: dict[str, list[str]] = {}
        for out in app.output_events:
            dataset = coordinator.datasets[out.dataset]
            ctx = coordinator.context(Phase.CREATION, dataset=dataset, nominal=nominal, actual=now, role="instance")
            ref = instance_ref(evaluate(out.instance, ctx), out.instance, out.name, dataset)
            data_out[out.name] = _uris(coordinator, dataset, [ref])
        if coordinator.logic is not None:
            check_combine_ranges(coordinator.logic, data_in)
        # coord:dataIn of an input-logic name is known once the logic is satisfied (the
        # runtime's input check): until then it stays `${coord:dataIn('name')}`, as Oozie shows it.
        ctx = coordinator.context(
            Phase.CREATION, nominal=nominal, actual=now, data_in=data_in, data_out=data_out,
            deferred_in=(*deferred, *coordinator.logic_names),
        )

        def defer(name: str) -> bool:
            return name in STORAGE_FUNCTIONS

        app_path = partially_resolve(coordinator.app_path, ctx, defer=defer, final=True)
        configuration = {name: partially_resolve(value, ctx, defer=defer, final=True) for name, value in coordinator.configuration}
    except (ELError, TimelineError) as exc:
        raise DefinitionError(f"action {number} ({format_datetime(nominal)}): {exc}", source=app.source) from None
    logic = None if coordinator.logic is None else {
        "requires": coordinator.logic.describe(), "tree": logic_json(coordinator.logic),
    }
    return ActionPlan(number, nominal, data_in, data_out, app_path, configuration, tuple(deferred), logic)


def iter_action_plans(
    coordinator: ResolvedCoordinator, *, now: datetime, max_actions: int, max_instances: int | None = None
) -> Iterator[ActionPlan]:
    """Plans of every action from start to end (exclusive), at most max_actions."""
    times = iter_nominal_times(coordinator.start, coordinator.end, coordinator.frequency, coordinator.tz, limit=max_actions)
    for number, nominal in enumerate(times, start=1):
        yield plan_action(coordinator, number, now=now, nominal=nominal, max_instances=max_instances)
