"""Evaluating EL trees with JSP EL coercions; no Python eval anywhere."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from oozie.el.errors import (
    ELError,
    ELEvaluationError,
    ELPhaseError,
    ELUnknownFunction,
    ELUnresolvedVariable,
)
from oozie.el.functions import ELContext
from oozie.el.nodes import Binary, Call, Index, Literal, Node, Ternary, Unary, Variable

LONG_MAX = 2**63 - 1


def to_text(value: Any) -> str:
    """EL string coercion: null is '', booleans lowercase, whole floats keep '.0' as Java does."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def to_bool(value: Any, expression: str) -> bool:
    """EL boolean coercion: null is false, strings 'true'/'false' (any case)."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        if value.lower() in {"true", "false", ""}:
            return value.lower() == "true"
    raise ELEvaluationError(f"cannot use {value!r} as a boolean", expression)


def to_number(value: Any, expression: str) -> int | float:
    """EL number coercion (JSP 2.0 1.18.3): null and "" are 0, numeric strings are numbers.

    Every job property is a string, so `${n * 60}` with n=3 from job.properties is 180.
    Surrounding blanks are ignored (Java's Long.valueOf would refuse them; a properties
    file keeps trailing blanks that nobody sees).
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return 0
    if isinstance(value, bool):
        raise ELEvaluationError(f"cannot use boolean {to_text(value)} as a number", expression)
    if isinstance(value, int | float):
        return value
    as_number = getattr(value, "el_number", None)  # domain constants that double as numbers (HOUR = 60)
    if as_number is not None and (number := as_number()) is not None:
        return int(number)
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text) if text.lstrip("+-").isdigit() and len(text) < 20 else float(text)
        except ValueError:
            pass
    raise ELEvaluationError(f"cannot use {value!r} as a number", expression)


def to_integer(value: Any, expression: str = "", what: str = "this") -> int:
    """EL coercion to an integer argument (commons-el: Long.valueOf for strings, null and "" are 0).

    A numeric string from job properties is a number: coord:hours('3') is coord:hours(3).
    A whole decimal (6 / 2 is 3.0 in EL) is its integer; a fraction, a boolean or a
    non-numeric string is refused (EL would truncate 2.5 to 2; silently dropping half an
    hour is worse than a one-line refusal).
    """
    if isinstance(value, bool):
        raise ELEvaluationError(f"{what} takes an integer, got boolean {to_text(value)}", expression)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        return int(value.strip())
    try:
        number = to_number(value, expression)
    except ELEvaluationError:
        raise ELEvaluationError(f"{what} takes an integer, got {value!r}", expression) from None
    if isinstance(number, float) and not number.is_integer():
        raise ELEvaluationError(f"{what} takes an integer, got {value!r} (not a whole number)", expression)
    return int(number)


_INTEGER = re.compile(r"[+-]?[0-9]{1,19}")


def _check(value: int | float, expression: str) -> int | float:
    if isinstance(value, int) and abs(value) > LONG_MAX:
        raise ELEvaluationError("integer out of range (more than 64 bits)", expression)
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        raise ELEvaluationError("arithmetic result is not a finite number", expression)
    return value


