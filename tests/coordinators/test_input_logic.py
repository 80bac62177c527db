"""Input logic (schema 0.5, reference 6.10): every example of the section, evaluated without storage or clock.

Availability is a set of URIs; the time waited is a timedelta. An example that cannot be
valid as printed (unquoted attributes, an event the example never defines, a typo in the
propagated min) is tested as refused, then with the smallest fix (ADR 0004, issue 16).
"""

from __future__ import annotations

import getpass
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from coordinators.dryrun import as_text, dryrun
from coordinators.plan import (
    ResolvedCoordinator,
    logic_outcome,
    plan_action,
    resolve_coordinator,
    resolve_when_ready,
)
from coordinators.plan.logic import MISSING, SATISFIED, WAITING, Outcome
from coordinators.plan.materialize import ActionPlan
from oozie.definitions import DefinitionError, MalformedXMLError, parse_coordinator

NOW = datetime(2026, 1, 1, tzinfo=UTC)
ROOT = "hdfs://nn:8020/data"


def app(logic: str, *, events: Iterable[str] = "ABCD", configuration: str = "", version: str = "0.5") -> str:
    """The example of 6.10: 20-minute datasets, data-ins current(-5)..current(-1), an hourly job at 2010-01-01T01:00Z."""
    datasets = "".join(
        f"""<dataset name="dataset_{e.lower()}" frequency="${{coord:minutes(20)}}" initial-instance="2010-01-01T00:00Z"
              timezone="UTC"><uri-template>{ROOT}/{e.lower()}/${{HOUR}}${{MINUTE}}</uri-template></dataset>"""
        for e in events
    )
    inputs = "".join(
        f"""<data-in name="{e}" dataset="dataset_{e.lower()}"><start-instance>${{coord:current(-5)}}</start-instance>
              <end-instance>${{coord:current(-1)}}</end-instance></data-in>"""
        for e in events
    )
    conf = configuration or "<property><name>x</name><value>y</value></property>"
    return f"""<coordinator-app name="logic" frequency="${{coord:hours(1)}}" start="2010-01-01T02:00Z"
        end="2010-01-01T03:00Z" timezone="UTC" xmlns="uri:oozie:coordinator:{version}">
      <datasets>{datasets}</datasets>
      <input-events>{inputs}</input-events>
      <input-logic>{logic}</input-logic>
      <action><workflow><app-path>task:examples.noop</app-path><configuration>{conf}</configuration></workflow></action>
    </coordinator-app>"""


def uris(event: str, *minutes: int) -> list[str]:
    """URIs of event's instances at these minutes after 00:00 (the window of the 02:00 action is 00:20..01:40)."""
    return [f"{ROOT}/{event.lower()}/{m // 60:02d}{m % 60:02d}" for m in minutes]


WINDOW = (20, 40, 60, 80, 100)  # current(-5)..current(-1) of the 02:00 action, oldest first


def resolve(xml: str, properties: dict[str, str] | None = None) -> ResolvedCoordinator:
    return resolve_coordinator(parse_coordinator(xml, "c.xml"), properties or {}, user="ann")


def state(resolved: ResolvedCoordinator, available: Iterable[str], waited: int | None = 0) -> tuple[Outcome, ActionPlan]:
    """The logic's state for action 1 when `available` URIs exist and `waited` minutes have passed."""
    plan = plan_action(resolved, 1, now=NOW)
    have = set(available)
    outcome = logic_outcome(
        resolved, plan.data_in, is_available=lambda uri, flag: uri in have,
        waited=None if waited is None else timedelta(minutes=waited),
    )
    return outcome, plan


def data_in(resolved: ResolvedCoordinator, available: Iterable[str], name: str) -> str:
    """coord:dataIn(name) once the action is ready (a property `v` holds it)."""
    plan = plan_action(resolved, 1, now=NOW)
    have = set(available)
    result = resolve_when_ready(resolved, plan, actual_time=NOW, is_available=lambda uri, flag: uri in have)
    return result.configuration["v"]


