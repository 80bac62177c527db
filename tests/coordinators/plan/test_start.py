"""Action start (phase 3): coord:latest and coord:future resolved against available instances.

Spec 6.6.6 / 6.6.7 (both editions) give one example each; the rest are the rules those
sections and Oozie's CoordELFunctions state (ADR 0004, "coord:latest and coord:future").
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from coordinators.plan import (
    ActionPlan,
    ResolvedCoordinator,
    StartResolution,
    plan_action,
    resolve_at_start,
    resolve_coordinator,
)
from datasets.timeline import parse_datetime
from oozie.definitions import DefinitionError, parse_coordinator

P = parse_datetime
LOGS = "hdfs://bar:8020/app/logs"


def app(
    inputs: str, *, initial: str = "2009-01-01T00:00Z", frequency: str = "${coord:days(1)}", extra: str = "", outputs: str = ""
) -> str:
    """A daily coordinator over a daily 'logs' dataset whose URIs read like the spec's listings (2009/01/05)."""
    return f"""<coordinator-app name="app-coord" frequency="${{coord:days(1)}}" start="2009-01-01T24:00Z"
        end="2009-12-31T24:00Z" timezone="UTC" xmlns="uri:oozie:coordinator:0.1">
      <datasets>
        <dataset name="logs" frequency="{frequency}" initial-instance="{initial}" timezone="UTC">
          <uri-template>{LOGS}/${{YEAR}}/${{MONTH}}/${{DAY}}</uri-template>
        </dataset>
        <dataset name="flags" frequency="${{coord:days(1)}}" initial-instance="{initial}" timezone="UTC">
          <uri-template>{LOGS}/${{YEAR}}/${{MONTH}}/${{DAY}}</uri-template><done-flag>ready</done-flag>
        </dataset>
      </datasets>
      <input-events>{inputs}</input-events>{outputs}
      <action><workflow><app-path>hdfs://bar:8020/usr/joe/wf-${{coord:dataIn('input')}}</app-path><configuration>
        <property><name>wfInput</name><value>${{coord:dataIn('input')}}</value></property>{extra}
      </configuration></workflow></action>
    </coordinator-app>"""


def day(month: int, number: int) -> str:
    return f"{LOGS}/2009/{month:02d}/{number:02d}"


# Spec 6.6.6: present 01, 02, 03, 05, 07, 10 (04, 06, 08, 09 missing).
LATEST_LISTING = {day(1, d) for d in (1, 2, 3, 5, 7, 10)}
# Spec 6.6.7: present 01, 04, 07, 11, 14, 16 of February.
FUTURE_LISTING = {day(2, d) for d in (1, 4, 7, 11, 14, 16)}


class Storage:
    """A fake of the runtime's is_available: a set of present URIs, and a log of what was asked."""

    def __init__(self, present: Iterable[str]) -> None:
        self.present = set(present)
        self.asked: list[tuple[str, str]] = []

    def __call__(self, uri: str, done_flag: str) -> bool:
        self.asked.append((uri, done_flag))
        return uri in self.present


def prepare(inputs: str, nominal: str, created: str, **kwargs: str) -> tuple[ResolvedCoordinator, ActionPlan]:
    resolved = resolve_coordinator(parse_coordinator(app(inputs, **kwargs), "c.xml"), {}, user="joe")
    return resolved, plan_action(resolved, 1, now=P(created), nominal=P(nominal))


def start(
    inputs: str, present: Iterable[str], *, nominal: str = "2009-01-10T00:00Z", created: str | None = None, **kwargs: str
) -> StartResolution:
    resolved, plan = prepare(inputs, nominal, created or nominal, **kwargs)
    return resolve_at_start(resolved, plan, actual_time=P(created or nominal), is_available=Storage(present))


def instances(*texts: str) -> str:
    return '<data-in name="input" dataset="logs">' + "".join(f"<instance>{t}</instance>" for t in texts) + "</data-in>"


