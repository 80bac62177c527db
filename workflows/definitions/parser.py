"""workflow.xml -> WorkflowApp: hardened parse, refusal of unsupported actions, XSD validation, extraction, DAG checks.

Action types: fs and sub-workflow (the workflow's namespace), the packaged extensions (shell,
email, celery), and the site action types registered by namespace (workflows.actions.site,
WORKFLOW_ACTION_TYPES: ssh and distcp by default), each validated against its own XSD and
turned into a spec by its own `parse`. Any other action (Oozie's Hadoop actions among them)
is refused by name, pointing at that extension point.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

from oozie.definitions.errors import DefinitionError
from oozie.definitions.includes import child, children, text
from oozie.definitions.model import Parameter
from oozie.definitions.xmlsafe import local_name, namespace_of, parse_xml, source_line
from workflows.definitions.errors import (
    TooManyNodesError,
    UnsupportedActionError,
    WorkflowGraphError,
)
from workflows.definitions.extensions import ActionExtension, Extensions
from workflows.definitions.graph import START_NODE, check_graph
from workflows.definitions.model import ACTION_KIND, ACTION_TYPES, NodeDef, WorkflowDefinition
from workflows.definitions.schemas import EXTENSION_SCHEMAS, check_namespace, site_schemas, validate

#: Most nodes a workflow may have (start included). A fixed bound against hostile or generated input.
MAX_NODES = 2_000
#: Actions of Oozie's Hadoop world, named as such in the refusal.
HADOOP_ACTIONS = frozenset(
    {"map-reduce", "pig", "hive", "hive2", "java", "spark", "sqoop", "distcp", "ssh", "git", "streaming", "pipes"}
)
#: The setting that registers site action types (workflows.actions.site), named in refusals.
SITE_SETTING = "WORKFLOW_ACTION_TYPES"
#: Action types whose `<configuration>` receives the `<global>` one (Oozie: supportsConfigurationJobXML()).
CONFIGURABLE_ACTIONS = frozenset({"fs", "shell", "sub-workflow", "celery"})
_NODE_ELEMENTS = frozenset({"start", "end", "kill", "decision", "fork", "join", "action"})
_ACTION_CONTROL = frozenset({"ok", "error", "info"})  # info: sla:info


@dataclass(frozen=True)
class WorkflowApp:
    """A parsed workflow application: the DAG (templates unresolved), `<parameters>`, `<global>` configuration.

    `retry`: each action's raw `retry-max` / `retry-interval` attributes (they may hold `${...}`;
    resolved at submission into NodeDef.retry_max / retry_interval).
    """

    definition: WorkflowDefinition
    parameters: tuple[Parameter, ...] = ()
    global_configuration: Mapping[str, str] = field(default_factory=dict)
    retry: Mapping[str, tuple[str | None, str | None]] = field(default_factory=dict)
    lines: Mapping[str, int | None] = field(default_factory=dict)
    source: str = "workflow.xml"


def _elements(element: etree._Element) -> list[etree._Element]:
    return [c for c in element if isinstance(c.tag, str)]


def _raw(element: etree._Element | None) -> str:
    """An element's text as written (values keep their blanks, as Hadoop keeps them)."""
    return "" if element is None else (element.text or "")


def _configuration(element: etree._Element | None, source: str) -> dict[str, str]:
    """`<configuration><property><name/><value/></property>...` as a dict (later duplicates win)."""
    result: dict[str, str] = {}
    for prop in children(element, "property") if element is not None else []:
        name = text(child(prop, "name")) or ""
        if not name:
            raise DefinitionError("a <property> has no <name>", source=source, line=source_line(prop), element="property")
        result[name] = _raw(child(prop, "value"))
    return result


def _action_element(action: etree._Element, source: str) -> etree._Element:
    """The element inside `<action>` that says what it does (the XSD guarantees one after validation)."""
    for element in _elements(action):
        if local_name(element) not in _ACTION_CONTROL:
            return element
    raise DefinitionError(
        f"action node {action.get('name', '')!r} has no action element", source=source, line=source_line(action), element="action"
    )


