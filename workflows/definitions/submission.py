"""Submission of a workflow: configuration layered as Oozie layers it, every variable resolved, functions checked.

Layering (Oozie's SubmitXCommand, then ParameterVerifier): the job properties win; a
config-default.xml value fills a property the job properties lack; a `<parameters>` default
fills what both lack; a `<parameters>` property without a default that is still missing
refuses the submission. `${other}` references between properties are then expanded as
Hadoop's Configuration does (oozie.properties.expand_properties).

EL at submission: every `${...}` of the definition (action specs, kill messages, decision
predicates, configurations, prepare paths) may read only defined variables (the job
configuration and the constants KB..PB) and call only known functions (workflows.el). An
expression without calls is evaluated now; one with calls is kept verbatim for the engine to
evaluate when the node runs. Every text of the prepared definition is therefore a template:
evaluate it at launch with oozie.el.template (a resolved value containing `${` is kept
escaped as `\\${`, so data is never evaluated twice).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from oozie.definitions.errors import ConfigurationError, DefinitionError
from oozie.definitions.parser import merge_parameters
from oozie.el import (
    ELContext,
    ELError,
    FunctionRegistry,
    Phase,
    parse_template,
    partially_resolve,
)
from oozie.el.nodes import calls_in, variables_in
from oozie.el.template import Expression
from oozie.properties import USER_NAME, WF_APP_PATH, expand_properties
from workflows.definitions.errors import WorkflowELError
from workflows.definitions.model import NodeDef, PreparedWorkflow, WorkflowDefinition
from workflows.definitions.parser import WorkflowApp, parse_workflow_app

#: Basic EL constants (spec 4.2.1).
EL_CONSTANTS: dict[str, int] = {"KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4, "PB": 1024**5}
#: Names a job may not set: EL constants (Oozie's SubmitXCommand.DISALLOWED_USER_PROPERTIES, E0808).
DISALLOWED_USER_PROPERTIES = frozenset({
    "DAYS", "HOURS", "MINUTES", "KB", "MB", "GB", "TB", "PB",
    "RECORDS", "MAP_IN", "MAP_OUT", "REDUCE_IN", "REDUCE_OUT", "GROUPS",
})
#: Names config-default.xml may not set (PropertiesUtils.DEFAULT_DISALLOWED_PROPERTIES, E0804).
DISALLOWED_DEFAULT_PROPERTIES = frozenset({USER_NAME, "mapreduce.job.user.name"})


def _function_names() -> frozenset[str]:
    # The EL library owns the list of functions.
    from workflows.el import FUNCTION_NAMES  # noqa: PLC0415 - workflows.el imports Django settings (through the action storage); workflows.definitions imports no Django (ADR 0021)

    return frozenset(FUNCTION_NAMES)


def layer_configuration(
    app: WorkflowApp, configuration: Mapping[str, str], config_default: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Job properties > config-default.xml > `<parameters>` defaults; required parameters checked; `${p}` expanded."""
    defaults = dict(config_default or {})
    refused = sorted(DISALLOWED_DEFAULT_PROPERTIES & defaults.keys())
    if refused:
        raise ConfigurationError(f"config-default.xml may not set property {refused[0]!r}", source="config-default.xml")
    layered = dict(configuration)
    for name, value in defaults.items():
        layered.setdefault(name, value)
    refused = sorted(DISALLOWED_USER_PROPERTIES & layered.keys())
    if refused:
        raise ConfigurationError(f"property {refused[0]!r} may not be set: it is an EL constant", source=app.source)
    for parameter in app.parameters:
        if not parameter.name:
            raise DefinitionError("a <parameters> property has an empty <name>", source=app.source, element="parameters")
    layered = merge_parameters(app, layered)
    return expand_properties(layered, user=layered.get(USER_NAME, ""), source=app.source)