def window(first: str, last: str) -> str:
    return f'<data-in name="input" dataset="logs"><start-instance>{first}</start-instance><end-instance>{last}</end-instance></data-in>'


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        pytest.param(("${coord:latest(-2)}", "${coord:latest(0)}"), [day(1, 5), day(1, 10)], id="spec-6.6.6-example"),
        pytest.param(("${coord:latest(0)}",), [day(1, 10)], id="latest-0-is-the-newest"),
        pytest.param(("${coord:latest(-1)}",), [day(1, 7)], id="gaps-are-skipped"),
        pytest.param(("${coord:latest(-5)}",), [day(1, 1)], id="back-to-the-initial-instance"),
        pytest.param(("${coord:latest(1 - 3)}",), [day(1, 5)], id="argument-is-an-expression"),
    ],
)
def test_latest_is_the_nth_newest_available_instance(texts: tuple[str, ...], expected: list[str]) -> None:
    """6.6.6: coord:latest(n) is the (-n)th latest available instance at start, ignoring gaps."""
    resolution = start(instances(*texts), LATEST_LISTING)
    assert resolution.data_in == {"input": expected}
    assert resolution.configuration == {"wfInput": ",".join(expected)}
    assert resolution.unresolved == () and resolution.ready


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        pytest.param(("${coord:future(0, 10)}", "${coord:future(2, 10)}"), [day(2, 1), day(2, 7)], id="spec-6.6.7-example"),
        pytest.param(("${coord:future(1, 10)}",), [day(2, 4)], id="future-1-is-the-second-available"),
        pytest.param(("${coord:future(4, 15)}",), [day(2, 14)], id="gaps-are-skipped"),
        pytest.param(("${coord:future(3, 10)}",), [day(2, 11)], id="limit-reaches-the-nominal-plus-10"),
    ],
)
def test_future_is_the_nth_available_instance_from_the_nominal_one(texts: tuple[str, ...], expected: list[str]) -> None:
    """6.6.7: coord:future(n, limit) counts available instances from current(0) forward, at most limit ahead."""
    resolution = start(instances(*texts), FUTURE_LISTING, nominal="2009-02-01T00:00Z", created="2009-01-31T22:00Z")
    assert resolution.data_in == {"input": expected}
    assert resolution.ready


@pytest.mark.parametrize(
    ("texts", "present"),
    [
        pytest.param(("${coord:latest(-6)}",), LATEST_LISTING, id="latest-fewer-available-than-n"),
        pytest.param(("${coord:latest(0)}",), set(), id="latest-nothing-available"),
        pytest.param(("${coord:future(3, 9)}",), FUTURE_LISTING, id="future-beyond-the-limit"),
        pytest.param(("${coord:future(0, 2)}",), {day(2, 4)}, id="future-first-one-past-the-limit"),
        pytest.param(("${coord:current(0)}", "${coord:latest(-6)}"), LATEST_LISTING, id="one-unresolved-instance-holds-the-input"),
    ],
)
def test_too_few_available_instances_leave_the_input_unresolved(texts: tuple[str, ...], present: set[str]) -> None:
    """Not enough available instances yet: the data-in is unresolved and keeps its expressions; the action waits."""
    nominal = "2009-02-01T00:00Z" if "future" in texts[0] else "2009-01-10T00:00Z"
    resolution = start(instances(*texts), present, nominal=nominal)
    assert resolution.unresolved == ("input",) and not resolution.ready
    assert resolution.data_in == {"input": list(texts)}
    assert resolution.configuration == {"wfInput": "${coord:dataIn('input')}"}
    assert resolution.app_path == "hdfs://bar:8020/usr/joe/wf-${coord:dataIn('input')}"


