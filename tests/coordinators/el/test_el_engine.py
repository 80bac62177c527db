"""The EL engine: JSP operators and coercions, templates, errors with positions, phases, limits."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oozie.el import (
    ELContext,
    ELError,
    ELEvaluationError,
    ELFunction,
    ELLimitError,
    ELPhaseError,
    ELSyntaxError,
    ELUnknownFunction,
    ELUnresolvedVariable,
    FunctionRegistry,
    Phase,
    default_variables,
    evaluate,
    parse_expression,
    partially_resolve,
    unresolved_variables,
)

VARIABLES = {"a": 5, "b": 2, "s": "abc", "empty_s": "", "none": None, "wf.app.path": "/apps/wf", "flag": "true"}


def _concat(ctx: ELContext, *parts: Any) -> str:
    return "".join(str(p) for p in parts)


REGISTRY = FunctionRegistry().with_functions(
    ELFunction("fn:concat", _concat, min_args=1, max_args=10),
    ELFunction("fn:twice", lambda ctx, x: x * 2, min_args=1, max_args=1),
    ELFunction("coord:later", lambda ctx: "later", phases=frozenset({Phase.START})),
)
CTX = ELContext(variables={**default_variables(), **VARIABLES}, functions=REGISTRY, phase=Phase.CREATION)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("${1 + 2 * 3}", 7, id="precedence"),
        pytest.param("${(1 + 2) * 3}", 9, id="parentheses"),
        pytest.param("${10 - 2 - 3}", 5, id="left-associative"),
        pytest.param("${7 / 2}", 3.5, id="slash-is-float"),
        pytest.param("${7 div 2}", 3.5, id="div"),
        pytest.param("${7 % 3}", 1, id="percent"),
        pytest.param("${7 mod 3}", 1, id="mod"),
        pytest.param("${-7 mod 3}", -1, id="java-remainder-sign"),
        pytest.param("${-a}", -5, id="unary-minus"),
        pytest.param("${a * b}", 10, id="variables"),
        pytest.param("${'2' + 3}", 5, id="numeric-string-coerced"),
        pytest.param("${1.5e2}", 150.0, id="exponent"),
        pytest.param("${a > 3}", True, id="gt"),
        pytest.param("${a gt 3 and b lt 3}", True, id="word-operators"),
        pytest.param("${a == 5.0}", True, id="int-float-equality"),
        pytest.param("${s == 'abc'}", True, id="string-equality"),
        pytest.param("${s eq \"abc\"}", True, id="double-quotes"),
        pytest.param("${'abc' < 'abd'}", True, id="string-order"),
        pytest.param("${none == null}", True, id="null-equality"),
        pytest.param("${!true || false}", False, id="not-or"),
        pytest.param("${not (a > 3) && true}", False, id="not-and"),
        pytest.param("${flag && true}", True, id="string-true-coerced"),
        pytest.param("${empty empty_s}", True, id="empty-string"),
        pytest.param("${empty none}", True, id="empty-null"),
        pytest.param("${empty s}", False, id="not-empty"),
        pytest.param("${a > 3 ? 'big' : 'small'}", "big", id="ternary"),
        pytest.param("${a > 9 ? 'big' : b > 1 ? 'mid' : 'small'}", "mid", id="nested-ternary"),
        pytest.param("${'it\\'s'}", "it's", id="escaped-quote"),
        pytest.param("${fn:concat('a', fn:twice(b), s)}", "a4abc", id="nested-calls"),
        pytest.param("${wf.app.path}", "/apps/wf", id="dotted-variable"),
        pytest.param("${10 * MINUTES + 2 * HOURS}", 130, id="sla-constants"),
        pytest.param("${DAY}", "DAY", id="unit-constant"),
        pytest.param("${true}", True, id="raw-value"),
        pytest.param("a=${a}, on=${true}, none=${none}.", "a=5, on=true, none=.", id="text-coercion"),
        pytest.param("\\${not.evaluated}", "${not.evaluated}", id="escaped-dollar"),
        pytest.param("${'}'}", "}", id="brace-in-string"),
        pytest.param("plain text", "plain text", id="no-expression"),
    ],
)
def test_expressions(text: str, expected: Any) -> None:
    """JSP EL operators, precedence and coercions as Oozie expressions use them."""
    assert evaluate(text, CTX) == expected


@pytest.mark.parametrize(
    ("text", "error", "position"),
    [
        pytest.param("${1 +}", ELSyntaxError, 3, id="missing-operand"),
        pytest.param("${(1 + 2}", ELSyntaxError, 6, id="unclosed-parenthesis"),
        pytest.param("${'abc}", ELSyntaxError, 0, id="unterminated-string"),
        pytest.param("${a ? 1}", ELSyntaxError, 5, id="ternary-without-colon"),
        pytest.param("${1 # 2}", ELSyntaxError, 2, id="bad-character"),
        pytest.param("${}", ELSyntaxError, 0, id="empty"),
        pytest.param("${fn:nope(1)}", ELUnknownFunction, 0, id="unknown-function"),
        pytest.param("${coord:later()}", ELPhaseError, 0, id="wrong-phase"),
    ],
)
def test_errors_name_expression_and_position(text: str, error: type[ELError], position: int) -> None:
    """Errors are typed and say where in the expression the problem is."""
    with pytest.raises(error) as caught:
        evaluate(text, CTX)
    assert caught.value.position == position
    assert caught.value.expression == text[2:-1] or caught.value.expression in text
    assert "position" in str(caught.value)


def test_unclosed_template_is_a_syntax_error() -> None:
    """A ${ without } is refused."""
    with pytest.raises(ELSyntaxError, match="closing"):
        evaluate("x ${a + 1", CTX)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("${1 / 0}", "division by zero", id="division-by-zero"),
        pytest.param("${5 mod 0}", "modulo by zero", id="modulo-by-zero"),
        pytest.param("${'abc' * 2}", "as a number", id="string-arithmetic"),
        pytest.param("${a && true}", "as a boolean", id="number-as-boolean"),
        pytest.param("${'a' + 'b'}", "no string concatenation", id="plus-on-strings"),
        pytest.param("${fn:twice()}", "takes 1 arguments", id="arity"),
        pytest.param("${9223372036854775807 + 1}", "out of range", id="long-overflow"),
    ],
)
def test_evaluation_errors(text: str, message: str) -> None:
    """Type errors, division by zero, arity and overflow are ELEvaluationError with a reason."""
    with pytest.raises(ELEvaluationError, match=message):
        evaluate(text, CTX)


def test_unresolved_variable_names_itself() -> None:
    """An unknown variable is ELUnresolvedVariable carrying its name."""
    with pytest.raises(ELUnresolvedVariable) as caught:
        evaluate("${wf.missing.path}/x", CTX)
    assert caught.value.name == "wf.missing.path"
    assert unresolved_variables("${a} ${zz} ${fn:twice(yy)}", VARIABLES) == {"zz", "yy"}


def test_phases_gate_functions() -> None:
    """A function allowed only at action start runs then, and is refused earlier."""
    start = ELContext(variables=VARIABLES, functions=REGISTRY, phase=Phase.START)
    assert evaluate("${coord:later()}", start) == "later"
    with pytest.raises(ELPhaseError, match="only at: start"):
        evaluate("${coord:later()}", ELContext(functions=REGISTRY, phase=Phase.SUBMISSION))


def test_partial_resolution_keeps_deferred_calls() -> None:
    """Deferred functions stay as their source; everything else resolves now."""
    text = "in=${coord:later()} app=${wf.app.path} n=${a + 1}"
    resolved = partially_resolve(text, CTX, defer=lambda name: name.startswith("coord:"))
    assert resolved == "in=${coord:later()} app=/apps/wf n=6"
    kept = partially_resolve("${who} ${a}", CTX, keep_unresolved_variables=True)
    assert kept == "${who} 5"
    with pytest.raises(ELUnresolvedVariable):
        partially_resolve("${who}", CTX)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("${" + "(" * 10_000 + "1" + ")" * 10_000 + "}", id="deep-parentheses"),
        pytest.param("${" + "not " * 5_000 + "true}", id="deep-not"),
        pytest.param("${" + "-" * 5_000 + "1}", id="deep-minus"),
        pytest.param("${" + "a ? " * 2_000 + "1" + " : 2" * 2_000 + "}", id="deep-ternary"),
        pytest.param("${" + "fn:twice(" * 3_000 + "1" + ")" * 3_000 + "}", id="deep-calls"),
        pytest.param("${'" + "x" * 20_000 + "'}", id="long-string"),
    ],
)
def test_hostile_expressions_fail_fast_with_a_limit_error(text: str) -> None:
    """Deep nesting and huge expressions are ELLimitError, never RecursionError or a hang."""
    with pytest.raises(ELLimitError):
        evaluate(text, CTX)


def test_many_expressions_in_one_text_are_limited() -> None:
    """A text may hold at most 1,000 expressions."""
    with pytest.raises(ELLimitError):
        evaluate("${1}" * 2_000, CTX)


def test_nothing_is_evaluated_as_python() -> None:
    """Python syntax is not EL: no attribute access, no imports, no calls on arbitrary names."""
    for text in ("${__import__('os').system('true')}", "${s.__class__}", "${[1, 2]}", "${lambda: 1}"):
        with pytest.raises(ELError):
            evaluate(text, CTX)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=60))
def test_random_text_is_a_value_or_an_el_error(text: str) -> None:
    """Whatever the input, the engine answers with a value or an ELError."""
    try:
        evaluate(text, CTX)
    except ELError:
        pass


ATOMS = st.sampled_from(["1", "2.5", "a", "b", "'x'", "true", "null", "s", "fn:twice(2)"])
OPERATORS = st.sampled_from(["+", "-", "*", "/", "%", "==", "!=", "<", ">=", "&&", "||", "div", "mod", "eq"])


@st.composite
def expressions(draw: st.DrawFn, depth: int = 0) -> str:
    if depth > 3 or draw(st.booleans()):
        return draw(ATOMS)
    kind = draw(st.sampled_from(["binary", "unary", "ternary", "paren"]))
    if kind == "binary":
        return f"{draw(expressions(depth + 1))} {draw(OPERATORS)} {draw(expressions(depth + 1))}"
    if kind == "unary":
        return f"{draw(st.sampled_from(['-', '!', 'not ', 'empty ']))}{draw(expressions(depth + 1))}"
    if kind == "ternary":
        return f"{draw(expressions(depth + 1))} ? {draw(expressions(depth + 1))} : {draw(expressions(depth + 1))}"
    return f"({draw(expressions(depth + 1))})"


@settings(max_examples=400, deadline=None)
@given(expressions())
def test_generated_expressions_evaluate_or_fail_typed_and_print_back(source: str) -> None:
    """Well-formed random expressions parse, print back to an equal tree, and evaluate or fail typed."""
    tree = parse_expression(source)
    assert parse_expression(tree.to_source()) == tree
    try:
        evaluate("${" + source + "}", CTX)
    except ELError:
        pass