def conf(name: str) -> str:
    return f"<property><name>v</name><value>${{coord:dataIn('{name}')}}</value></property>"


def test_window_of_the_example() -> None:
    """The example's data-ins resolve to five 20-minute instances, oldest first (the action at 02:00)."""
    plan = plan_action(resolve(app('<data-in dataset="A"/>')), 1, now=NOW)
    assert plan.data_in["A"] == uris("A", *WINDOW)


# --- example 1: <or name="AorB"> A, B -------------------------------------------------------------

OR_AB = '<or name="AorB"><data-in dataset="A"/><data-in dataset="B"/></or>'


@pytest.mark.parametrize(
    ("available", "status", "chosen"),
    [
        pytest.param(uris("A", *WINDOW), SATISFIED, "A", id="a-complete"),
        pytest.param(uris("B", *WINDOW), SATISFIED, "B", id="only-b-complete"),
        pytest.param(uris("A", *WINDOW) + uris("B", *WINDOW), SATISFIED, "A", id="both-a-has-precedence"),
        pytest.param(uris("A", *WINDOW[:4]) + uris("B", *WINDOW[1:]), MISSING, None, id="neither-complete"),
    ],
)
def test_or_is_satisfied_by_the_first_complete_data_in(available: list[str], status: str, chosen: str | None) -> None:
    """Example 1: the action runs as soon as A or B is available; A is checked first (defined first)."""
    resolved = resolve(app(OR_AB, configuration=conf("AorB")))
    outcome, _ = state(resolved, available)
    assert outcome.status == status
    if chosen is not None:
        assert list(outcome.uris) == uris(chosen, *WINDOW)
        assert data_in(resolved, available, "AorB") == ",".join(uris(chosen, *WINDOW))
    else:
        assert outcome.uris == ()
        # what it waits for: the missing instances of both branches
        assert set(outcome.waiting_for) == {("A", uris("A", 100)[0]), ("B", uris("B", 20)[0])}


# --- example 2: <or name="AorBorC"> A wait 60, B wait 90, C ---------------------------------------

OR_WAITS = '<or name="AorBorC"><data-in dataset="A" wait="60"/><data-in dataset="B" wait="90"/><data-in dataset="C"/></or>'


@pytest.mark.parametrize(
    ("available", "waited", "status", "chosen", "waiting_on"),
    [
        pytest.param("C", 30, WAITING, None, "A", id="c-ready-but-a-still-has-its-60-minutes"),
        pytest.param("A", 30, SATISFIED, "A", None, id="a-within-its-wait"),
        pytest.param("BC", 59, WAITING, None, "A", id="b-and-c-ready-a-minute-before-a-wait-ends"),
        pytest.param("BC", 60, SATISFIED, "B", None, id="a-wait-over-b-is-next"),
        pytest.param("C", 70, WAITING, None, "B", id="then-b-for-another-30-minutes"),
        pytest.param("C", 90, SATISFIED, "C", None, id="both-waits-over-c"),
        pytest.param("", 200, MISSING, None, None, id="nothing-after-every-wait"),
    ],
)
def test_or_with_waits_gives_each_source_its_time(
    available: str, waited: int, status: str, chosen: str | None, waiting_on: str | None
) -> None:
    """Example 2: wait 60 min (from the nominal or creation time, the later) for A, then until 90 for B, then C."""
    resolved = resolve(app(OR_WAITS))
    have = [uri for event in available for uri in uris(event, *WINDOW)]
    outcome, _ = state(resolved, have, waited)
    assert outcome.status == status
    if chosen is not None:
        assert list(outcome.uris) == uris(chosen, *WINDOW)
    if waiting_on is not None:
        assert {event for event, _ in outcome.waiting_for} == {waiting_on}
        assert outcome.wake_after == (60 if waiting_on == "A" else 90)


# --- example 3 and the last one: <or> of named <and>s, coord:dataIn of each name --------------------

NESTED = ('<or><and name="AorB"><data-in dataset="A"/><data-in dataset="B"/></and>'
          '<and name="CorD"><data-in dataset="C"/><data-in dataset="D"/></and></or>')


