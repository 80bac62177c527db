"""Numbers from properties are numbers (issue 16, item 4): JSP EL coercion wherever a number is needed.

Every job property and `<parameters>` default is a string. As in Oozie's EL (commons-el:
Long.valueOf for a string, "" is 0), a numeric string is a number in frequencies, instance
offsets, controls and function arguments; anything else is a one-line refusal naming the
property. A property's value is data: `${...}` inside it is never evaluated again.
"""

from __future__ import annotations

from typing import Any

import pytest

from coordinators.plan import ResolvedCoordinator
from datasets.timeline import Frequency
from oozie.definitions import DefinitionError
from oozie.el import (
    ELContext,
    ELEvaluationError,
    default_variables,
    evaluate,
    to_integer,
    to_number,
)
from tests.coordinators.plan.test_parameterized_attributes import app_xml, first_plan, resolve

Reader = Any


def same(frequency: Frequency) -> tuple[int, str]:
    """A frequency as (amount, unit): EL frequencies are a Frequency subclass that can be scaled."""
    return frequency.amount, frequency.unit.value


def same_as(frequency: Frequency) -> tuple[int, str]:
    return same(frequency)


def parameter(name: str, value: str) -> str:
    """A `<parameters>` block (schema 0.4) with one default."""
    return f"<parameters><property><name>{name}</name><value>{value}</value></property></parameters>"


CASES = [
    pytest.param("frequency", "${coord:hours(n)}", "3", lambda r: same(r.frequency), same_as(Frequency.hours(3)), id="frequency-hours"),
    pytest.param("frequency", "${coord:days(n)}", "2", lambda r: same(r.frequency), same_as(Frequency.days(2)), id="frequency-days"),
    pytest.param("frequency", "${coord:months(n)}", "+1", lambda r: same(r.frequency), same_as(Frequency.months(1)), id="frequency-signed"),
    pytest.param("frequency", "${n * 60}", "2", lambda r: same(r.frequency), same_as(Frequency.minutes(120)), id="frequency-arithmetic"),
    pytest.param("frequency", "${n / 2}", "120", lambda r: same(r.frequency), same_as(Frequency.minutes(60)), id="frequency-decimal-division"),
    pytest.param(
        "dataset-frequency", "${coord:minutes(n)}", "30",
        lambda r: same(r.datasets["logs"].timeline.frequency), same_as(Frequency.minutes(30)), id="dataset-frequency",
    ),
    pytest.param(
        "data-in-instance", "${coord:current(n)}", "-3",
        lambda r: first_plan(r).data_in["input"], ["hdfs://bar:8020/logs/2009/01/01/21"], id="current-offset",
    ),
    pytest.param(
        "data-in-instance", "${coord:offset(n, 'HOUR')}", "-2",
        lambda r: first_plan(r).data_in["input"], ["hdfs://bar:8020/logs/2009/01/01/22"], id="offset",
    ),
    pytest.param("timeout", "${n}", "15", lambda r: r.timeout, 15, id="timeout"),
    pytest.param("timeout", "${coord:hours(n)}", "2", lambda r: r.timeout, 120, id="timeout-as-a-period"),
    pytest.param("timeout", "${n / 2}", "10", lambda r: r.timeout, 5, id="timeout-whole-decimal"),
    pytest.param("timeout", "${n}", "", lambda r: r.timeout, -1, id="timeout-empty-is-the-default"),
    pytest.param("concurrency", "${n}", " 4 ", lambda r: r.concurrency, 4, id="concurrency-blanks"),
    pytest.param("throttle", "${n + 1}", "6", lambda r: r.throttle, 7, id="throttle-arithmetic"),
    pytest.param(
        "property-value", "${coord:hoursInDay(n)}", "0", lambda r: first_plan(r).configuration, {"input": "24"},
        id="function-argument",
    ),
]


