"""A safe JSP-EL engine for Oozie expressions: real parser, no eval, typed errors, phases.

Pure: no Django or Celery, no clock. The coord: function library plugs in as ELFunctions.
"""

from __future__ import annotations

from oozie.el.constants import default_variables
from oozie.el.errors import (
    ELError,
    ELEvaluationError,
    ELLimitError,
    ELPhaseError,
    ELSyntaxError,
    ELUnknownFunction,
    ELUnresolvedVariable,
)
from oozie.el.evaluator import evaluate_node, to_bool, to_integer, to_number, to_text
from oozie.el.functions import ALL_PHASES, ELContext, ELFunction, FunctionRegistry, Phase
from oozie.el.nodes import Node, calls_in, variables_in
from oozie.el.parser import parse_expression
from oozie.el.template import (
    Expression,
    evaluate,
    evaluate_to_string,
    parse_template,
    partially_resolve,
    unresolved_variables,
)

__all__ = [
    "ALL_PHASES",
    "ELContext",
    "ELError",
    "ELEvaluationError",
    "ELFunction",
    "ELLimitError",
    "ELPhaseError",
    "ELSyntaxError",
    "ELUnknownFunction",
    "ELUnresolvedVariable",
    "Expression",
    "FunctionRegistry",
    "Node",
    "Phase",
    "calls_in",
    "default_variables",
    "evaluate",
    "evaluate_node",
    "evaluate_to_string",
    "parse_expression",
    "parse_template",
    "partially_resolve",
    "to_bool",
    "to_integer",
    "to_number",
    "to_text",
    "unresolved_variables",
    "variables_in",
]
