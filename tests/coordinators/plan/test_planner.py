"""ActionPlanner (ADR 0024): what it computes once per job never changes a plan or an error.

The reference below is materialization as it was before the planner: every expression parsed
and evaluated afresh for every action, every instance and URI computed again. The planner
must give the same plans, and the same errors in the same words, action by action.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from coordinators.plan import (
    REGISTRY,
    ActionPlanner,
    iter_action_plans,
    plan_action,
    resolve_coordinator,
)
from coordinators.plan import materialize as materialize_module
from coordinators.plan.compiled import compile_expression, evaluate_compiled
from coordinators.plan.library import STORAGE_FUNCTIONS
from coordinators.plan.logic import as_json as logic_json
from coordinators.plan.logic import check_combine_ranges
from coordinators.plan.materialize import ActionPlan, instance_ref
from coordinators.plan.ranges import check_order
from coordinators.plan.resolve import ResolvedCoordinator, uses_storage
from datasets.timeline import (
    TimelineError,
    expand_uri_template,
    format_datetime,
    iter_nominal_times,
    parse_datetime,
)
from oozie.definitions import DataIn, DefinitionError, parse_coordinator
from oozie.el import (
    ELContext,
    ELError,
    Phase,
    evaluate,
    evaluate_node,
    parse_template,
    partially_resolve,
)
from oozie.el.template import Expression

NOW = parse_datetime("2026-01-01T00:00Z")


# --- the reference: one action, nothing reused -------------------------------------------------


def _reference_input(coordinator: ResolvedCoordinator, event: DataIn, nominal: datetime, max_instances: int) -> list[str] | None:
    dataset = coordinator.datasets[event.dataset]
    if any(uses_storage(text) for text in [*event.instances, event.start_instance, event.end_instance]):
        return None

    def ctx(role: str) -> ELContext:
        return coordinator.context(Phase.CREATION, dataset=dataset, nominal=nominal, actual=NOW, role=role)

    def uri(moment: datetime) -> str:
        return expand_uri_template(dataset.uri_template, moment, coordinator.processing_tz)

    if event.instances:
        refs = [instance_ref(evaluate(text, ctx("instance")), text, event.name, dataset) for text in event.instances]
        if len(refs) > max_instances:
            raise TimelineError(f"event {event.name!r} names more than {max_instances} instances")
        return [uri(time) for ref in refs if (time := ref.time) is not None]
    start, end = event.start_instance or "", event.end_instance or ""
    first = instance_ref(evaluate(start, ctx("start")), start, event.name, dataset)
    last = instance_ref(evaluate(end, ctx("end")), end, event.name, dataset)
    check_order(event, first.index, last.index, dataset.timeline)
    return [uri(t) for t in dataset.timeline.between(first.index, last.index, max_instances=max_instances)]


def reference_plan(coordinator: ResolvedCoordinator, number: int, nominal: datetime) -> ActionPlan:
    """Materialization of one action with nothing computed beforehand (the code before ADR 0024)."""
    app, max_instances = coordinator.app, coordinator.max_instances
    try:
        data_in: dict[str, list[str]] = {}
        deferred: list[str] = []
        for event in app.input_events:
            uris = _reference_input(coordinator, event, nominal, max_instances)
            if uris is None:
                deferred.append(event.name)
                data_in[event.name] = [t for t in (*event.instances, event.start_instance, event.end_instance) if t]
            else:
                data_in[event.name] = uris
        data_out: dict[str, list[str]] = {}
        for out in app.output_events:
            dataset = coordinator.datasets[out.dataset]
            ctx = coordinator.context(Phase.CREATION, dataset=dataset, nominal=nominal, actual=NOW, role="instance")
            ref = instance_ref(evaluate(out.instance, ctx), out.instance, out.name, dataset)
            data_out[out.name] = [
                expand_uri_template(dataset.uri_template, t, coordinator.processing_tz) for t in [ref.time] if t is not None
            ]
        if coordinator.logic is not None:
            check_combine_ranges(coordinator.logic, data_in)
        ctx = coordinator.context(
            Phase.CREATION, nominal=nominal, actual=NOW, data_in=data_in, data_out=data_out,
            deferred_in=(*deferred, *coordinator.logic_names),
        )

        def defer(name: str) -> bool:
            return name in STORAGE_FUNCTIONS

        app_path = partially_resolve(coordinator.app_path, ctx, defer=defer, final=True)
        configuration = {name: partially_resolve(value, ctx, defer=defer, final=True) for name, value in coordinator.configuration}
    except (ELError, TimelineError) as exc:
        raise DefinitionError(f"action {number} ({format_datetime(nominal)}): {exc}", source=app.source) from None
    logic = None if coordinator.logic is None else {"requires": coordinator.logic.describe(), "tree": logic_json(coordinator.logic)}
    return ActionPlan(number, nominal, data_in, data_out, app_path, configuration, tuple(deferred), logic)


def outcome(plan: Any) -> Any:
    """What a plan call gave: the plan's JSON (and its deferred inputs) or the error's message."""
    try:
        result = plan()
    except DefinitionError as exc:
        return ("error", str(exc))
    return (result.as_json(), result.deferred)


def nominal_times(coordinator: ResolvedCoordinator, limit: int) -> list[datetime]:
    return list(iter_nominal_times(coordinator.start, coordinator.end, coordinator.frequency, coordinator.tz, limit=limit))


# --- jobs --------------------------------------------------------------------------------------

#: Hourly in New York across both 2026 DST changes (March 8 gap, November 1 repeated hour):
#: a day-long range sized by coord:hoursInDay, an offset, a property-driven current, formatTime,
#: a deferred coord:latest input and an end that comes before the start on the 25-hour day.
DST_JOB = """<coordinator-app name="dst-${tag}" frequency="${coord:hours(1)}" start="${start}" end="${end}"
    timezone="America/New_York" xmlns="uri:oozie:coordinator:0.4">
  <datasets>
    <dataset name="hourly" frequency="${coord:hours(1)}" initial-instance="2026-01-01T05:00Z" timezone="America/New_York">
      <uri-template>${base}/hourly/${YEAR}/${MONTH}/${DAY}/${HOUR}</uri-template>
    </dataset>
    <dataset name="daily" frequency="${coord:days(1)}" initial-instance="2026-01-01T05:00Z" timezone="America/New_York">
      <uri-template>${base}/daily/${YEAR}${MONTH}${DAY}</uri-template>
    </dataset>
  </datasets>
  <input-events>
    <data-in name="day" dataset="hourly">
      <start-instance>${coord:current(-(coord:hoursInDay(0) - 1))}</start-instance><end-instance>${coord:current(0)}</end-instance>
    </data-in>
    <data-in name="back" dataset="hourly"><instance>${coord:current(back)}</instance><instance>${coord:offset(-1, 'DAY')}</instance></data-in>
    <data-in name="odd" dataset="hourly">
      <start-instance>${coord:current(0)}</start-instance><end-instance>${coord:current(24 - coord:hoursInDay(0))}</end-instance>
    </data-in>
    <data-in name="newest" dataset="daily"><instance>${coord:latest(0)}</instance></data-in>
  </input-events>
  <output-events><data-out name="out" dataset="daily"><instance>${coord:current(0)}</instance></data-out></output-events>
  <action><workflow><app-path>task:examples.pipeline.aggregate</app-path><configuration>
    <property><name>input</name><value>${coord:dataIn('day')}</value></property>
    <property><name>newest</name><value>${coord:dataIn('newest')}</value></property>
    <property><name>output</name><value>${coord:dataOut('out')}</value></property>
    <property><name>day</name><value>${coord:formatTime(coord:nominalTime(), 'yyyy-MM-dd HH z')} (${coord:hoursInDay(0)}h)</value></property>
    <property><name>offset</name><value>tz ${coord:tzOffset()} at ${coord:dateOffset(coord:nominalTime(), 1, 'DAY')}</value></property>
    <property><name>plain</name><value>${base}/fixed</value></property>
  </configuration></workflow></action>