def test_nested_example_as_printed_is_refused() -> None:
    """Example 3 defines data-ins A and B only; its logic also reads C and D: refused, naming the event."""
    with pytest.raises(DefinitionError, match=r"dataset='C'.*names no input event.*A, B"):
        resolve(app(NESTED, events="AB"))


@pytest.mark.parametrize(
    ("available", "status", "aorb", "cord"),
    [
        pytest.param("AB", SATISFIED, "AB", "", id="a-and-b"),
        pytest.param("CD", SATISFIED, "", "CD", id="c-and-d"),
        pytest.param("ABCD", SATISFIED, "AB", "CD", id="all-four"),
        pytest.param("AC", MISSING, "", "", id="a-and-c-only"),
    ],
)
def test_or_of_ands_and_data_in_of_each_name(available: str, status: str, aorb: str, cord: str) -> None:
    """Example 3 (C, D defined) and the last example: A and B, or C and D; coord:dataIn(name) gives what satisfied it.

    A named node that is not satisfied on its own gives '' (Oozie echoes `${coord:dataIn('CorD')}`).
    """
    resolved = resolve(app(NESTED, configuration=conf("AorB") + conf("CorD").replace(">v<", ">w<")))
    have = [uri for event in available for uri in uris(event, *WINDOW)]
    outcome, plan = state(resolved, have)
    assert outcome.status == status
    assert plan.configuration == {"v": "${coord:dataIn('AorB')}", "w": "${coord:dataIn('CorD')}"}
    if status == SATISFIED:
        ready = resolve_when_ready(resolved, plan, actual_time=NOW, is_available=lambda uri, flag: uri in set(have))
        expected = {"v": aorb, "w": cord}
        assert ready.configuration == {
            key: ",".join(uri for event in events for uri in uris(event, *WINDOW)) for key, events in expected.items()
        }
        first = aorb or cord
        assert list(outcome.uris) == [uri for event in first for uri in uris(event, *WINDOW)]


def test_last_example_unquoted_data_in_argument_is_refused_then_works_quoted() -> None:
    """The last example writes `${coord:dataIn(AorB)}`: AorB is then an EL variable, unresolved: refused; quoted works."""
    with pytest.raises(DefinitionError, match="unresolved variable.*AorB"):
        resolve(app(NESTED, configuration="<property><name>v</name><value>${coord:dataIn(AorB)}</value></property>"))
    resolved = resolve(app(NESTED, configuration=conf("AorB")))
    assert data_in(resolved, uris("A", *WINDOW) + uris("B", *WINDOW), "AorB").count(",") == 9


# --- example 4: combine -----------------------------------------------------------------------------

COMBINE = '<combine name="AorB"><data-in dataset="A"/><data-in dataset="B"/></combine>'


def test_combine_takes_what_a_misses_from_b() -> None:
    """Example 4: instances missing from A are looked for in B, position by position; the result keeps the order."""
    resolved = resolve(app(COMBINE, configuration=conf("AorB")))
    have = uris("A", 20, 40, 100) + uris("B", 60, 80, 100)
    outcome, _ = state(resolved, have)
    assert outcome.status == SATISFIED
    assert list(outcome.uris) == uris("A", 20, 40) + uris("B", 60, 80) + uris("A", 100)
    assert data_in(resolved, have, "AorB") == ",".join(outcome.uris)


def test_combine_waits_while_a_position_is_missing_everywhere() -> None:
    """A position available in neither data-in: not satisfied; the action waits for either URI of it."""
    outcome, _ = state(resolve(app(COMBINE)), uris("A", 20, 40, 60) + uris("B", 100))
    assert outcome.status == MISSING
    assert set(outcome.waiting_for) == {("A", uris("A", 80)[0]), ("B", uris("B", 80)[0])}


