"""Coordinator XML -> CoordinatorApp: hardened parse, XSD validation, includes, extraction."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from lxml import etree

from oozie.definitions.errors import (
    DuplicateEventError,
    MissingParameterError,
    UndefinedDatasetError,
    UnsupportedFeatureError,
    UnsupportedNamespaceError,
)
from oozie.definitions.includes import (
    Loader,
    child,
    children,
    fsspec_loader,
    resolve_datasets,
    text,
)
from oozie.definitions.model import (
    Action,
    Controls,
    CoordinatorApp,
    DataIn,
    DataOut,
    LogicNode,
    Parameter,
    SLAInfo,
)
from oozie.definitions.schemas import schema_version, validate
from oozie.definitions.xmlsafe import (
    DEFAULT_MAX_BYTES,
    local_name,
    namespace_of,
    parse_xml,
    source_line,
)

__all__ = ["fsspec_loader", "merge_parameters", "parse_coordinator"]


def _parameters(root: etree._Element) -> tuple[Parameter, ...]:
    params = child(root, "parameters")
    if params is None:
        return ()
    return tuple(
        Parameter(text(child(prop, "name")) or "", text(child(prop, "value")), text(child(prop, "description")))
        for prop in children(params, "property")
    )


def _controls(root: etree._Element) -> Controls:
    element = child(root, "controls")
    return Controls(
        timeout=text(child(element, "timeout")),
        concurrency=text(child(element, "concurrency")),
        execution=text(child(element, "execution")),
        throttle=text(child(element, "throttle")),
    )


def _inputs(root: etree._Element, source: str) -> tuple[DataIn, ...]:
    events = child(root, "input-events")
    if events is None:
        return ()
    for element in (*children(events, "and"), *children(events, "or")):
        raise UnsupportedFeatureError(
            "<and>/<or> belong in <input-logic>, not <input-events>", source=source,
            line=source_line(element), element=local_name(element),
        )
    return tuple(
        DataIn(
            name=element.get("name", ""),
            dataset=element.get("dataset", ""),
            instances=tuple(text(i) or "" for i in children(element, "instance")),
            start_instance=text(child(element, "start-instance")),
            end_instance=text(child(element, "end-instance")),
        )
        for element in children(events, "data-in")
    )


LOGIC_KINDS = ("and", "or", "combine", "data-in")
#: Nesting deeper than this is refused (a hostile document must not exhaust the stack).
MAX_LOGIC_DEPTH = 32


def _logic_node(element: etree._Element, source: str, depth: int) -> LogicNode:
    kind = local_name(element)
    line = source_line(element)
    if depth > MAX_LOGIC_DEPTH:
        raise UnsupportedFeatureError(
            f"<input-logic> nested deeper than {MAX_LOGIC_DEPTH} levels", source=source, line=line, element=kind
        )
    elements = [c for c in element if isinstance(c.tag, str)]
    nodes = tuple(_logic_node(c, source, depth + 1) for c in elements)
    if kind in ("and", "or") and not nodes:
        raise UnsupportedFeatureError(f"<{kind}> in <input-logic> names no data-in", source=source, line=line, element=kind)
    if kind == "combine" and (len(nodes) < 2 or any(n.kind != "data-in" for n in nodes)):
        raise UnsupportedFeatureError(
            "<combine> holds two or more <data-in> and nothing else (it cannot be nested, spec 6.10)",
            source=source, line=line, element=kind,
        )

    def attribute(name: str) -> str | None:
        value = element.get(name)
        return None if value is None or not value.strip() else value.strip()

    return LogicNode(
        kind=kind, name=attribute("name"), min=attribute("min"), wait=attribute("wait"),
        dataset=attribute("dataset"), children=nodes, line=line,
    )


def _logic(root: etree._Element, source: str) -> LogicNode | None:
    """`<input-logic>`: exactly one and, or, combine or data-in (Oozie turns more into an invalid expression)."""
    logic = child(root, "input-logic")
    if logic is None:
        return None
    elements = [c for c in logic if isinstance(c.tag, str)]
    if len(elements) != 1:
        raise UnsupportedFeatureError(
            f"<input-logic> holds one <and>, <or>, <combine> or <data-in> (combine several with <and> or <or>), "
            f"got {len(elements)}", source=source, line=source_line(logic), element="input-logic",
        )
    return _logic_node(elements[0], source, 1)


def _outputs(root: etree._Element) -> tuple[DataOut, ...]:
    events = child(root, "output-events")
    return tuple(
        DataOut(
            name=element.get("name", ""),
            dataset=element.get("dataset", ""),
            instance=text(child(element, "instance")) or "",
            nocleanup=element.get("nocleanup", "false").strip() in ("true", "1"),
        )
        for element in (children(events, "data-out") if events is not None else [])
    )


def _sla(action: etree._Element | None) -> SLAInfo | None:
    info = next(
        (c for c in (action if action is not None else []) if isinstance(c.tag, str) and local_name(c) == "info"), None
    )
    if info is None:
        return None
    values = {local_name(c).replace("-", "_"): (c.text or "").strip() for c in info if isinstance(c.tag, str)}
    return SLAInfo(
        version=schema_version(namespace_of(info)),
        nominal_time=values.pop("nominal_time", ""),
        should_end=values.pop("should_end", ""),
        **values,
    )


def _action(root: etree._Element) -> Action:
    action = child(root, "action")
    workflow = child(action, "workflow")
    configuration = child(workflow, "configuration")
    pairs = tuple(
        (text(child(prop, "name")) or "", (value.text or "") if (value := child(prop, "value")) is not None else "")
        for prop in (children(configuration, "property") if configuration is not None else [])
    )
    return Action(app_path=text(child(workflow, "app-path")) or "", configuration=pairs, sla=_sla(action))


def _check_events(app: CoordinatorApp, root: etree._Element) -> None:
    """Events name defined datasets; event names are unique across inputs and outputs."""
    lines: dict[str, int | None] = {}
    for container in ("input-events", "output-events"):
        for element in root.iter(f"{{{app.namespace}}}{container}"):
            for event in element:
                if isinstance(event.tag, str):
                    lines.setdefault(event.get("name", ""), source_line(event))
    defined = {dataset.name for dataset in app.datasets}
    seen: set[str] = set()
    events = [(e.name, e.dataset, "data-in") for e in app.input_events]
    events += [(e.name, e.dataset, "data-out") for e in app.output_events]
    for name, dataset, kind in events:
        if dataset not in defined:
            raise UndefinedDatasetError(
                f"event {name!r} refers to undefined dataset {dataset!r}; defined: {', '.join(sorted(defined)) or 'none'}",
                source=app.source, line=lines.get(name), element=kind,
            )
        if name in seen:
            raise DuplicateEventError(f"event names must be unique: {name!r} is used twice", source=app.source, element=kind)
        seen.add(name)


def parse_coordinator(
    data: bytes | str,
    source: str = "coordinator.xml",
    *,
    app_dir: str | None = None,
    loader: Loader | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> CoordinatorApp:
    """Parse and validate coordinator XML, resolving `<include>`d datasets through loader (default: fsspec)."""
    root = parse_xml(data, source, max_bytes)
    namespace = validate(root, source)
    if local_name(root) != "coordinator-app":
        raise UnsupportedNamespaceError(
            f"expected <coordinator-app> in uri:oozie:coordinator:0.1-0.5, got <{local_name(root)}> in {namespace}",
            source=source, line=source_line(root), element=local_name(root),
        )
    datasets, includes = resolve_datasets(
        child(root, "datasets"), source, namespace, app_dir, loader or fsspec_loader(max_bytes)
    )
    logic = child(root, "input-logic")
    app = CoordinatorApp(
        schema_version=schema_version(namespace),
        name=root.get("name", ""),
        frequency=root.get("frequency", "").strip(),
        start=root.get("start", "").strip(),
        end=root.get("end", "").strip(),
        timezone=root.get("timezone", "").strip(),
        action=_action(root),
        controls=_controls(root),
        parameters=_parameters(root),
        datasets=datasets,
        dataset_includes=includes,
        input_events=_inputs(root, source),
        input_logic=None if logic is None else etree.tostring(logic, encoding="unicode", with_tail=False),
        logic=_logic(root, source),
        output_events=_outputs(root),
        source=source,
    )
    _check_events(app, root)
    return app


class HasParameters(Protocol):
    """An application with `<parameters>` (coordinators 0.4+, bundles 0.2)."""

    @property
    def parameters(self) -> tuple[Parameter, ...]: ...

    @property
    def source(self) -> str: ...


def merge_parameters(app: HasParameters, job_properties: Mapping[str, str]) -> dict[str, str]:
    """Job properties with `<parameters>` defaults filled in; raises MissingParameterError naming every missing one."""
    merged = dict(job_properties)
    missing: list[str] = []
    for parameter in app.parameters:
        if parameter.name in merged:
            continue
        if parameter.default is None:
            missing.append(parameter.name)
        else:
            merged[parameter.name] = parameter.default
    if missing:
        raise MissingParameterError(tuple(missing), source=app.source)
    return merged