</coordinator-app>"""


def dst_job(*, base: str = "s3://a", back: str = "-2", start: str, end: str, zone: str = "UTC") -> ResolvedCoordinator:
    properties = {"tag": base.rsplit("/", 1)[-1], "base": base, "back": back, "start": start, "end": end}
    return resolve_coordinator(parse_coordinator(DST_JOB, "dst.xml"), properties, user="ann", processing_timezone=zone)


@pytest.mark.parametrize(
    ("start", "end", "zone", "fall"),
    [
        pytest.param("2026-03-06T05:00Z", "2026-03-10T04:00Z", "UTC", False, id="spring-gap-utc"),
        pytest.param("2026-10-30T04:00Z", "2026-11-03T05:00Z", "UTC", True, id="fall-repeat-utc"),
        pytest.param("2026-10-30T04:00Z", "2026-11-03T05:00Z", "GMT+05:30", True, id="fall-repeat-offset-processing-zone"),
    ],
)
def test_plans_across_dst_are_those_of_an_uncached_computation(start: str, end: str, zone: str, fall: bool) -> None:
    """Every action across a DST change: the planner's plan (or error) is the one computed afresh."""
    coordinator = dst_job(start=start, end=end, zone=zone)
    times = nominal_times(coordinator, 200)
    planner = ActionPlanner(coordinator)
    got = [outcome(lambda n=n, t=t: planner.plan(n, now=NOW, nominal=t)) for n, t in enumerate(times, start=1)]
    expected = [outcome(lambda n=n, t=t: reference_plan(coordinator, n, t)) for n, t in enumerate(times, start=1)]
    assert got == expected
    errors = [item for item in got if item[0] == "error"]
    # The job does cross a DST change: on the 25-hour day `odd` is reversed (each of its 25 actions
    # fails), the 23-hour day shortens `day`.
    assert len(errors) == (25 if fall else 0)
    assert all("start-instance should be equal or earlier than the end-instance" in message for _, message in errors)
    sizes = {len(item[0]["data_in"]["day"]) for item in got if item[0] != "error"}
    assert sizes == ({24} if fall else {23, 24})
    assert all(item[1] == ("newest",) for item in got if item[0] != "error")


