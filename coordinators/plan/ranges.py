"""Instance ranges that can never be right: reversed, or starting between a dataset's instances (issue 16).

Oozie refuses a `<start-instance>` that resolves later than its `<end-instance>` ("start-instance
should be equal or earlier than the end-instance", CoordCommandUtils.resolveInstanceRange) and
a coord:absolute or endOf* start that is not one of the dataset's instances ("initial-instance
is not in phase with start-instance", CoordELFunctions.ph2_coord_absolute_range), both E1010.
What submission can already tell is refused then (`check_literal_ranges`); the rest when each
action is created (`check_order`, DatasetTimeline.exact_index), and that action FAILS with the
message: it never runs with an empty or clipped input.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from datasets.timeline import DatasetTimeline, TimelineError, format_datetime, parse_datetime
from oozie.definitions import DataIn
from oozie.el import ELContext, ELError, evaluate_node, parse_template, to_integer
from oozie.el.nodes import Call, Literal, Node, Variable
from oozie.el.template import Expression

REVERSED = "start-instance should be equal or earlier than the end-instance"
#: Instance functions whose instance grows with their (only) integer argument.
ORDERED_BY_ARGUMENT = frozenset({"coord:current", "coord:endOfDays", "coord:endOfWeeks", "coord:endOfMonths"})
OFFSET_UNITS = frozenset({"MINUTE", "HOUR", "DAY", "MONTH", "YEAR"})
#: How an instance function's context names its role, and how Oozie's messages name it.
ROLE_NAMES = {"start": "start-instance", "end": "end-instance"}


def role_name(role: Any) -> str:
    """`start-instance`, `end-instance` or `instance`, for messages."""
    return ROLE_NAMES.get(str(role), "instance")


def _only_call(text: str | None) -> tuple[Call, str] | None:
    """The call a bound consists of (`${coord:current(-1)}`), or None for anything else."""
    segments = parse_template((text or "").strip())
    if len(segments) != 1 or not isinstance(segments[0], Expression):
        return None
    node = segments[0].node
    return (node, segments[0].source) if isinstance(node, Call) else None


def _known(node: Node, ctx: ELContext, source: str) -> Any:
    """An argument's value when submission knows it (a literal, a job property), else None."""
    try:
        return evaluate_node(node, ctx, source)
    except (ELError, TimelineError):  # depends on the action (coord:hoursInDay ...): checked at creation
        return None


def _integer(node: Node, ctx: ELContext, source: str) -> int | None:
    value = _known(node, ctx, source)
    if value is None:
        return None
    try:
        return to_integer(value, source)
    except ELError:
        return None


def _unit(node: Node, ctx: ELContext, source: str) -> str | None:
    """coord:offset's unit, written as a bare name (DAY) or a string ('DAY')."""
    if isinstance(node, Variable):
        name: Any = node.name
    elif isinstance(node, Literal):
        name = node.value
    else:
        name = _known(node, ctx, source)
    text = name.strip().upper() if isinstance(name, str) else ""
    return text if text in OFFSET_UNITS else None


def _absolute(call: Call, ctx: ELContext, source: str) -> datetime | None:
    value = _known(call.args[0], ctx, source) if len(call.args) == 1 else None
    if value is None:
        return None
    try:
        return parse_datetime(str(value).strip())
    except TimelineError:
        return None  # creation reports it with the action


def _is_reversed(start: tuple[Call, str], end: tuple[Call, str], ctx: ELContext) -> bool:
    """Whether two bounds of the same function are reversed whatever the nominal time."""
    (first, first_source), (last, last_source) = start, end
    if first.name != last.name or len(first.args) != len(last.args):
        return False
    if first.name in ORDERED_BY_ARGUMENT and len(first.args) == 1:
        a, b = _integer(first.args[0], ctx, first_source), _integer(last.args[0], ctx, last_source)
        return a is not None and b is not None and a > b
    if first.name == "coord:offset" and len(first.args) == 2:
        unit = _unit(first.args[1], ctx, first_source)
        if unit is None or unit != _unit(last.args[1], ctx, last_source):
            return False  # different units: compared on the instances, at creation
        a, b = _integer(first.args[0], ctx, first_source), _integer(last.args[0], ctx, last_source)
        return a is not None and b is not None and a > b
    if first.name == "coord:absolute":
        x, y = _absolute(first, ctx, first_source), _absolute(last, ctx, last_source)
        return x is not None and y is not None and x > y
    return False


def check_literal_ranges(event: DataIn, ctx: ELContext, timeline: DatasetTimeline) -> str | None:
    """What submission can already tell is wrong with a data-in's instances: the message, or None.

    A coord:absolute with a known time must be one of the dataset's instances, not before the
    first; a range whose bounds call the same function with known arguments must not be reversed.
    """
    bounds = [
        *(("instance", text) for text in event.instances),
        ("start-instance", event.start_instance),
        ("end-instance", event.end_instance),
    ]
    for role, text in bounds:
        found = _only_call(text)
        if found is not None and found[0].name == "coord:absolute":
            moment = _absolute(found[0], ctx, found[1])
            if moment is not None:
                try:
                    timeline.exact_index(moment, role)
                except TimelineError as exc:
                    return str(exc)
    if not event.is_range:
        return None
    start, end = _only_call(event.start_instance), _only_call(event.end_instance)
    if start is not None and end is not None and _is_reversed(start, end, ctx):
        return f"{REVERSED}: {(event.start_instance or '').strip()} is later than {(event.end_instance or '').strip()}"
    return None


def _time(timeline: DatasetTimeline, index: int) -> str:
    try:
        return format_datetime(timeline.instance(index))
    except TimelineError:
        return f"instance {index}"


def check_order(event: DataIn, first: int, last: int, timeline: DatasetTimeline) -> None:
    """A range's resolved start must not be later than its end (TimelineError in Oozie's words otherwise)."""
    if first > last:
        raise TimelineError(
            f"event {event.name!r}: {REVERSED}: {(event.start_instance or '').strip()} resolves to "
            f"{_time(timeline, first)}, {(event.end_instance or '').strip()} to {_time(timeline, last)}"
        )