def test_combine_with_min_counts_positions() -> None:
    """Oozie's testCombineWithMin: combine min 4 is satisfied by four positions from A and B together."""
    outcome, _ = state(resolve(app(COMBINE.replace('name="AorB"', 'name="AorB" min="4"'))), uris("A", 20, 40) + uris("B", 60, 80))
    assert outcome.status == SATISFIED and len(outcome.uris) == 4


def test_combine_of_unequal_ranges_is_refused_when_the_action_is_planned() -> None:
    """"All datasets in combine should have the same range": a dry-run refuses the action in one line."""
    xml = app(COMBINE).replace("${coord:current(-5)}</start-instance>", "${coord:current(-4)}</start-instance>", 1)
    with pytest.raises(DefinitionError, match=r"action 1 .*combine\(A, B\) needs the same number of instances in each \(A 4, B 5\)"):
        plan_action(resolve(xml), 1, now=NOW)


def test_combine_refuses_latest_and_future() -> None:
    """"Combine does not support latest and future EL functions": refused at submission."""
    xml = app(COMBINE).replace(
        "<start-instance>${coord:current(-5)}</start-instance>\n              <end-instance>${coord:current(-1)}</end-instance>",
        "<start-instance>${coord:latest(-4)}</start-instance><end-instance>${coord:latest(0)}</end-instance>", 1,
    )
    with pytest.raises(DefinitionError, match=r"combine does not support coord:latest/coord:future.*used by A"):
        resolve(xml)


def test_combine_cannot_be_nested_or_hold_one_data_in() -> None:
    """"Combine cannot also be nested": two or more data-ins and nothing else (the XSD says so too)."""
    with pytest.raises(DefinitionError, match="Element 'or': This element is not expected"):
        parse_coordinator(app('<combine><or><data-in dataset="A"/><data-in dataset="B"/></or></combine>'), "c.xml")
    with pytest.raises(DefinitionError, match="combine"):
        parse_coordinator(app('<combine><data-in dataset="A"/></combine>'), "c.xml")


# --- examples 5 and 6: min ----------------------------------------------------------------------------


def test_min_examples_as_printed_are_not_xml() -> None:
    """Examples 5 and 6 write `min=2` without quotes: not well-formed XML, refused by the parser."""
    with pytest.raises(MalformedXMLError):
        parse_coordinator(app('<data-in dataset="A" min=2/>'), "c.xml")
    with pytest.raises(MalformedXMLError):
        parse_coordinator(app('<or name="AorB" min=2><data-in dataset="A"/><data-in dataset="B"/></or>'), "c.xml")


@pytest.mark.parametrize(
    ("available", "status"),
    [
        pytest.param(uris("A", 20, 100), SATISFIED, id="two-of-five-with-a-gap"),
        pytest.param(uris("A", *WINDOW), SATISFIED, id="all"),
        pytest.param(uris("A", 60), MISSING, id="one"),
    ],
)
def test_min_on_a_data_in(available: list[str], status: str) -> None:
    """Example 5 (quoted): the action runs when at least 2 instances of A are available; those are its URIs."""
    outcome, _ = state(resolve(app('<data-in name="two" dataset="A" min="2"/>')), available)
    assert outcome.status == status
    assert list(outcome.uris) == (available if status == SATISFIED else [])


def test_min_zero_is_always_satisfied() -> None:
    """Oozie's testAndWithMin: min 0 makes a data-in optional (whatever is there is passed on)."""
    logic = '<and><data-in dataset="A" min="2"/><data-in dataset="B" min="3"/><data-in dataset="C" min="0"/></and>'
    outcome, _ = state(resolve(app(logic)), uris("A", 20, 40) + uris("B", 60, 80, 100))
    assert outcome.status == SATISFIED and len(outcome.uris) == 5


def test_min_on_an_or_applies_to_each_child() -> None:
    """Example 6 (quoted): A with 2 or more, else B with 2 or more; A has 1, B has 2: B's two."""
    resolved = resolve(app('<or name="AorB" min="2"><data-in dataset="A"/><data-in dataset="B"/></or>'))
    outcome, _ = state(resolved, uris("A", 20) + uris("B", 40, 60))
    assert outcome.status == SATISFIED and list(outcome.uris) == uris("B", 40, 60)


