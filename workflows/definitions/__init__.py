"""Workflow applications (workflow.xml): parsing, validation and resolution at submission (pure).

`load_application` reads storage under the application roots (it imports Django settings when called).
"""

from __future__ import annotations

from workflows.definitions.errors import (
    TooManyNodesError,
    UnsupportedActionError,
    WorkflowELError,
    WorkflowGraphError,
)
from workflows.definitions.graph import START_NODE, check_graph
from workflows.definitions.loader import load_application
from workflows.definitions.model import (
    ACTION_KIND,
    ACTION_TYPES,
    CONTROL_KINDS,
    NodeDef,
    PreparedWorkflow,
    WorkflowDefinition,
)
from workflows.definitions.parser import MAX_NODES, WorkflowApp, parse_workflow, parse_workflow_app
from workflows.definitions.schemas import supported_namespaces
from workflows.definitions.submission import (
    EL_CONSTANTS,
    layer_configuration,
    prepare_workflow,
    resolve_workflow,
)

__all__ = [
    "ACTION_KIND",
    "ACTION_TYPES",
    "CONTROL_KINDS",
    "EL_CONSTANTS",
    "MAX_NODES",
    "START_NODE",
    "NodeDef",
    "PreparedWorkflow",
    "TooManyNodesError",
    "UnsupportedActionError",
    "WorkflowApp",
    "WorkflowDefinition",
    "WorkflowELError",
    "WorkflowGraphError",
    "check_graph",
    "layer_configuration",
    "load_application",
    "parse_workflow",
    "parse_workflow_app",
    "prepare_workflow",
    "resolve_workflow",
    "supported_namespaces",
]