def action_type(element: etree._Element, workflow_ns: str, extensions: Extensions | None = None) -> str | None:
    """The supported action type of an action element, or None when this service does not run it."""
    name, namespace = local_name(element), namespace_of(element)
    if namespace == workflow_ns:
        return name if name in ("fs", "sub-workflow") else None
    known = EXTENSION_SCHEMAS.get(namespace)
    if known is not None:
        return known[0] if known[0] == name else None
    site = (extensions or {}).get(namespace)
    return site.action_type if site is not None and site.action_type == name else None


def supported_types(extensions: Extensions) -> list[str]:
    """Every action type a workflow may use: the built-in ones, then the site's."""
    return list(dict.fromkeys([*ACTION_TYPES, *sorted({ext.action_type for ext in extensions.values()})]))


def _refuse_unsupported(root: etree._Element, workflow_ns: str, source: str, extensions: Extensions) -> None:
    """One line naming the first action node whose type is not supported (before the XSD says something obscure)."""
    for action in children(root, "action"):
        element = next((e for e in _elements(action) if local_name(e) not in _ACTION_CONTROL), None)
        if element is None or action_type(element, workflow_ns, extensions) is not None:
            continue
        kind = local_name(element)
        namespace = namespace_of(element)
        namespaces = sorted(
            [ns for ns, (name, _) in EXTENSION_SCHEMAS.items() if name == kind]
            + [ns for ns, ext in extensions.items() if ext.action_type == kind]
        )
        if namespaces:  # a supported action in the wrong (or no) namespace
            raise UnsupportedActionError(
                f"action node {action.get('name', '')!r}: <{kind}> must be in one of the namespaces "
                f"{', '.join(namespaces)}, not {namespace or 'none'!r}",
                source=source, line=source_line(action), element="action",
            )
        what = f"action type {kind!r}" + (f" ({namespace})" if namespace and namespace != workflow_ns else "")
        why = "Hadoop actions are not supported" if kind in HADOOP_ACTIONS else "it is not supported"
        raise UnsupportedActionError(
            f"action node {action.get('name', '')!r}: {what} is not supported ({why}; "
            f"supported: {', '.join(supported_types(extensions))}; a site adds an action type with an executor "
            f"class and its XSD registered for the namespace in {SITE_SETTING}: see 'Site action types' in docs/workflows.md)",
            source=source, line=source_line(action), element="action",
        )


def _prepare(element: etree._Element) -> list[dict[str, str]]:
    prepare = child(element, "prepare")
    if prepare is None:
        return []
    return [{"op": local_name(op), "path": op.get("path", "")} for op in _elements(prepare)]


def _fs_spec(element: etree._Element, node: str, source: str) -> dict[str, Any]:
    operations: list[dict[str, Any]] = []
    for op in _elements(element):
        kind = local_name(op)
        if kind in ("mkdir", "delete", "touchz"):  # delete's skip-trash: there is no trash on fsspec storage
            operations.append({"op": kind, "path": op.get("path", "")})
        elif kind == "move":
            operations.append({"op": "move", "source": op.get("source", ""), "target": op.get("target", "")})
        elif kind == "chmod":
            operations.append({
                "op": "chmod", "path": op.get("path", ""), "permissions": op.get("permissions", ""),
                "dir_files": (op.get("dir-files") or "true").strip().lower() != "false",
                "recursive": child(op, "recursive") is not None,
            })
        elif kind == "chgrp":
            raise UnsupportedActionError(
                f"action node {node!r}: fs operation 'chgrp' is not supported (groups are not portable across fsspec storage)",
                source=source, line=source_line(op), element="chgrp",
            )
        # name-node, job-xml: Hadoop-only; setrep: HDFS replication, meaningless elsewhere; configuration: below
    return {"operations": operations}


def _split_list(value: str) -> list[str]:
    """A comma-separated list (email addresses, attachments), keeping commas inside `${...}`."""
    items: list[str] = []
    depth, current = 0, []
    i = 0
    while i < len(value):
        if value.startswith("${", i):
            depth += 1
            current.append("${")
            i += 2
            continue
        ch = value[i]
        if ch == "}" and depth:
            depth -= 1
        if ch == "," and not depth:
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    items.append("".join(current))
    return [item.strip() for item in items if item.strip()]