# --- examples 7 and 8: min with wait --------------------------------------------------------------


@pytest.mark.parametrize(
    ("available", "waited", "status", "found"),
    [
        pytest.param(uris("A", 20, 40), 5, WAITING, [], id="minimum-there-waiting-for-more"),
        pytest.param(uris("A", 20, 40) + uris("B", *WINDOW), 5, WAITING, [], id="b-complete-does-not-jump-the-wait"),
        pytest.param(uris("A", 20, 40, 60), 10, SATISFIED, uris("A", 20, 40, 60), id="after-10-minutes-what-came"),
        pytest.param(uris("A", *WINDOW), 1, SATISFIED, uris("A", *WINDOW), id="complete-ends-the-wait"),
        pytest.param(uris("A", 20) + uris("B", 40, 60), 10, SATISFIED, uris("B", 40, 60), id="a-short-then-b"),
    ],
)
def test_wait_with_min_collects_more_than_the_minimum(available: list[str], waited: int, status: str, found: list[str]) -> None:
    """Example 7: with min 2, A waits 10 minutes more to include instances that become available meanwhile."""
    resolved = resolve(app('<or name="AorB" min="2"><data-in dataset="A" wait="10"/><data-in dataset="B"/></or>'))
    outcome, _ = state(resolved, available, waited)
    assert outcome.status == status
    assert list(outcome.uris) == found


def test_min_and_wait_on_the_parent_propagate_and_the_printed_2_is_a_typo() -> None:
    """Example 8: min 5 wait 10 on the <or> is A and B each with min 5, wait 10 (the text says min = 2: a typo)."""
    resolved = resolve(app('<or name="AorB" min="5" wait="10"><data-in dataset="A"/><data-in dataset="B"/></or>'))
    assert resolved.logic is not None
    assert [(n.events, n.min, n.wait) for n in resolved.logic.children] == [(("A",), 5, 10), (("B",), 5, 10)]
    two = uris("A", 20, 40)  # enough for a min of 2, not of 5
    assert state(resolved, two, 30)[0].status == MISSING
    assert state(resolved, uris("B", *WINDOW), 5)[0].status == WAITING  # A's wait runs first
    assert state(resolved, uris("B", *WINDOW), 10)[0].uris == tuple(uris("B", *WINDOW))


def test_a_child_overrides_what_its_parent_propagates() -> None:
    """A data-in's own min and wait win over its ancestors', however deep (Oozie loses them below two levels)."""
    resolved = resolve(app(
        '<or min="3" wait="10"><and><data-in dataset="A" min="1"/><data-in dataset="B"/></and><data-in dataset="C" wait="0"/></or>'
    ))
    assert resolved.logic is not None
    leaves = [(n.events, n.min, n.wait) for n in resolved.logic.walk() if n.kind == "data-in"]
    assert leaves == [(("A",), 1, 10), (("B",), 3, 10), (("C",), 3, 0)]


# --- submission: names, numbers, structure ----------------------------------------------------------


def test_names_min_and_wait_come_from_job_properties() -> None:
    """As in Oozie's testWaitFail: `min="${min}" wait="${wait}"`, `dataset="${dataA}"`, a name from a property."""
    resolved = resolve(
        app('<or name="${logicName}" min="${min}" wait="${wait}"><data-in dataset="${dataA}"/><data-in dataset="B"/></or>'),
        {"logicName": "either", "min": "4", "wait": "180", "dataA": "A"},
    )
    assert resolved.logic is not None and resolved.logic_names == ("either",)
    assert [(n.events, n.min, n.wait) for n in resolved.logic.children] == [(("A",), 4, 180), (("B",), 4, 180)]