def _arithmetic(op: str, left: Any, right: Any, expression: str) -> Any:
    hook = getattr(left, "el_binary", None) or getattr(right, "el_binary", None)
    if hook is not None:  # domain values (frequencies) define their own arithmetic
        result = hook(op, left, right)
        if result is not NotImplemented:
            return result
    if op == "+" and (isinstance(left, str) and not _numeric(left)) and (isinstance(right, str) and not _numeric(right)):
        raise ELEvaluationError("'+' adds numbers; EL has no string concatenation operator", expression)
    a, b = to_number(left, expression), to_number(right, expression)
    if op == "+":
        return _check(a + b, expression)
    if op == "-":
        return _check(a - b, expression)
    if op == "*":
        return _check(a * b, expression)
    if op == "/":
        if b == 0:
            raise ELEvaluationError("division by zero", expression)
        return _check(float(a) / float(b), expression)
    if b == 0:
        raise ELEvaluationError("modulo by zero", expression)
    if isinstance(a, int) and isinstance(b, int):
        return _check(int(a - b * int(a / b)), expression)  # Java's remainder keeps the dividend's sign
    return _check(a - b * int(a / b), expression)


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _compare(op: str, left: Any, right: Any, expression: str) -> bool:
    if op in ("==", "!="):
        if left is None or right is None:
            equal = left is right
        elif isinstance(left, bool) or isinstance(right, bool):
            equal = to_bool(left, expression) == to_bool(right, expression)
        elif isinstance(left, int | float) or isinstance(right, int | float):
            equal = to_number(left, expression) == to_number(right, expression)
        else:
            equal = to_text(left) == to_text(right)
        return equal if op == "==" else not equal
    if isinstance(left, str) and isinstance(right, str):
        a: Any = left
        b: Any = right
    else:
        a, b = to_number(left, expression), to_number(right, expression)
    return bool({"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op])


def evaluate_node(node: Node, ctx: ELContext, expression: str) -> Any:
    """The value of a syntax tree in a context."""
    if isinstance(node, Literal):
        return node.value
    if isinstance(node, Variable):
        if node.name in ctx.variables:
            return ctx.variables[node.name]
        raise ELUnresolvedVariable(node.name, expression)
    if isinstance(node, Unary):
        value = evaluate_node(node.operand, ctx, expression)
        if node.op == "-":
            try:
                return _check(-to_number(value, expression), expression)
            except ELEvaluationError as exc:
                raise _naming_properties(exc, [(node.operand, value)], expression) from None
        if node.op == "!":
            return not to_bool(value, expression)
        return value is None or (isinstance(value, str | list | tuple | dict | set) and len(value) == 0)
    if isinstance(node, Ternary):
        chosen = node.then if to_bool(evaluate_node(node.condition, ctx, expression), expression) else node.otherwise
        return evaluate_node(chosen, ctx, expression)
    if isinstance(node, Binary):
        if node.op == "&&":
            return to_bool(evaluate_node(node.left, ctx, expression), expression) and to_bool(
                evaluate_node(node.right, ctx, expression), expression
            )
        if node.op == "||":
            return to_bool(evaluate_node(node.left, ctx, expression), expression) or to_bool(
                evaluate_node(node.right, ctx, expression), expression
            )
        left = evaluate_node(node.left, ctx, expression)
        right = evaluate_node(node.right, ctx, expression)
        try:
            if node.op in ("==", "!=", "<", ">", "<=", ">="):
                return _compare(node.op, left, right, expression)
            return _arithmetic(node.op, left, right, expression)
        except ELEvaluationError as exc:
            raise _naming_properties(exc, [(node.left, left), (node.right, right)], expression) from None
    if isinstance(node, Index):
        return _index(evaluate_node(node.target, ctx, expression), evaluate_node(node.key, ctx, expression), expression)
    return _call(node, ctx, expression)


def _index(target: Any, key: Any, expression: str) -> Any:
    """JSP EL 1.8 value[key]: a map's entry or null, a list's item or null; null[key] is null."""
    if target is None or key is None:
        return None
    if isinstance(target, Mapping):
        return target.get(to_text(key))
    if isinstance(target, list | tuple):
        position = to_integer(key, expression, "a list index")
        return target[position] if 0 <= position < len(target) else None
    raise ELEvaluationError(f"cannot look up {to_text(key)!r} in {to_text(target)!r}: it is not a map or a list", expression)


def _call(node: Call, ctx: ELContext, expression: str) -> Any:
    function = ctx.functions.get(node.name)
    if function is None:
        raise ELUnknownFunction(f"unknown function {node.name}()", expression, node.position)
    if ctx.phase not in function.phases:
        allowed = ", ".join(phase.name.lower() for phase in sorted(function.phases))
        raise ELPhaseError(
            f"{node.name}() cannot be used at {ctx.phase.name.lower()} (only at: {allowed})", expression, node.position
        )
    if not function.min_args <= len(node.args) <= function.max_args:
        expected = (
            str(function.min_args) if function.min_args == function.max_args
            else f"{function.min_args} to {function.max_args}"
        )
        raise ELEvaluationError(f"{node.name}() takes {expected} arguments, got {len(node.args)}", expression, node.position)
    args = [evaluate_node(arg, ctx, expression) for arg in node.args]
    try:
        return function.fn(ctx, *args)
    except ELEvaluationError as exc:
        raise _naming_properties(exc, list(zip(node.args, args, strict=True)), expression, node.position) from None
    except ELError:
        raise
    except (ValueError, TypeError, ArithmeticError) as exc:
        error = ELEvaluationError(f"{node.name}(): {exc}", expression, node.position)
        raise _naming_properties(error, list(zip(node.args, args, strict=True)), expression, node.position) from None


def _naming_properties(
    exc: ELEvaluationError, operands: list[tuple[Node, Any]], expression: str, position: int | None = None
) -> ELEvaluationError:
    """The error again, naming the variables (job properties, `<parameters>`) whose string values it was given.

    A property value is always a string; when one is not a number where a number is
    needed, the message says which property to fix, not only which expression failed.
    """
    named = [
        f"property {operand.name!r} is {value!r}"
        for operand, value in operands
        if isinstance(operand, Variable) and type(value) is str and f"property {operand.name!r}" not in exc.message
    ]
    if not named:
        if exc.expression:
            return exc
        return ELEvaluationError(exc.message, expression, exc.position if exc.position is not None else position)
    return ELEvaluationError(
        f"{exc.message} ({'; '.join(named)})", exc.expression or expression,
        exc.position if exc.position is not None else position,
    )