def _site_spec(extension: ActionExtension, element: etree._Element, node: str, source: str) -> dict[str, Any]:
    """A site action type's spec, from its own parse; DefinitionError if it refuses the element or returns no JSON dict.

    A site's parse that raises something else is still the submission's refusal (a 400, not a
    500), naming the type and the exception.
    """
    line, name = source_line(element), local_name(element)
    try:
        spec = extension.parse(element, node=node, source=source)
    except DefinitionError:
        raise
    except Exception as exc:
        raise DefinitionError(
            f"action node {node!r}: the {extension.action_type} action type cannot read its element: "
            f"{type(exc).__name__}: {' '.join(str(exc).split())}", source=source, line=line, element=name,
        ) from None
    try:
        serializable = isinstance(spec, dict) and bool(json.dumps(spec))
    except (TypeError, ValueError):
        serializable = False
    if not serializable:
        raise DefinitionError(
            f"action node {node!r}: the {extension.action_type} action type's parse returned no JSON spec dict",
            source=source, line=line, element=name,
        )
    spec = dict(spec)
    if extension.configurable:
        spec["configuration"] = _configuration(child(element, "configuration"), source)
    prepare = _prepare(element)
    if prepare:
        spec["prepare"] = prepare
    return spec


def _action_spec(kind: str, element: etree._Element, node: str, source: str) -> dict[str, Any]:
    """The spec of one built-in action, in the shape model.py documents (texts still templates)."""
    spec: dict[str, Any]
    if kind == "fs":
        spec = _fs_spec(element, node, source)
    elif kind == "shell":
        spec = {
            "exec": text(child(element, "exec")) or "",
            "args": [_raw(e) for e in children(element, "argument")],
            "env": [(e.text or "").strip() for e in children(element, "env-var")],
            "capture_output": child(element, "capture-output") is not None,
        }
    elif kind == "email":
        spec = {
            "to": _split_list(_raw(child(element, "to"))),
            "cc": _split_list(_raw(child(element, "cc"))),
            "bcc": _split_list(_raw(child(element, "bcc"))),
            "subject": _raw(child(element, "subject")),
            "body": _raw(child(element, "body")),
            "content_type": text(child(element, "content_type")) or "text/plain",
            "attachments": _split_list(_raw(child(element, "attachment"))),
        }
    elif kind == "sub-workflow":
        spec = {
            "app_path": text(child(element, "app-path")) or "",
            "propagate_configuration": child(element, "propagate-configuration") is not None,
        }
    else:  # celery
        kwargs: dict[str, str] = {}
        for kwarg in children(element, "kwarg"):
            name = kwarg.get("name", "")
            if name in kwargs:
                raise DefinitionError(
                    f"action node {node!r}: kwarg {name!r} is given twice", source=source,
                    line=source_line(kwarg), element="kwarg",
                )
            kwargs[name] = _raw(kwarg)
        spec = {
            "task": text(child(element, "task")) or "",
            "args": [_raw(e) for e in children(element, "arg")],
            "kwargs": kwargs,
        }
    if kind in CONFIGURABLE_ACTIONS:
        spec["configuration"] = _configuration(child(element, "configuration"), source)
    prepare = _prepare(element)
    if prepare:
        spec["prepare"] = prepare
    return spec


def _retry_value(action: etree._Element, attribute: str, node: str, source: str) -> tuple[int | None, str | None]:
    """(int value, None) for a literal attribute, (None, template) when it holds `${...}`, (None, None) if absent."""
    raw = action.get(attribute)
    if raw is None or not raw.strip():
        return None, None
    raw = raw.strip()
    if "${" in raw:
        return None, raw
    if not raw.isdigit():
        raise DefinitionError(
            f"action node {node!r}: {attribute} {raw!r} is not a non-negative integer",
            source=source, line=source_line(action), element="action",
        )
    return int(raw), None