@pytest.mark.parametrize(("key", "written", "value", "read", "expected"), CASES)
def test_numeric_property_is_a_number(key: str, written: str, value: str, read: Reader, expected: Any) -> None:
    """`${...}` reading a numeric job property works where a number is needed (the property is a string)."""
    assert read(resolve(app_xml({key: written}), {"n": value})) == expected


@pytest.mark.parametrize(("key", "written", "value", "read", "expected"), CASES)
def test_numeric_parameter_default_is_a_number(key: str, written: str, value: str, read: Reader, expected: Any) -> None:
    """The same from a `<parameters>` default (also a string)."""
    assert read(resolve(app_xml({key: written}, parameter("n", value)))) == expected


@pytest.mark.parametrize(
    ("key", "written", "value", "message"),
    [
        pytest.param("frequency", "${coord:hours(n)}", "three", r"coord:hours\(\) takes an integer, got 'three' \(property 'n' is 'three'\)", id="hours"),
        pytest.param("frequency", "${coord:days(n)}", "1.5", r"coord:days\(\) takes an integer.*not a whole number.*property 'n'", id="fraction"),
        pytest.param("frequency", "${n}", "hourly", r"frequency 'hourly' is not understood.*property 'n' is 'hourly'", id="frequency-text"),
        pytest.param("frequency", "${n * 60}", "x", r"cannot use 'x' as a number.*property 'n' is 'x'", id="arithmetic"),
        pytest.param("data-in-instance", "${coord:current(n)}", "last", r"coord:current\(\) takes an integer.*property 'n' is 'last'", id="offset"),
        pytest.param("timeout", "${n}", "soon", r"<timeout>: timeout must be an integer, got 'soon' \(property 'n' is 'soon'\)", id="timeout"),
        pytest.param("concurrency", "${n}", "2.5", r"concurrency must be an integer, got '2.5' \(property 'n' is '2.5'\)", id="concurrency"),
        pytest.param("throttle", "${n}", "true", r"throttle must be an integer.*property 'n' is 'true'", id="throttle"),
    ],
)
def test_non_numeric_property_is_refused_naming_it(key: str, written: str, value: str, message: str) -> None:
    """A string that is not a number (or a fraction where an integer is needed) is a one-line refusal naming the property.

    Instances are evaluated when an action is created (the dry-run's first action here).
    """
    with pytest.raises(DefinitionError, match=message) as caught:
        first_plan(resolve(app_xml({key: written}), {"n": value}))
    assert "\n" not in str(caught.value)


def test_nested_dollar_brace_is_refused_with_the_way_to_write_it() -> None:
    """`${coord:current(${off})}` is not EL (Oozie refuses it too); the message shows `${coord:current(off)}`."""
    with pytest.raises(DefinitionError, match=r"written bare inside \$\{\.\.\.\}: \$\{coord:current\(off\)\}"):
        resolve(app_xml({"data-in-instance": "${coord:current(${off})}"}), {"off": "-1"})


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("a${b}c", "a${b}c", id="unknown-variable"),
        pytest.param("${coord:user()}", "${coord:user()}", id="function-call"),
        pytest.param("${YEAR}", "${YEAR}", id="time-variable"),
        pytest.param("\\${x}", "\\${x}", id="backslash"),
    ],
)
def test_property_value_with_dollar_brace_is_text(value: str, expected: str) -> None:
    """A property whose value holds `${...}` is inserted as written, not evaluated again when the action is created.

    Oozie evaluates an expression once; its result is data (it used to fail here with
    "variable 'b' cannot be resolved" or resolve `coord:user()` at action creation).
    """
    resolved = resolve(app_xml({"property-value": "${q}", "app-path": "task:examples.noop"}), {"q": value})
    assert first_plan(resolved).configuration == {"input": expected}


