"""Action-text expressions of one job turned into Python closures once, for materialization (ADR 0024).

Every action of a job evaluates the same expressions (`coord:dataIn('input')`,
`coord:formatTime(coord:nominalTime(), 'yyyy')`) in a new context. The EL evaluator checks,
for every call of every action, what cannot change within a job: the function's name, its
phase and its arity, and the job variables. `compile_expression` checks those once and
returns a closure that only calls the functions; operators and anything else stay with the
evaluator. `evaluate_compiled` is the one way to run a closure: on any exception it evaluates
the expression again with the evaluator, which raises the error in its own words, so a
compiled expression gives exactly what `evaluate_node` gives, value or error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from oozie.el import ELContext, Expression, FunctionRegistry, Phase, evaluate_node
from oozie.el.nodes import Call, Literal, Node, Variable

Compiled = Callable[[ELContext], Any]


def compile_expression(
    expression: Expression, variables: Mapping[str, Any], functions: FunctionRegistry, phase: Phase
) -> Compiled:
    """A closure giving the expression's value in a context with these variables, functions and phase."""
    source = expression.source

    def generic(node: Node) -> Compiled:
        return lambda ctx: evaluate_node(node, ctx, source)

    def build(node: Node) -> Compiled:
        if isinstance(node, Literal):
            value = node.value
            return lambda ctx: value
        if isinstance(node, Variable):
            if node.name not in variables:
                return generic(node)  # unresolved: the evaluator names it
            constant = variables[node.name]
            return lambda ctx: constant
        if not isinstance(node, Call):
            return generic(node)
        function = functions.get(node.name)
        if function is None or phase not in function.phases or not function.min_args <= len(node.args) <= function.max_args:
            return generic(node)  # unknown, wrong phase or arity: the evaluator's error
        fn = function.fn
        args = tuple(build(arg) for arg in node.args)
        if not args:
            return lambda ctx: fn(ctx)
        if len(args) == 1:
            (only,) = args
            return lambda ctx: fn(ctx, only(ctx))
        if len(args) == 2:
            first, second = args
            return lambda ctx: fn(ctx, first(ctx), second(ctx))
        return lambda ctx: fn(ctx, *[arg(ctx) for arg in args])

    return build(expression.node)


def evaluate_compiled(compiled: Compiled, expression: Expression, ctx: ELContext) -> Any:
    """The expression's value in ctx, by its closure; any failure is the evaluator's to report."""
    try:
        return compiled(ctx)
    except Exception:  # noqa: BLE001 - evaluated again: the evaluator's value or exception is the reference
        return evaluate_node(expression.node, ctx, expression.source)
