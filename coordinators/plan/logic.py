"""Conditional input logic (schema 0.5, spec 6.10): resolved at submission, evaluated against availability.

Pure: availability comes in as a callback, the time waited so far as a timedelta; no clock,
no storage, no Django. Semantics (spec 6.10 and Oozie's `coord.input.logic` package):

- `<data-in dataset="A"/>` names an input event (a `<data-in>` of `<input-events>`). It is
  satisfied when every instance of A is available; with `min="n"`, when at least n are
  (min 0: always). Its URIs are A's available instances, in A's order.
- `<and>` is satisfied when every child is (its URIs: the children's, in document order);
  `<or>` by its first satisfied child, in document order (its URIs: that child's). Nesting
  is free. A child that is still *waiting* (below) stops an `<or>` there: the later
  children are not considered yet, which is how a wait gives the first source precedence.
- `<combine>` (data-ins only, at least two, same number of instances, no latest/future)
  takes instance i from the first data-in that has it available; it is satisfied when
  every position is (or `min` positions are).
- `wait="m"` (minutes) on a data-in or combine: while it is not fully available and fewer
  than m minutes have passed since the action's nominal time or its creation, whichever is
  later, it is *waiting*: it is not satisfied yet and an enclosing `<or>` does not move on.
  Once the wait is over, `min` decides (with min, the wait is the extra time to collect
  more than the minimum).
- `min` and `wait` on an `<and>`/`<or>` apply to every data-in and combine below it that
  does not set its own (spec: "MIN and WAIT can be used at parent level, which will get
  propagated to child node").
- Input events the logic does not name are not required (their URIs still feed coord:dataIn).
- `coord:dataIn('name')` of a named node is the URIs of that node evaluated on its own once
  the action is ready, waits over (Oozie's phase three): a node that is not satisfied then
  gives an empty string.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from oozie.definitions import DataIn, LogicNode
from oozie.el import (
    ELContext,
    ELError,
    Expression,
    evaluate,
    evaluate_to_string,
    parse_template,
    to_integer,
    variables_in,
)

SATISFIED = "satisfied"
WAITING = "waiting"  # a wait is running: not satisfied yet, and an <or> does not look further
MISSING = "missing"

Availability = Callable[[str, str], bool]  # (input event name, uri) -> available?


class LogicError(ELError):
    """An `<input-logic>` that cannot work: an unknown event, a bad min or wait, a combine of unequal ranges."""


@dataclass(frozen=True, slots=True)
class Logic:
    """A resolved input-logic node: names and numbers final, min and wait inherited from the enclosing and/or.

    events: the input event of a data-in, the input events of a combine, () for and/or.
    min None means every instance; wait None means no wait.
    """

    kind: str
    name: str | None = None
    events: tuple[str, ...] = ()
    children: tuple[Logic, ...] = ()
    min: int | None = None
    wait: int | None = None

    def walk(self) -> Iterator[Logic]:
        """This node and every node below it, in document order."""
        yield self
        for child in self.children:
            yield from child.walk()

    def named(self) -> dict[str, Logic]:
        """Every named node by name (the names coord:dataIn accepts)."""
        return {node.name: node for node in self.walk() if node.name}

    def referenced(self) -> tuple[str, ...]:
        """The input events the logic reads, in document order, each once."""
        return tuple(dict.fromkeys(event for node in self.walk() for event in node.events))

    def describe(self) -> str:
        """A one-line rendering: `input=(input-1[wait 60] or input-2)`."""
        options = [f"min {self.min}"] if self.min is not None else []
        options += [f"wait {self.wait}"] if self.wait is not None else []
        suffix = f"[{', '.join(options)}]" if options else ""
        if self.kind == "data-in":
            text = self.events[0] + suffix
        elif self.kind == "combine":
            text = f"combine({', '.join(self.events)}){suffix}"
        else:
            text = "(" + f" {self.kind} ".join(child.describe() for child in self.children) + ")"
        return f"{self.name}={text}" if self.name else text


@dataclass(frozen=True, slots=True)
class Outcome:
    """The state of a node: satisfied (with its URIs), waiting (a wait runs) or missing.

    waiting_for: the (event, uri) pairs still missing that would change the state;
    wake_after: the shortest running wait, in minutes from the action's wait start.
    """

    status: str
    uris: tuple[str, ...] = ()
    waiting_for: tuple[tuple[str, str], ...] = ()
    wake_after: int | None = None

    @property
    def satisfied(self) -> bool:
        """True when the action may go READY (for the top node)."""
        return self.status == SATISFIED


# --- submission -----------------------------------------------------------------------------


def resolve_logic(
    node: LogicNode, ctx: ELContext, events: Sequence[DataIn], *, storage_events: frozenset[str], reserved: frozenset[str]
) -> Logic:
    """The logic with its attributes evaluated (job properties, `<parameters>`), checked against the input events.

    storage_events: input events using coord:latest/coord:future (no combine, no min on them).
    reserved: event names (inputs and outputs), which a logic name may not reuse.
    Raises LogicError naming the element and, for a bad number, the property it came from.
    """
    by_name = {event.name: event for event in events}
    logic = _resolve(node, ctx, by_name, storage_events, None, None)
    seen: set[str] = set()
    for named in logic.walk():
        if not named.name:
            continue
        if named.name in reserved:
            raise LogicError(
                f"<input-logic> name {named.name!r} is already an event's name; coord:dataIn({named.name!r}) "
                "would be ambiguous"
            )
        if named.name in seen:
            raise LogicError(f"<input-logic> name {named.name!r} is used twice")
        seen.add(named.name)
    return logic


def _number(raw: str | None, ctx: ELContext, what: str, inherited: int | None) -> int | None:
    if raw is None:
        return inherited
    try:
        value = to_integer(evaluate(raw, ctx), raw, what)
    except ELError as exc:
        raise LogicError(f"{exc.message}{origin_note(raw, ctx)}") from None
    if value < 0:
        raise LogicError(f"{what} must be 0 or more, got {value}{origin_note(raw, ctx)}")
    return value


def origin_note(text: str, ctx: ELContext) -> str:
    """' (property 'n' is 'x')' for the string variables a text reads, so a refusal names what to fix."""
    names = sorted({
        name for segment in parse_template(text) if isinstance(segment, Expression)
        for name in variables_in(segment.node) if type(ctx.variables.get(name)) is str
    })
    return f" ({'; '.join(f'property {n!r} is {ctx.variables[n]!r}' for n in names)})" if names else ""


def _resolve(
    node: LogicNode, ctx: ELContext, events: Mapping[str, DataIn], storage: frozenset[str],
    inherited_min: int | None, inherited_wait: int | None,
) -> Logic:
    where = f"<{node.kind}" + (f" name={node.name!r}" if node.name else "") + ">"
    try:
        name = evaluate_to_string(node.name, ctx).strip() if node.name else None
    except ELError as exc:
        raise LogicError(f"{where} name: {exc}") from None
    minimum = _number(node.min, ctx, f"{where} min", inherited_min)
    wait = _number(node.wait, ctx, f"{where} wait", inherited_wait)
    if node.kind in ("and", "or"):
        children = tuple(_resolve(child, ctx, events, storage, minimum, wait) for child in node.children)
        return Logic(node.kind, name or None, (), children)
    if node.kind == "combine":
        if any(child.min is not None or child.wait is not None for child in node.children):
            raise LogicError(f"{where}: min and wait go on <combine> itself, not on its data-ins")
        names = tuple(_event(child, ctx, events) for child in node.children)
        if len(set(names)) != len(names):
            raise LogicError(f"{where} names the same input event twice: {', '.join(names)}")
        uses_storage = [n for n in names if n in storage]
        if uses_storage:
            raise LogicError(
                f"{where}: combine does not support coord:latest/coord:future (spec 6.10), "
                f"used by {', '.join(uses_storage)}"
            )
        return Logic("combine", name or None, names, (), minimum, wait)
    event = _event(node, ctx, events)
    if minimum is not None and event in storage:
        raise LogicError(
            f"{where} on {event!r}: min is not supported with coord:latest/coord:future inputs "
            "(they resolve all or nothing when the action starts; docs/adr/0004-time-semantics.md)"
        )
    return Logic("data-in", name or None, (event,), (), minimum, wait)


def _event(node: LogicNode, ctx: ELContext, events: Mapping[str, DataIn]) -> str:
    try:
        event = evaluate_to_string(node.dataset or "", ctx).strip()
    except ELError as exc:
        raise LogicError(f"<data-in> dataset: {exc}") from None
    if event not in events:
        raise LogicError(
            f"<input-logic> <data-in dataset={event!r}> names no input event; its dataset attribute names a "
            f"<data-in> of <input-events>: {', '.join(sorted(events)) or 'none defined'}"
        )
    return event


# --- evaluation -----------------------------------------------------------------------------


def evaluate_logic(
    logic: Logic, inputs: Mapping[str, Sequence[str]], available: Availability, waited: timedelta | None
) -> Outcome:
    """The state of the logic given each input event's URIs and what is available.

    waited: time since the action's nominal time or creation, whichever is later; None
    means every wait is over (coord:dataIn of a ready action).
    """
    if logic.kind == "data-in":
        event = logic.events[0]
        uris = list(inputs.get(event, ()))
        found = [uri for uri in uris if available(event, uri)]
        have = set(found)
        return _leaf(len(found) == len(uris), found, tuple((event, u) for u in uris if u not in have), logic, waited)
    if logic.kind == "combine":
        return _combine(logic, inputs, available, waited)
    if logic.kind == "or":
        needed: list[tuple[str, str]] = []
        for child in logic.children:
            outcome = evaluate_logic(child, inputs, available, waited)
            if outcome.status == SATISFIED:
                return outcome
            if outcome.status == WAITING:  # the wait gives this child precedence: look no further
                return Outcome(WAITING, (), outcome.waiting_for, outcome.wake_after)
            needed += outcome.waiting_for
        return Outcome(MISSING, (), tuple(dict.fromkeys(needed)))
    # and: every child; the first unsatisfied one decides the state (Oozie), all of them say what is missing
    outcomes = [evaluate_logic(child, inputs, available, waited) for child in logic.children]
    first = next((o for o in outcomes if o.status != SATISFIED), None)
    if first is None:
        return Outcome(SATISFIED, tuple(uri for o in outcomes for uri in o.uris))
    waits = [o.wake_after for o in outcomes if o.wake_after is not None]
    return Outcome(
        first.status, (), tuple(dict.fromkeys(pair for o in outcomes for pair in o.waiting_for)),
        min(waits) if waits else None,
    )


def _leaf(
    complete: bool, found: Sequence[str], missing: tuple[tuple[str, str], ...], logic: Logic, waited: timedelta | None
) -> Outcome:
    """Oozie's getEvalResult: a running wait first, then all found or at least min."""
    if not complete and logic.wait and waited is not None and waited < timedelta(minutes=logic.wait):
        return Outcome(WAITING, (), missing, logic.wait)
    if complete or (logic.min is not None and len(found) >= logic.min):
        return Outcome(SATISFIED, tuple(found))
    return Outcome(MISSING, (), missing)