def test_resolution_fills_coord_data_in_in_configuration_and_app_path() -> None:
    """coord:dataIn of a deferred input stays an expression at creation and becomes its URIs at start."""
    resolved, plan = prepare(instances("${coord:latest(0)}"), "2009-01-10T00:00Z", "2009-01-10T00:00Z")
    assert plan.deferred == ("input",)
    assert plan.configuration == {"wfInput": "${coord:dataIn('input')}"}
    resolution = resolve_at_start(resolved, plan, actual_time=P("2009-01-10T00:00Z"), is_available=Storage(LATEST_LISTING))
    assert resolution.app_path == f"hdfs://bar:8020/usr/joe/wf-{day(1, 10)}"
    assert resolution.configuration == {"wfInput": day(1, 10)}


@pytest.mark.parametrize(
    ("first", "last", "present", "expected"),
    [
        pytest.param("${coord:latest(-2)}", "${coord:latest(0)}", LATEST_LISTING, [day(1, 5), day(1, 7), day(1, 10)], id="latest-range"),
        pytest.param("${coord:latest(-3)}", "${coord:latest(-1)}", LATEST_LISTING, [day(1, 3), day(1, 5), day(1, 7)], id="latest-range-below-the-newest"),
        pytest.param("${coord:latest(-1)}", "${coord:latest(-1)}", LATEST_LISTING, [day(1, 7)], id="latest-range-of-one"),
        pytest.param("${coord:future(0, 10)}", "${coord:future(2, 10)}", FUTURE_LISTING, [day(2, 1), day(2, 4), day(2, 7)], id="future-range"),
        pytest.param("${coord:future(1, 10)}", "${coord:future(3, 10)}", FUTURE_LISTING, [day(2, 4), day(2, 7), day(2, 11)], id="future-range-after-the-first"),
    ],
)
def test_ranges_list_every_ranked_instance_oldest_first(first: str, last: str, present: set[str], expected: list[str]) -> None:
    """start-instance/end-instance with latest or future: every available instance ranked between them, oldest first."""
    nominal = "2009-02-01T00:00Z" if "future" in first else "2009-01-10T00:00Z"
    resolution = start(window(first, last), present, nominal=nominal)
    assert resolution.data_in == {"input": expected}
    assert resolution.ready


@pytest.mark.parametrize(
    ("first", "last", "present", "nominal"),
    [
        pytest.param("${coord:latest(-6)}", "${coord:latest(0)}", LATEST_LISTING, "2009-01-10T00:00Z", id="latest-range-too-deep"),
        # The end's limit applies to the whole range: from 02/01, 10 ahead reaches 02/11 (rank 3), not rank 4.
        pytest.param("${coord:future(0, 10)}", "${coord:future(4, 10)}", FUTURE_LISTING, "2009-02-01T00:00Z", id="future-range-past-the-limit"),
    ],
)
def test_ranges_without_enough_instances_wait(first: str, last: str, present: set[str], nominal: str) -> None:
    """A range resolves only when its farthest rank is found; until then the input is unresolved."""
    resolution = start(window(first, last), present, nominal=nominal)
    assert resolution.unresolved == ("input",)
    assert resolution.data_in == {"input": [first, last]}


def test_latest_searches_back_from_the_actual_time_by_default() -> None:
    """Oozie's default (latest-el.use-current-time=false): latest counts from the instance at or before the creation time."""
    resolved, plan = prepare(instances("${coord:latest(0)}"), "2009-01-10T00:00Z", "2009-01-05T12:00Z")
    storage = Storage(LATEST_LISTING)
    created = resolve_at_start(resolved, plan, actual_time=P("2009-01-05T12:00Z"), is_available=storage)
    assert created.data_in == {"input": [day(1, 5)]}  # 07 and 10 came after the action was created
    assert storage.asked[0] == (day(1, 5), "_SUCCESS")
    now = resolve_at_start(
        resolved, plan, actual_time=P("2009-01-05T12:00Z"), is_available=storage, current_time=P("2009-01-11T00:00Z")
    )
    assert now.data_in == {"input": [day(1, 10)]}  # use-current-time: from the time of the check


