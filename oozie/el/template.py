"""Text with embedded ${...} expressions: parsing, evaluation, and partial (phased) resolution."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from oozie.el.errors import ELLimitError, ELSyntaxError, ELUnresolvedVariable
from oozie.el.evaluator import evaluate_node, to_text
from oozie.el.functions import ELContext
from oozie.el.nodes import Node, calls_in, variables_in
from oozie.el.parser import parse_expression

MAX_SEGMENTS = 1_000
MAX_TEMPLATE = 100_000


@dataclass(frozen=True, slots=True)
class Expression:
    """One ${...} segment: its source (without ${ }) and its tree."""

    source: str
    node: Node


Segment = str | Expression


def _closing_brace(text: str, start: int) -> int:
    """Index of the } closing the expression that starts at start, skipping string literals."""
    i, quote = start, ""
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\" and i + 1 < len(text):
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "}":
            return i
        i += 1
    return -1


def parse_template(text: str) -> tuple[Segment, ...]:
    """Split text into literal strings and expressions; `\\${` is a literal `${`.

    Results are cached: materialization parses the same texts for every action.
    """
    if len(text) > MAX_TEMPLATE:
        raise ELLimitError(f"text longer than {MAX_TEMPLATE} characters", text[:80] + "...")
    return _parse_template(text)


@lru_cache(maxsize=4096)
def _parse_template(text: str) -> tuple[Segment, ...]:
    if len(text) > MAX_TEMPLATE:
        raise ELLimitError(f"text longer than {MAX_TEMPLATE} characters", text[:80] + "...")
    segments: list[Segment] = []
    literal: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("\\${", i):
            literal.append("${")
            i += 3
            continue
        if text.startswith("${", i):
            end = _closing_brace(text, i + 2)
            if end < 0:
                raise ELSyntaxError("'${' without a closing '}'", text, i)
            if literal:
                segments.append("".join(literal))
                literal = []
            source = text[i + 2:end]
            if "${" in source:  # Oozie's EL refuses this too: names inside ${...} are bare
                raise ELSyntaxError(
                    "'${' inside an expression; variables are written bare inside ${...}: "
                    "${coord:current(off)}, not ${coord:current(${off})}", text, i + 2 + source.index("${"),
                )
            segments.append(Expression(source, parse_expression(source)))
            if len(segments) > MAX_SEGMENTS:
                raise ELLimitError(f"more than {MAX_SEGMENTS} expressions in one text", text[:80] + "...")
            i = end + 1
            continue
        literal.append(text[i])
        i += 1
    if literal:
        segments.append("".join(literal))
    return tuple(segments)


def evaluate(text: str, ctx: ELContext) -> Any:
    """Evaluate a template: a lone ${expr} gives its raw value, anything else a string."""
    segments = parse_template(text)
    if len(segments) == 1 and isinstance(segments[0], Expression):
        return evaluate_node(segments[0].node, ctx, segments[0].source)
    return "".join(
        segment if isinstance(segment, str) else to_text(evaluate_node(segment.node, ctx, segment.source))
        for segment in segments
    )


def evaluate_to_string(text: str, ctx: ELContext) -> str:
    """Evaluate a template and coerce the result to a string."""
    return to_text(evaluate(text, ctx))


def partially_resolve(
    text: str,
    ctx: ELContext,
    *,
    defer: Callable[[str], bool] = lambda name: False,
    keep_unresolved_variables: bool = False,
    final: bool = False,
) -> str:
    """Resolve what can be resolved now; leave deferred calls (and, if asked, unknown variables) as source.

    An expression calling any function for which defer(name) is true is kept verbatim as
    `${...}` for a later phase (Oozie keeps coord:latest for action start, and every coord:
    function at submission). Otherwise an unresolved variable raises ELUnresolvedVariable
    naming it, unless keep_unresolved_variables is set.

    The result is a template for the next phase: literal text and the *values* of what was
    resolved are escaped (`\\${`), so a job property whose value contains `${x}` is
    inserted as that text and never evaluated again (Oozie evaluates an expression once;
    its result is data). With final=True (the last evaluation, at action creation or
    start) the result is plain text: nothing is escaped.
    """
    def literal(value: str) -> str:
        return value if final else value.replace("${", "\\${")

    out: list[str] = []
    for segment in parse_template(text):
        if isinstance(segment, str):
            out.append(literal(segment))
            continue
        if any(defer(name) for name in calls_in(segment.node)):
            out.append("${" + segment.source + "}")
            continue
        try:
            out.append(literal(to_text(evaluate_node(segment.node, ctx, segment.source))))
        except ELUnresolvedVariable:
            if not keep_unresolved_variables:
                raise
            out.append("${" + segment.source + "}")
    return "".join(out)


def unresolved_variables(text: str, variables: dict[str, Any] | Any) -> set[str]:
    """Names of the variables a template reads that are not in variables."""
    names: set[str] = set()
    for segment in parse_template(text):
        if isinstance(segment, Expression):
            names.update(name for name in variables_in(segment.node) if name not in variables)
    return names
