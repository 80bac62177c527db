"""Random and hostile coord: expressions through submission, creation and start: a result or a DefinitionError, fast."""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinators.plan import plan_action, resolve_at_start, resolve_coordinator
from datasets.timeline import parse_datetime
from oozie.definitions import DefinitionError, parse_coordinator

NOW = parse_datetime("2026-01-01T00:00Z")

INTEGERS = st.one_of(
    st.integers(-30, 30), st.sampled_from([-(10**9), 10**9, -(2**63), 2**63 - 1, 10**18])
).map(str)
UNITS = st.sampled_from(["'MINUTE'", "'HOUR'", "DAY", "MONTH", "'YEAR'", "'WEEK'", "''", "1"])
TIMES = st.sampled_from(["'2009-01-01T00:00Z'", "coord:nominalTime()", "coord:actualTime()", "'junk'", "'9999-12-31T23:59Z'"])


@st.composite
def coord_expressions(draw: st.DrawFn, depth: int = 0) -> str:
    """Nested calls of the coord: library with awkward arguments."""
    number = draw(INTEGERS) if depth > 2 or draw(st.booleans()) else draw(coord_expressions(depth + 1))
    choices = [
        f"coord:current({number})",
        f"coord:offset({number}, {draw(UNITS)})",
        f"coord:hoursInDay({number})",
        f"coord:daysInMonth({number})",
        f"coord:latest({number})",
        f"coord:future({number}, {draw(INTEGERS)})",
        f"coord:endOfMonths({number})",
        f"coord:endOfDays({number})",
        f"coord:absolute({draw(TIMES)})",
        f"coord:dateOffset({draw(TIMES)}, {number}, {draw(UNITS)})",
        f"coord:formatTime({draw(TIMES)}, 'yyyy-MM-dd HH:mm')",
        f"coord:tzOffset() / {number}",
        f"-({number}) * coord:days(1)",
        f"{number} div 0",
        "coord:dataIn('in')",
        "coord:databaseIn('in')",
    ]
    return draw(st.sampled_from(choices))


def app(instance: str, start: str, end: str, value: str) -> str:
    return f"""<coordinator-app name="c" frequency="${{coord:hours(1)}}" start="2009-01-02T00:00Z" end="2009-01-02T03:00Z"
        timezone="America/New_York" xmlns="uri:oozie:coordinator:0.4">
      <datasets><dataset name="logs" frequency="${{coord:hours(1)}}" initial-instance="2009-01-01T00:00Z" timezone="Europe/London">
        <uri-template>hdfs://bar/logs/${{YEAR}}/${{MONTH}}/${{DAY}}/${{HOUR}}</uri-template></dataset></datasets>
      <input-events>
        <data-in name="in" dataset="logs"><instance>${{{instance}}}</instance></data-in>
        <data-in name="range" dataset="logs"><start-instance>${{{start}}}</start-instance><end-instance>${{{end}}}</end-instance></data-in>
      </input-events>
      <action><workflow><app-path>task:x</app-path><configuration>
        <property><name>p</name><value>${{{value}}}</value></property>
      </configuration></workflow></action>
    </coordinator-app>"""


def slot(*benign: str) -> st.SearchStrategy[str]:
    """Half the time a well-formed choice, so that the other slots' randomness reaches creation and start."""
    return st.one_of(st.sampled_from(benign), coord_expressions())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    slot("coord:current(0)", "coord:latest(-1)", "coord:future(1, 3)"),
    slot("coord:current(-2)", "coord:latest(-2)", "coord:future(0, 4)"),
    slot("coord:current(0)", "coord:latest(0)", "coord:future(2, 4)"),
    slot("coord:dataIn('in')", "coord:dataIn('range')", "coord:nominalTime()"),
)
def test_random_coord_expressions_give_a_plan_or_a_definition_error(instance: str, start: str, end: str, value: str) -> None:
    """Submission, creation and start never raise anything but DefinitionError, and each answers within seconds."""
    began = time.perf_counter()
    try:
        resolved = resolve_coordinator(parse_coordinator(app(instance, start, end, value), "fuzz.xml"), {}, user="ann")
        plan = plan_action(resolved, 1, now=NOW)
        resolve_at_start(resolved, plan, actual_time=NOW, is_available=lambda uri, flag: len(uri) % 3 == 0)
    except DefinitionError:
        pass
    assert time.perf_counter() - began < 5