def test_latest_never_looks_before_the_initial_instance() -> None:
    """Instances before the dataset's initial instance do not exist, even if storage has such paths (6.6.10)."""
    later = {"initial": "2009-01-03T00:00Z"}  # 01 and 02 are on storage but precede the dataset
    assert start(instances("${coord:latest(-3)}"), LATEST_LISTING, **later).data_in == {"input": [day(1, 3)]}
    assert start(instances("${coord:latest(-4)}"), LATEST_LISTING, **later).unresolved == ("input",)


def test_future_skips_instances_before_the_initial_instance() -> None:
    """A nominal time before the initial instance: the search starts at the initial instance."""
    resolution = start(instances("${coord:future(0, 5)}"), {day(1, 20)}, nominal="2009-01-17T00:00Z", initial="2009-01-19T00:00Z")
    assert resolution.data_in == {"input": [day(1, 20)]}


def test_current_and_latest_instances_mix_in_one_input() -> None:
    """<instance>s may mix current and latest: each resolves on its own, in the order written."""
    resolution = start(instances("${coord:current(-1)}", "${coord:latest(0)}"), LATEST_LISTING)
    assert resolution.data_in == {"input": [day(1, 9), day(1, 10)]}


def test_resolved_inputs_and_other_events_keep_their_creation_values() -> None:
    """Only deferred inputs are searched; a current() input and the configuration's other values stay as created."""
    inputs = instances("${coord:latest(0)}") + '<data-in name="today" dataset="logs"><instance>${coord:current(0)}</instance></data-in>'
    extra = (
        "<property><name>today</name><value>${coord:dataIn('today')}</value></property>"
        "<property><name>created</name><value>${coord:actualTime()}</value></property>"
        "<property><name>hours</name><value>${coord:hours(3)}</value></property>"
    )
    resolved, plan = prepare(inputs, "2009-01-10T00:00Z", "2009-01-09T23:00Z", extra=extra)
    storage = Storage(LATEST_LISTING)
    resolution = resolve_at_start(resolved, plan, actual_time=P("2009-01-09T23:00Z"), is_available=storage)
    assert resolution.data_in == {"input": [day(1, 7)], "today": [day(1, 10)]}
    assert resolution.configuration == {
        "wfInput": day(1, 7), "today": day(1, 10), "created": "2009-01-09T23:00Z", "hours": "180",
    }
    assert {k: v for k, v in resolution.configuration.items() if k != "wfInput"} == {
        k: v for k, v in plan.configuration.items() if k != "wfInput"
    }
    assert all(uri != day(1, 10) for uri, _ in storage.asked)  # current() inputs are not searched


def test_each_uri_is_asked_about_once_and_with_the_done_flag() -> None:
    """Two searches over the same instances ask storage once per URI; the dataset's done-flag goes along."""
    inputs = (
        '<data-in name="input" dataset="flags"><instance>${coord:latest(0)}</instance></data-in>'
        '<data-in name="other" dataset="flags"><instance>${coord:latest(-1)}</instance></data-in>'
    )
    resolved, plan = prepare(inputs, "2009-01-10T00:00Z", "2009-01-10T00:00Z")
    storage = Storage(LATEST_LISTING)
    resolution = resolve_at_start(resolved, plan, actual_time=P("2009-01-10T00:00Z"), is_available=storage)
    assert resolution.data_in == {"input": [day(1, 10)], "other": [day(1, 7)]}
    assert len(storage.asked) == len(set(storage.asked)) == 4  # 10, 09, 08, 07
    assert {flag for _, flag in storage.asked} == {"ready"}


