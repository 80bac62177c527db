"""Errors of workflow definitions: DefinitionError subclasses, so every caller's 4xx/CLI handling applies."""

from __future__ import annotations

from oozie.definitions.errors import DefinitionError, UnsupportedFeatureError


class UnsupportedActionError(UnsupportedFeatureError):
    """An action node of a type this service does not run (map-reduce, hive, spark...)."""


class TooManyNodesError(DefinitionError):
    """A workflow has more nodes than MAX_NODES (hostile or generated input)."""


class WorkflowGraphError(DefinitionError):
    """The DAG is refused: duplicate names, missing transitions, cycles, fork/join pairing."""


class WorkflowELError(DefinitionError):
    """An expression is refused at submission: syntax, unresolved variable, unknown function."""