@pytest.mark.parametrize(
    ("logic", "properties", "message"),
    [
        pytest.param('<data-in dataset="A" min="${m}"/>', {"m": "two"}, r"min takes an integer, got 'two'.*property 'm' is 'two'", id="min-not-a-number"),
        pytest.param('<data-in dataset="A" wait="-5"/>', {}, r"wait must be 0 or more, got -5", id="negative-wait"),
        pytest.param('<data-in dataset="A" wait="1.5"/>', {}, r"wait takes an integer", id="fractional-wait"),
        pytest.param('<data-in dataset="Z"/>', {}, r"'Z'.*names no input event.*A, B, C, D", id="unknown-event"),
        pytest.param('<or name="A"><data-in dataset="A"/><data-in dataset="B"/></or>', {}, r"name 'A' is already an event's name", id="name-is-an-event"),
        pytest.param('<or name="x"><data-in name="x" dataset="A"/><data-in dataset="B"/></or>', {}, r"name 'x' is used twice", id="name-twice"),
        pytest.param('<combine><data-in dataset="A" min="1"/><data-in dataset="B"/></combine>', {}, r"min and wait go on <combine>", id="min-inside-combine"),
    ],
)
def test_bad_logic_is_refused_at_submission(logic: str, properties: dict[str, str], message: str) -> None:
    """A logic that cannot work is a one-line refusal naming the element (and the property a bad number came from)."""
    with pytest.raises(DefinitionError, match=message) as caught:
        resolve(app(logic), properties)
    assert caught.value.element == "input-logic"


@pytest.mark.parametrize(
    ("logic", "message"),
    [
        pytest.param('<data-in dataset="A"/><data-in dataset="B"/>', "holds one <and>, <or>, <combine> or <data-in>", id="two-roots"),
        pytest.param("", "got 0", id="empty"),
        pytest.param("<or></or>", "names no data-in", id="empty-or"),
        pytest.param("<and>" * 40 + '<data-in dataset="A"/>' + "</and>" * 40, "nested deeper than 32", id="too-deep"),
    ],
)
def test_malformed_logic_is_refused_when_parsed(logic: str, message: str) -> None:
    """Oozie would turn these into an invalid expression or evaluate nothing; here a one-line refusal."""
    with pytest.raises(DefinitionError, match=message):
        parse_coordinator(app(logic), "c.xml")


def test_inputs_the_logic_does_not_name_are_not_required() -> None:
    """Only what the logic reads decides readiness (Oozie evaluates the logic alone); the others still feed coord:dataIn."""
    resolved = resolve(app('<data-in dataset="A"/>', configuration=conf("B")))
    outcome, plan = state(resolved, uris("A", *WINDOW))
    assert outcome.satisfied and plan.configuration == {"v": ",".join(uris("B", *WINDOW))}


def test_latest_inputs_count_as_missing_until_resolved() -> None:
    """A coord:latest data-in in an <or> is not available while it is still an expression; the other branch can win."""
    xml = app(OR_AB).replace(
        "<start-instance>${coord:current(-5)}</start-instance>\n              <end-instance>${coord:current(-1)}</end-instance>",
        "<instance>${coord:latest(0)}</instance>", 1,
    )
    resolved = resolve(xml)
    outcome, plan = state(resolved, [*plan_action(resolved, 1, now=NOW).data_in["A"], *uris("B", *WINDOW)])
    assert plan.data_in["A"] == ["${coord:latest(0)}"]
    assert outcome.satisfied and list(outcome.uris) == uris("B", *WINDOW)


def test_min_with_latest_is_refused() -> None:
    """min on a coord:latest/future data-in is refused (they resolve all or nothing at start; ADR 0004)."""
    xml = app('<data-in dataset="A" min="1"/>').replace(
        "<start-instance>${coord:current(-5)}</start-instance>\n              <end-instance>${coord:current(-1)}</end-instance>",
        "<instance>${coord:latest(0)}</instance>", 1,
    )
    with pytest.raises(DefinitionError, match="min is not supported with coord:latest"):
        resolve(xml)


# --- dry-run --------------------------------------------------------------------------------------