def test_recorded_answers_are_looked_up_in_blocks_and_storage_is_asked_about_the_rest_one_by_one() -> None:
    """Split in two, the check finds what was recorded in a few looks; storage only for the rest; the same answers."""
    inputs = (
        '<data-in name="input" dataset="flags"><instance>${coord:latest(-2)}</instance></data-in>'
        '<data-in name="ahead" dataset="flags"><instance>${coord:future(1, 60)}</instance></data-in>'
    )
    # Recorded: the 10th and the 3rd of January, the 20th of February; on storage: the 5th of January and the 1st
    # of March. latest(-2) is the 3rd (10, 5, 3); future(1, 60) from the 10th is the 20th of February (10, 20).
    kept = {day(1, 10), day(1, 3), day(2, 20)}
    looks: list[list[tuple[str, str]]] = []
    storage = Storage({day(1, 5), day(3, 1)})

    def recorded(pairs: list[tuple[str, str]]) -> set[tuple[str, str]]:
        looks.append(pairs)
        return {pair for pair in pairs if pair[0] in kept}

    def everything(uri: str, flag: str) -> bool:
        raise AssertionError(f"asked about {uri} as a whole")

    resolved, plan = prepare(inputs, "2009-01-10T00:00Z", "2009-01-10T00:00Z")
    split = resolve_at_start(resolved, plan, actual_time=P("2009-01-10T00:00Z"), is_available=everything,
                             recorded=recorded, on_storage=storage)
    whole = resolve_at_start(resolved, plan, actual_time=P("2009-01-10T00:00Z"),
                             is_available=Storage(kept | storage.present))
    assert split.data_in == whole.data_in == {"input": [day(1, 3)], "ahead": [day(2, 20)]}
    asked = [uri for uri, _ in storage.asked]
    assert not set(asked) & kept, "storage is never asked about a recorded instance"
    assert asked[:7] == [day(1, d) for d in (9, 8, 7, 6, 5, 4)] + [day(1, 11)] and asked[-1] == day(2, 19)
    assert len(set(asked)) == len(asked) == 6 + 40  # 11 January to 19 February
    # latest: one look at 10 down to 3; future: blocks of 8 (less the 10th, known), 16 and 32 instances.
    assert [len(pairs) for pairs in looks] == [8, 7, 16, 32]


def test_a_plan_without_storage_inputs_is_returned_as_created() -> None:
    """Nothing deferred: the resolution is the plan's own values and storage is never asked."""
    resolved, plan = prepare(instances("${coord:current(0)}"), "2009-01-10T00:00Z", "2009-01-10T00:00Z")
    storage = Storage(())
    resolution = resolve_at_start(resolved, plan, actual_time=P("2009-01-10T00:00Z"), is_available=storage)
    assert (resolution.data_in, resolution.configuration, resolution.app_path) == (plan.data_in, plan.configuration, plan.app_path)
    assert storage.asked == []


def test_a_plan_rebuilt_from_stored_values_is_resolved_too() -> None:
    """The runtime may rebuild an ActionPlan from stored fields without `deferred`: expressions in data_in say it."""
    resolved, plan = prepare(instances("${coord:latest(0)}"), "2009-01-10T00:00Z", "2009-01-10T00:00Z")
    stored = ActionPlan(plan.number, plan.nominal_time, plan.data_in, plan.data_out, plan.app_path, plan.configuration)
    resolution = resolve_at_start(resolved, stored, actual_time=P("2009-01-10T00:00Z"), is_available=Storage(LATEST_LISTING))
    assert resolution.data_in == {"input": [day(1, 10)]}


def test_searches_are_bounded_by_max_instances() -> None:
    """latest looks back at most max_instances instances; bigger ranges or future limits are refused."""
    resolved, plan = prepare(instances("${coord:latest(0)}"), "2009-01-10T00:00Z", "2009-01-10T00:00Z")
    storage = Storage({day(1, 1)})
    bounded = resolve_at_start(resolved, plan, actual_time=P("2009-01-10T00:00Z"), is_available=storage, max_instances=5)
    assert bounded.unresolved == ("input",) and len(storage.asked) == 5
    resolved, plan = prepare(window("${coord:latest(-20)}", "${coord:latest(0)}"), "2009-01-10T00:00Z", "2009-01-10T00:00Z")
    with pytest.raises(DefinitionError, match="at most 10 are allowed"):
        resolve_at_start(resolved, plan, actual_time=P("2009-01-10T00:00Z"), is_available=Storage(()), max_instances=10)
    resolved, plan = prepare(instances("${coord:future(0, 1000000000)}"), "2009-01-10T00:00Z", "2009-01-10T00:00Z")
    with pytest.raises(DefinitionError, match="looks 1000000000 instances ahead"):
        resolve_at_start(resolved, plan, actual_time=P("2009-01-10T00:00Z"), is_available=Storage(()))