def _combine(logic: Logic, inputs: Mapping[str, Sequence[str]], available: Availability, waited: timedelta | None) -> Outcome:
    lists = [list(inputs.get(event, ())) for event in logic.events]
    if len({len(uris) for uris in lists}) > 1:
        sizes = ", ".join(f"{event} {len(uris)}" for event, uris in zip(logic.events, lists, strict=True))
        raise LogicError(f"combine({', '.join(logic.events)}) needs the same number of instances in each ({sizes})")
    found: list[str] = []
    missing: list[tuple[str, str]] = []
    for position in range(len(lists[0])):
        choice = next(
            (uris[position] for event, uris in zip(logic.events, lists, strict=True) if available(event, uris[position])),
            None,
        )
        if choice is None:
            missing += [(event, uris[position]) for event, uris in zip(logic.events, lists, strict=True)]
        else:
            found.append(choice)
    return _leaf(len(found) == len(lists[0]), found, tuple(missing), logic, waited)


def check_combine_ranges(logic: Logic, inputs: Mapping[str, Sequence[str]]) -> None:
    """Refuse (LogicError) a combine whose data-ins resolve to different numbers of instances."""
    for node in logic.walk():
        if node.kind == "combine":
            _combine(node, inputs, lambda event, uri: False, None)


def named_uris(logic: Logic, inputs: Mapping[str, Sequence[str]], available: Availability) -> dict[str, list[str]]:
    """coord:dataIn of every named node: its URIs when it is satisfied on its own (waits over), else []."""
    return {
        name: list(outcome.uris) if (outcome := evaluate_logic(node, inputs, available, None)).satisfied else []
        for name, node in logic.named().items()
    }


def describe_waiting(outcome: Outcome, logic: Logic) -> str:
    """What an action with this logic waits for, in one line."""
    if outcome.satisfied:
        return f"input logic {logic.describe()} is satisfied"
    events = list(dict.fromkeys(event for event, _ in outcome.waiting_for))
    counts = ", ".join(f"{event} ({sum(1 for e, _ in outcome.waiting_for if e == event)} missing)" for event in events)
    state = f"waiting up to {outcome.wake_after} min for " if outcome.status == WAITING else "waiting for "
    return f"input logic {logic.describe()}: {state}{counts or 'nothing available yet'}"


def as_json(logic: Logic) -> dict[str, Any]:
    """The logic as JSON (dry-run): kind, name, events, min, wait, children."""
    out: dict[str, Any] = {"kind": logic.kind}
    if logic.name:
        out["name"] = logic.name
    if logic.events:
        out["data_in"] = list(logic.events)
    if logic.min is not None:
        out["min"] = logic.min
    if logic.wait is not None:
        out["wait"] = logic.wait
    if logic.children:
        out["children"] = [as_json(child) for child in logic.children]
    return out