def test_oozie_example_app_dry_runs(tmp_path: Path) -> None:
    """Oozie's coord-input-logic app, refused before ("no event named 'input'"): dry-run shows the logic, dataIn waits."""
    (tmp_path / "coordinator.xml").write_text(EXAMPLE_APP)
    (tmp_path / "job.properties").write_text(
        "nameNode=hdfs://localhost:9000\nexamplesRoot=examples\nqueueName=default\n"
        "oozie.coord.application.path=coordinator.xml\nstart=2010-01-01T01:00Z\nend=2010-01-01T03:00Z\n"
        f"user.name={getpass.getuser()}\n"
    )
    result = dryrun(tmp_path / "job.properties", now=NOW, max_actions=10)
    first = result["actions"][0]
    assert len(result["actions"]) == 2
    assert first["configuration"]["inputData"] == "${coord:dataIn('input')}"
    assert first["input_logic"]["requires"] == "input=(input-1 or input-2)"
    assert first["input_logic"]["tree"]["children"][0] == {"kind": "data-in", "data_in": ["input-1"]}
    assert len(first["data_in"]["input-1"]) == 3
    assert "input-logic: ready when input=(input-1 or input-2)" in as_text(result)


#: Oozie's examples/apps/coord-input-logic/coordinator.xml (license header dropped).
EXAMPLE_APP = """<coordinator-app name="coord-input-logic" frequency="${coord:hours(1)}" start="${start}" end="${end}" timezone="UTC"
    xmlns="uri:oozie:coordinator:0.5">
    <controls><concurrency>1</concurrency></controls>
    <datasets>
        <dataset name="data-1" frequency="${coord:minutes(20)}" initial-instance="2010-01-01T00:00Z" timezone="UTC">
            <uri-template>${nameNode}/user/${coord:user()}/${examplesRoot}/input-data/rawLogs/${YEAR}/${MONTH}/${DAY}/${HOUR}/${MINUTE}</uri-template>
        </dataset>
        <dataset name="data-2" frequency="${coord:minutes(20)}" initial-instance="2010-01-01T00:00Z" timezone="UTC">
            <uri-template>${nameNode}/user/${coord:user()}/${examplesRoot}/input-data/rawLogs-2/${YEAR}/${MONTH}/${DAY}/${HOUR}/${MINUTE}</uri-template>
        </dataset>
        <dataset name="output" frequency="${coord:hours(1)}" initial-instance="2010-01-01T01:00Z" timezone="UTC">
            <uri-template>${nameNode}/user/${coord:user()}/${examplesRoot}/output-data/inputLogic/${YEAR}/${MONTH}/${DAY}/${HOUR}</uri-template>
        </dataset>
    </datasets>
    <input-events>
        <data-in name="input-1" dataset="data-1">
            <start-instance>${coord:current(-2)}</start-instance>
            <end-instance>${coord:current(0)}</end-instance>
        </data-in>
        <data-in name="input-2" dataset="data-2">
            <start-instance>${coord:current(-2)}</start-instance>
            <end-instance>${coord:current(0)}</end-instance>
        </data-in>
    </input-events>
    <input-logic>
        <or name="input">
              <data-in dataset="input-1"/>
              <data-in dataset="input-2"/>
        </or>
    </input-logic>
    <output-events>
        <data-out name="output" dataset="output">
            <instance>${coord:current(0)}</instance>
        </data-out>
    </output-events>
    <action>
        <workflow>
            <app-path>${nameNode}/user/${coord:user()}/${examplesRoot}/apps/coord-input-logic</app-path>
            <configuration>
                <property><name>nameNode</name><value>${nameNode}</value></property>
                <property><name>queueName</name><value>${queueName}</value></property>
                <property><name>outputData</name><value>${coord:dataOut('output')}</value></property>
                <property><name>inputData</name><value>${coord:dataIn('input')}</value></property>
            </configuration>
        </workflow>
    </action>
</coordinator-app>"""


def test_schema_0_4_has_no_input_logic() -> None:
    """<input-logic> is new in 0.5: older schemas refuse it (XSD)."""
    with pytest.raises(DefinitionError, match="input-logic"):
        parse_coordinator(app(OR_AB, version="0.4"), "c.xml")