def test_literal_escape_in_a_value_still_works() -> None:
    """`\\${x}` written in the definition is the text `${x}` in the action (unchanged behaviour)."""
    resolved: ResolvedCoordinator = resolve(app_xml({"property-value": "cost \\${x} ${q}"}), {"q": "${y}"})
    assert first_plan(resolved).configuration == {"input": "cost ${x} ${y}"}


# --- the coercion rules themselves -----------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("42", 42, id="string"),
        pytest.param(" -7 ", -7, id="blanks-and-sign"),
        pytest.param("", 0, id="empty-is-zero"),
        pytest.param(None, 0, id="null-is-zero"),
        pytest.param(3.0, 3, id="whole-decimal"),
        pytest.param("3.0", 3, id="whole-decimal-string"),
        pytest.param(default_variables()["HOUR"], 60, id="unit-constant"),
    ],
)
def test_to_integer(value: Any, expected: int) -> None:
    """JSP EL coercion to an integer argument (commons-el), whole decimals included."""
    assert to_integer(value, "x", "f()") == expected


@pytest.mark.parametrize("value", ["abc", "2.5", 2.5, True, "1e400", "0x10"])
def test_to_integer_refuses(value: Any) -> None:
    """Text, fractions and booleans are not integers (EL would truncate 2.5; we refuse)."""
    with pytest.raises(ELEvaluationError, match=r"f\(\) takes an integer"):
        to_integer(value, "x", "f()")


def test_to_number_empty_string_is_zero_and_decimals_stay() -> None:
    """EL: "" is 0; "2.5" is 2.5 in arithmetic (decimals where the operation takes them)."""
    assert to_number("", "x") == 0
    ctx = ELContext(variables={"n": "2.5", "e": ""})
    assert evaluate("${n * 2}", ctx) == 5.0
    assert evaluate("${e + 1}", ctx) == 1
    assert evaluate("${n > 2}", ctx) is True


# --- property values that name other properties (Hadoop Configuration expansion) ----------------


@pytest.mark.parametrize(
    ("properties", "parameters", "expected"),
    [
        pytest.param({"q": "${nameNode}/out", "nameNode": "hdfs://nn:8020"}, "", "hdfs://nn:8020/out", id="other-property"),
        pytest.param({"q": "${a}", "a": "${b}", "b": "deep"}, "", "deep", id="chain"),
        pytest.param({"q": "/home/${user.name}"}, "", "/home/ann", id="user-name-falls-back-to-the-user"),
        pytest.param({"q": "/home/${user.name}", "user.name": "joe"}, "", "/home/joe", id="user-name-property"),
        pytest.param({"nameNode": "hdfs://nn"}, parameter("q", "${nameNode}/default"), "hdfs://nn/default", id="parameter-default"),
        pytest.param({"q": "${a}-${missing}", "a": "x"}, "", "x-${missing}", id="unknown-stays-text"),
    ],
)
def test_property_values_name_other_properties(properties: dict[str, str], parameters: str, expected: str) -> None:
    """`out=${nameNode}/out` in job.properties reads as Oozie's Hadoop configuration reads it; the rest is text."""
    resolved = resolve(app_xml({"property-value": "${q}"}, parameters), properties)
    assert first_plan(resolved).configuration == {"input": expected}


def test_property_referring_to_itself_is_refused() -> None:
    """A cycle is refused in one line naming the property (Hadoop: "variable substitution depth too large")."""
    with pytest.raises(DefinitionError, match=r"property '(a|b)': variable substitution depth too large"):
        resolve(app_xml({"property-value": "${a}"}), {"a": "${b}", "b": "x${a}"})


def test_property_expanding_without_bound_is_refused() -> None:
    """References that double a value each round stop at a size limit instead of filling memory."""
    properties = {f"p{i}": f"${{p{i + 1}}}${{p{i + 1}}}" for i in range(19)} | {"p19": "x" * 1000}
    with pytest.raises(DefinitionError, match="expands to more than 100000 characters"):
        resolve(app_xml({"property-value": "${p0}"}), properties)