def _node(
    element: etree._Element, workflow_ns: str, source: str, extensions: Extensions,
) -> tuple[NodeDef, tuple[str | None, str | None]]:
    kind = local_name(element)
    name = element.get("name", "")
    if kind == "start":
        return NodeDef(START_NODE, "start", to=(element.get("to", ""),)), (None, None)
    if kind == "end":
        return NodeDef(name, "end"), (None, None)
    if kind == "kill":
        return NodeDef(name, "kill", message=(_raw(child(element, "message"))).strip()), (None, None)
    if kind == "fork":
        return NodeDef(name, "fork", to=tuple(path.get("start", "") for path in children(element, "path"))), (None, None)
    if kind == "join":
        return NodeDef(name, "join", to=(element.get("to", ""),)), (None, None)
    if kind == "decision":
        switch = child(element, "switch")
        cases = tuple((_raw(case).strip(), case.get("to", "")) for case in children(switch, "case")) if switch is not None else ()
        default = child(switch, "default")
        return NodeDef(name, "decision", cases=cases, default=default.get("to", "") if default is not None else ""), (None, None)
    body = _action_element(element, source)
    action = action_type(body, workflow_ns, extensions) or ""
    site = extensions.get(namespace_of(body))  # never a packaged namespace (workflows.actions.site refuses those)
    spec = _site_spec(site, body, name, source) if site is not None else _action_spec(action, body, name, source)
    retry_max, max_template = _retry_value(element, "retry-max", name, source)
    retry_interval, interval_template = _retry_value(element, "retry-interval", name, source)
    node = NodeDef(
        name, ACTION_KIND, to=(element_attr(child(element, "ok"), "to"),), error_to=element_attr(child(element, "error"), "to"),
        action_type=action, spec=spec,
        retry_max=retry_max if retry_max is not None else 0,
        retry_interval=retry_interval if retry_interval is not None else 10,
    )
    return node, (max_template, interval_template)


def element_attr(element: etree._Element | None, attribute: str) -> str:
    """An attribute of an optional element ('' when either is missing)."""
    return "" if element is None else element.get(attribute, "")


def _parameters(root: etree._Element) -> tuple[Parameter, ...]:
    params = child(root, "parameters")
    if params is None:
        return ()
    return tuple(
        Parameter(text(child(prop, "name")) or "", text(child(prop, "value")), text(child(prop, "description")))
        for prop in children(params, "property")
    )


def site_action_types() -> Extensions:
    """The site action types this service registers (WORKFLOW_ACTION_TYPES; ssh and distcp by default)."""
    from workflows.actions.site import registered  # noqa: PLC0415 - reads Django settings and imports executors; workflows.definitions imports no Django (ADR 0021)

    return registered()


def parse_workflow_app(xml: str | bytes, source: str = "workflow.xml", *, extensions: Extensions | None = None) -> WorkflowApp:
    """Parse and validate a workflow.xml (schemas 0.1-1.0); DefinitionError, one line, if refused.

    `extensions`: the site action types by namespace; the service's own (site_action_types) when None.
    """
    if extensions is None:
        extensions = site_action_types()
    root = parse_xml(xml, source)
    namespace = check_namespace(root, source)
    count = sum(1 for e in _elements(root) if local_name(e) in _NODE_ELEMENTS)
    if count > MAX_NODES:
        raise TooManyNodesError(
            f"workflow has {count} nodes; at most {MAX_NODES} are accepted", source=source,
            line=source_line(root), element="workflow-app",
        )
    _refuse_unsupported(root, namespace, source, extensions)
    validate(root, source, site_schemas(extensions))
    nodes: dict[str, NodeDef] = {}
    lines: dict[str, int | None] = {}
    retry: dict[str, tuple[str | None, str | None]] = {}
    for element in _elements(root):
        if local_name(element) not in _NODE_ELEMENTS:
            continue
        node, templates = _node(element, namespace, source, extensions)
        if node.name in nodes:
            raise WorkflowGraphError(
                f"node name {node.name!r} is used by more than one node", source=source,
                line=source_line(element), element=local_name(element),
            )
        nodes[node.name] = node
        lines[node.name] = source_line(element)
        if templates != (None, None):
            retry[node.name] = templates
    forks = check_graph(nodes, lines, source)
    global_element = child(root, "global")
    definition = WorkflowDefinition(
        name=root.get("name", ""), schema=namespace, start=nodes[START_NODE].to[0], nodes=nodes, forks=forks
    )
    return WorkflowApp(
        definition=definition,
        parameters=_parameters(root),
        global_configuration=_configuration(child(global_element, "configuration"), source),
        retry=retry,
        lines=lines,
        source=source,
    )


def parse_workflow(xml: str | bytes, source: str = "workflow.xml", *, extensions: Extensions | None = None) -> WorkflowDefinition:
    """Parse and validate a workflow.xml into its DAG (texts still `${...}` templates)."""
    return parse_workflow_app(xml, source, extensions=extensions).definition