def test_plan_action_and_iter_action_plans_agree_with_the_planner() -> None:
    """plan_action (one action) and iter_action_plans (many) give the planner's plans."""
    coordinator = dst_job(start="2026-03-07T05:00Z", end="2026-03-09T05:00Z")
    plans = [plan.as_json() for plan in iter_action_plans(coordinator, now=NOW, max_actions=48)]
    singles = [plan_action(coordinator, number, now=NOW).as_json() for number in range(1, 49)]
    assert plans == singles
    assert plans == [reference_plan(coordinator, n, t).as_json() for n, t in enumerate(nominal_times(coordinator, 48), start=1)]


def test_each_job_has_its_own_cache() -> None:
    """Two jobs with different properties planned in turn in one process: each gets its own URIs and values."""
    first = dst_job(base="s3://first", back="-2", start="2026-03-07T05:00Z", end="2026-03-09T05:00Z")
    second = dst_job(base="s3://second", back="-5", start="2026-03-07T05:00Z", end="2026-03-09T05:00Z")
    planners = {id(first): ActionPlanner(first), id(second): ActionPlanner(second)}
    for number, nominal in enumerate(nominal_times(first, 48), start=1):
        for coordinator in (first, second):
            plan = planners[id(coordinator)].plan(number, now=NOW, nominal=nominal)
            assert plan == reference_plan(coordinator, number, nominal)
    last_first = planners[id(first)].plan(48, now=NOW)
    last_second = planners[id(second)].plan(48, now=NOW)
    assert last_first.configuration["plain"] == "s3://first/fixed"
    assert last_second.configuration["plain"] == "s3://second/fixed"
    assert all(uri.startswith("s3://first/") for uri in last_first.data_in["day"])
    assert all(uri.startswith("s3://second/") for uri in last_second.data_in["day"])
    # Action 48 is at 2026-03-09T04:00Z; coord:current(back) takes back from each job's own properties.
    assert last_first.data_in["back"][0] == "s3://first/hourly/2026/03/09/02"
    assert last_second.data_in["back"][0] == "s3://second/hourly/2026/03/08/23"


