"""Function registry and evaluation phases (submission, action creation, action start)."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


class Phase(enum.IntEnum):
    """When an expression is evaluated (DESIGN section 6)."""

    SUBMISSION = 1  # job properties, <parameters> defaults, attributes, dataset definitions
    CREATION = 2  # action materialization: current, offset, dataIn, nominalTime, ...
    START = 3  # action start: latest, future


ALL_PHASES = frozenset(Phase)


@dataclass(frozen=True, slots=True)
class ELFunction:
    """A callable EL function: fn(context, *args), allowed in some phases, with an arity."""

    name: str
    fn: Callable[..., Any]
    phases: frozenset[Phase] = ALL_PHASES
    min_args: int = 0
    max_args: int = 0


@dataclass(frozen=True, slots=True)
class FunctionRegistry:
    """Functions by qualified name (`coord:current`)."""

    functions: Mapping[str, ELFunction] = field(default_factory=dict)

    def with_functions(self, *functions: ELFunction) -> FunctionRegistry:
        """A new registry with these functions added (or replaced)."""
        merged = dict(self.functions)
        merged.update({function.name: function for function in functions})
        return FunctionRegistry(merged)

    def get(self, name: str) -> ELFunction | None:
        """The function, or None."""
        return self.functions.get(name)


@dataclass(frozen=True, slots=True)
class ELContext:
    """Everything an evaluation sees: variables, functions, the phase, and state for functions."""

    variables: Mapping[str, Any] = field(default_factory=dict)
    functions: FunctionRegistry = field(default_factory=FunctionRegistry)
    phase: Phase = Phase.SUBMISSION
    extra: Mapping[str, Any] = field(default_factory=dict)