def test_arguments_known_only_at_start_are_checked_then() -> None:
    """coord:latest(n) with n computed from the action: an n > 0 is a DefinitionError naming the action."""
    resolved, plan = prepare(instances("${coord:latest(coord:hoursInDay(0))}"), "2009-01-10T00:00Z", "2009-01-10T00:00Z")
    with pytest.raises(DefinitionError, match=r"action 1 \(2009-01-10T00:00Z\) at start: .*n <= 0"):
        resolve_at_start(resolved, plan, actual_time=P("2009-01-10T00:00Z"), is_available=Storage(()))


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        pytest.param(instances("${coord:latest(1)}"), r"coord:latest\(n\) takes n <= 0", id="latest-positive"),
        pytest.param(instances("${coord:future(-1, 3)}"), "n >= 0 and limit > 0", id="future-negative"),
        pytest.param(instances("${coord:future(0, 0)}"), "n >= 0 and limit > 0", id="future-zero-limit"),
        pytest.param(window("${coord:latest(0)}", "${coord:latest(-2)}"), "start-instance .0. is after end-instance .-2.", id="latest-range-reversed"),
        pytest.param(window("${coord:current(-2)}", "${coord:latest(0)}"), "must both be coord:latest or both coord:future", id="range-mixes-current-and-latest"),
        pytest.param(window("${coord:latest(-2)}", "${coord:future(0, 3)}"), "must both be coord:latest or both coord:future", id="range-mixes-latest-and-future"),
    ],
)
def test_misused_storage_functions_are_refused_at_submission(inputs: str, message: str) -> None:
    """What can be known at submission is refused then, naming the event (Oozie E1010 for mixed ranges)."""
    with pytest.raises(DefinitionError, match=message):
        resolve_coordinator(parse_coordinator(app(inputs), "c.xml"), {}, user="joe")


def test_latest_in_a_data_out_is_refused_at_submission() -> None:
    """An output is a new instance the action writes: latest/future (which search for existing ones) do not apply."""
    outputs = '<output-events><data-out name="out" dataset="logs"><instance>${coord:latest(0)}</instance></data-out></output-events>'
    with pytest.raises(DefinitionError, match="<event out>: coord:latest/coord:future resolve input events only"):
        resolve_coordinator(parse_coordinator(app(instances("${coord:current(0)}"), outputs=outputs), "c.xml"), {}, user="joe")


def test_latest_in_the_configuration_is_refused_at_submission() -> None:
    """coord:latest needs a dataset: only data-in instances may use it; the configuration uses coord:dataIn."""
    xml = app(instances("${coord:current(0)}"), extra="<property><name>x</name><value>${coord:latest(0)}</value></property>")
    with pytest.raises(DefinitionError, match="<property x>: coord:latest/coord:future belong in a data-in"):
        resolve_coordinator(parse_coordinator(xml, "c.xml"), {}, user="joe")


def test_dry_run_shape_is_unchanged_for_deferred_inputs() -> None:
    """The plan (and dry-run JSON) keeps latest/future as their expressions; only the start resolver fills them."""
    _, plan = prepare(window("${coord:latest(-2)}", "${coord:latest(0)}"), "2009-01-10T00:00Z", "2009-01-10T00:00Z")
    assert plan.as_json()["data_in"] == {"input": ["${coord:latest(-2)}", "${coord:latest(0)}"]}
    assert plan.as_json()["configuration"] == {"wfInput": "${coord:dataIn('input')}"}