class _Resolver:
    """Checks and resolves the templates of one submission, naming the node on refusal."""

    def __init__(self, app: WorkflowApp, variables: Mapping[str, Any]) -> None:
        self.app = app
        self.ctx = ELContext(variables=variables, functions=FunctionRegistry(), phase=Phase.SUBMISSION)
        self.functions = _function_names()

    def fail(self, node: str, element: str, message: str) -> WorkflowELError:
        where = "the workflow name" if not node else f"node {node!r}"
        return WorkflowELError(f"{where}: {message}", source=self.app.source, line=self.app.lines.get(node), element=element)

    def template(self, text: str, node: str, element: str) -> str:
        """The template with its call-free expressions evaluated; refused if a variable or function is unknown."""
        if "${" not in text:
            return text
        try:
            segments = parse_template(text)
        except ELError as exc:
            raise self.fail(node, element, f"invalid EL in {_short(text)}: {exc.message}") from None
        for segment in segments:
            if not isinstance(segment, Expression):
                continue
            for name in calls_in(segment.node):
                if name not in self.functions:
                    raise self.fail(node, element, f"unknown EL function {name!r} in ${{{segment.source}}}")
            for name in variables_in(segment.node):
                if name not in self.ctx.variables:
                    raise self.fail(
                        node, element, f"variable {name!r} is not defined (no job property, config-default.xml value "
                        f"or <parameters> default) in ${{{segment.source}}}",
                    )
        try:
            return partially_resolve(text, self.ctx, defer=lambda name: True)
        except ELError as exc:
            raise self.fail(node, element, f"cannot evaluate {_short(text)}: {exc.message}") from None

    def value(self, value: Any, node: str, element: str) -> Any:
        """Resolve every string of a spec (lists, dicts: keys and values); booleans and numbers stay."""
        if isinstance(value, str):
            return self.template(value, node, element)
        if isinstance(value, list):
            return [self.value(item, node, element) for item in value]
        if isinstance(value, dict):
            return {
                self.template(k, node, element): (v if k == "op" else self.value(v, node, element))
                for k, v in value.items()
            }
        return value

    def integer(self, text: str | None, default: int, node: str, attribute: str) -> int:
        """A retry attribute evaluated now (no functions), a non-negative integer."""
        if text is None:
            return default
        resolved = self.final(text, node, "action", attribute).strip()
        if not resolved.isdigit():
            raise self.fail(node, "action", f"{attribute} {text!r} resolves to {resolved!r}, not a non-negative integer")
        return int(resolved)

    def final(self, text: str, node: str, element: str, what: str) -> str:
        """A text evaluated completely now: variables only, no function calls."""
        resolved = self.template(text, node, element)
        if "${" in resolved.replace("\\${", ""):
            raise self.fail(node, element, f"{what} {_short(text)} may not call EL functions")
        return resolved.replace("\\${", "${")


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 3] + "...")


def _resolve_node(node: NodeDef, app: WorkflowApp, resolver: _Resolver, global_conf: Mapping[str, str]) -> NodeDef:
    name = node.name
    if node.kind == "kill":
        return replace(node, message=resolver.template(node.message, name, "kill"))
    if node.kind == "decision":
        cases = tuple((resolver.template(predicate, name, "case"), target) for predicate, target in node.cases)
        return replace(node, cases=cases)
    if node.kind != "action":
        return node
    spec = dict(node.spec)
    if "configuration" in spec:  # the parser gives one to every configurable action (CONFIGURABLE_ACTIONS, site types)
        spec["configuration"] = {**global_conf, **spec.get("configuration", {})}  # the action's own wins
    spec = resolver.value(spec, name, node.action_type)
    max_template, interval_template = app.retry.get(name, (None, None))
    return replace(
        node, spec=spec,
        retry_max=resolver.integer(max_template, node.retry_max, name, "retry-max"),
        retry_interval=resolver.integer(interval_template, node.retry_interval, name, "retry-interval"),
    )


def resolve_workflow(app: WorkflowApp, configuration: Mapping[str, str]) -> WorkflowDefinition:
    """The definition with every call-free expression resolved against a layered configuration (checked)."""
    resolver = _Resolver(app, {**EL_CONSTANTS, **configuration})
    definition = app.definition
    nodes = {name: _resolve_node(node, app, resolver, app.global_configuration) for name, node in definition.nodes.items()}
    name = resolver.final(definition.name, "", "workflow-app", "name").strip()
    if not name:
        raise DefinitionError(f"the workflow name {definition.name!r} resolves to an empty string", source=app.source)
    return replace(definition, name=name, nodes=nodes)


def prepare_workflow(
    xml: str | bytes,
    configuration: Mapping[str, str],
    *,
    app_path: str,
    config_default: Mapping[str, str] | None = None,
    source: str = "workflow.xml",
) -> PreparedWorkflow:
    """Parse, validate, layer and resolve a workflow submission; DefinitionError (one line) if refused."""
    app = parse_workflow_app(xml, source)
    try:
        text = xml.decode("utf-8") if isinstance(xml, bytes) else xml
    except UnicodeDecodeError:
        raise DefinitionError("the workflow definition is not UTF-8 text", source=source) from None
    layered = layer_configuration(app, configuration, config_default)
    layered.setdefault(WF_APP_PATH, app_path)
    definition = resolve_workflow(app, layered)
    return PreparedWorkflow(definition=definition, configuration=layered, app_path=app_path, xml=text)