def test_a_small_uri_cache_is_emptied_and_refilled_without_changing_a_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-job URI cache is bounded: when it is full it starts again, and plans stay the same."""
    monkeypatch.setattr(materialize_module, "URI_CACHE_SIZE", 5)
    coordinator = dst_job(start="2026-03-07T05:00Z", end="2026-03-09T05:00Z")
    planner = ActionPlanner(coordinator, max_instances=30)
    for number, nominal in enumerate(nominal_times(coordinator, 48), start=1):
        assert planner.plan(number, now=NOW, nominal=nominal) == reference_plan(coordinator, number, nominal)
    assert all(len(cache) <= 60 + 25 for cache in planner._uri_cache.values())


def test_a_range_wider_than_max_instances_fails_as_before() -> None:
    """A planner with a lower instance cap refuses the 24-hour range in the words of the time line."""
    coordinator = dst_job(start="2026-03-07T05:00Z", end="2026-03-08T05:00Z")
    with pytest.raises(DefinitionError, match="at most 10 are allowed"):
        ActionPlanner(coordinator, max_instances=10).plan(24, now=NOW)


# --- compiled expressions ----------------------------------------------------------------------

EXPRESSIONS = [
    pytest.param("coord:formatTime(coord:nominalTime(), 'yyyy-MM-dd')", id="nested-calls"),
    pytest.param("coord:dataIn('day')", id="data-in"),
    pytest.param("coord:conf('base')", id="conf"),
    pytest.param("base", id="variable"),
    pytest.param("coord:hoursInDay(0) * 60 + 1", id="operators-stay-with-the-evaluator"),
    pytest.param("coord:formatTime(coord:nominalTime(), 'Q')", id="bad-pattern"),
    pytest.param("coord:dataIn('nope')", id="no-such-event"),
    pytest.param("coord:nope()", id="unknown-function"),
    pytest.param("coord:dataIn()", id="arity"),
    pytest.param("coord:latest(0)", id="wrong-phase"),
    pytest.param("coord:current(undefined)", id="unresolved-variable"),
    pytest.param("coord:hoursInDay('x')", id="bad-argument"),
]


@pytest.mark.parametrize("source", EXPRESSIONS)
def test_compiled_expressions_give_the_evaluators_value_or_error(source: str) -> None:
    """A compiled expression's value, or its error class and message, is the evaluator's."""
    coordinator = dst_job(start="2026-03-07T05:00Z", end="2026-03-09T05:00Z")
    (segment,) = parse_template("${" + source + "}")
    assert isinstance(segment, Expression)
    compiled = compile_expression(segment, coordinator.variables, REGISTRY, Phase.CREATION)
    for nominal in nominal_times(coordinator, 30):
        ctx = coordinator.context(
            Phase.CREATION, nominal=nominal, actual=NOW, data_in={"day": ["a", "b"]}, data_out={}, deferred_in=(),
        )
        assert outcome_of(lambda ctx=ctx: evaluate_compiled(compiled, segment, ctx)) == outcome_of(
            lambda ctx=ctx: evaluate_node(segment.node, ctx, segment.source)
        )


def outcome_of(call: Any) -> Any:
    try:
        return ("value", call())
    except Exception as exc:  # noqa: BLE001 - the comparison is the point
        return (type(exc), str(exc))
