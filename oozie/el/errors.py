"""Typed EL errors; each names the expression and, for syntax, the position."""

from __future__ import annotations


class ELError(ValueError):
    """Base of every EL error."""

    def __init__(self, message: str, expression: str = "", position: int | None = None) -> None:
        self.message = message
        self.expression = expression
        self.position = position
        where = ""
        if expression or position is not None:
            where = f" in {expression!r}" + (f" at position {position}" if position is not None else "")
        super().__init__(f"{message}{where}")


class ELSyntaxError(ELError):
    """The expression cannot be parsed."""


class ELLimitError(ELError):
    """The expression is too long or too deeply nested."""


class ELUnknownFunction(ELError):  # noqa: N818 - reads as the condition
    """No function is registered under this name."""


class ELPhaseError(ELError):
    """The function exists but may not be called in this phase."""


class ELUnresolvedVariable(ELError):  # noqa: N818
    """A variable has no value."""

    def __init__(self, name: str, expression: str = "") -> None:
        self.name = name
        super().__init__(f"variable {name!r} cannot be resolved", expression)


class ELEvaluationError(ELError):
    """Wrong types, division by zero, wrong arity, numbers out of range."""
