"""Coordinator XML -> CoordinatorApp: hardened parse, XSD validation, includes, collisions."""

from __future__ import annotations

import posixpath
from collections.abc import Callable

from lxml import etree

from coordinators.definitions.errors import DefinitionError
from coordinators.definitions.model import (
    DEFAULT_DONE_FLAG,
    Action,
    Controls,
    CoordinatorApp,
    DataIn,
    DataOut,
    Dataset,
    Parameter,
    SLAInfo,
)
from coordinators.definitions.schemas import validate
from coordinators.definitions.xmlsafe import DEFAULT_MAX_BYTES, local_name, parse_xml, source_line

Loader = Callable[[str], bytes]
MAX_INCLUDES = 50


def fsspec_loader(max_bytes: int = DEFAULT_MAX_BYTES) -> Loader:
    """Read a path or fsspec URI (file://, memory://, s3://, ...) with a size limit."""

    def load(url: str) -> bytes:
        import fsspec  # optional at import time: pure callers may inject their own loader

        with fsspec.open(url, "rb") as handle:
            data = handle.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise DefinitionError(f"{url} is larger than {max_bytes} bytes", source=url)
        return bytes(data)

    return load


def _children(element: etree._Element, name: str) -> list[etree._Element]:
    return [child for child in element if isinstance(child.tag, str) and local_name(child) == name]


def _child(element: etree._Element, name: str) -> etree._Element | None:
    found = _children(element, name)
    return found[0] if found else None


def _text(element: etree._Element | None) -> str | None:
    if element is None:
        return None
    return (element.text or "").strip()


def _properties(element: etree._Element | None) -> tuple[tuple[str, str], ...]:
    if element is None:
        return ()
    pairs = []
    for prop in _children(element, "property"):
        pairs.append((_text(_child(prop, "name")) or "", (_child(prop, "value").text or "") if _child(prop, "value") is not None else ""))  # type: ignore[union-attr]
    return tuple(pairs)


def _dataset(element: etree._Element, source: str) -> Dataset:
    done = _child(element, "done-flag")
    return Dataset(
        name=element.get("name", ""),
        frequency=element.get("frequency", ""),
        initial_instance=element.get("initial-instance", ""),
        timezone=element.get("timezone", ""),
        uri_template=_text(_child(element, "uri-template")) or "",
        done_flag=DEFAULT_DONE_FLAG if done is None else (done.text or "").strip(),
        source=source,
    )


def _datasets_of(container: etree._Element, source: str, what: str) -> dict[str, Dataset]:
    found: dict[str, Dataset] = {}
    for element in _children(container, "dataset"):
        dataset = _dataset(element, source)
        if dataset.name in found:
            raise DefinitionError(
                f"dataset {dataset.name!r} is defined twice in {what}", source=source, line=source_line(element), element="dataset"
            )
        found[dataset.name] = dataset
    for element in _children(container, "async-dataset"):
        raise DefinitionError("asynchronous datasets are not supported", source=source, line=source_line(element), element="async-dataset")
    return found


def _resolve_include(href: str, app_dir: str | None) -> str:
    if "://" in href or href.startswith("/"):
        return href
    if app_dir is None:
        raise DefinitionError(f"include {href!r} is relative but the application directory is unknown")
    if "://" in app_dir:
        scheme, rest = app_dir.split("://", 1)
        return f"{scheme}://{posixpath.normpath(posixpath.join(rest, href))}"
    return posixpath.normpath(posixpath.join(app_dir, href))


def _included_datasets(
    datasets_element: etree._Element | None, source: str, app_dir: str | None, loader: Loader, seen: tuple[str, ...]
) -> dict[str, Dataset]:
    """Datasets of every <include> under a <datasets> element, recursively.

    A name defined in two included files is an error (spec 10.1.1); an include cycle too.
    """
    if datasets_element is None:
        return {}
    merged: dict[str, Dataset] = {}
    for include in _children(datasets_element, "include"):
        href = _resolve_include((include.text or "").strip(), app_dir)
        where = {"source": source, "line": source_line(include), "element": "include"}
        if href in seen:
            raise DefinitionError(f"include {href!r} includes itself", **where)  # type: ignore[arg-type]
        if len(seen) > MAX_INCLUDES:
            raise DefinitionError("too many nested includes", **where)  # type: ignore[arg-type]
        try:
            data = loader(href)
        except DefinitionError:
            raise
        except (OSError, ValueError) as exc:
            raise DefinitionError(f"cannot read include {href!r}: {exc}", **where) from None  # type: ignore[arg-type]
        included_root = parse_xml(data, href)
        validate(included_root, href)
        if local_name(included_root) != "datasets":
            raise DefinitionError("an included file must be a <datasets> document", source=href, line=source_line(included_root))
        found = _included_datasets(included_root, href, app_dir, loader, (*seen, href))
        for name, dataset in _datasets_of(included_root, href, f"included file {href}").items():
            if name in found:
                raise DefinitionError(
                    f"dataset {name!r} is defined in two included files ({found[name].source} and {href})", **where  # type: ignore[arg-type]
                )
            found[name] = dataset
        for name, dataset in found.items():
            if name in merged:
                raise DefinitionError(
                    f"dataset {name!r} is defined in two included files ({merged[name].source} and {dataset.source})",
                    **where,  # type: ignore[arg-type]
                )
            merged[name] = dataset
    return merged


def parse_coordinator(
    data: bytes | str,
    source: str = "coordinator.xml",
    *,
    app_dir: str | None = None,
    loader: Loader | None = None,
) -> CoordinatorApp:
    """Parse and validate coordinator XML; resolve <include>d datasets through loader."""
    root = parse_xml(data, source)
    namespace = validate(root, source)
    if local_name(root) != "coordinator-app":
        raise DefinitionError("the root element must be <coordinator-app>", source=source, line=source_line(root), element=local_name(root))
    load = loader or fsspec_loader()
    datasets_element = _child(root, "datasets")
    included = _included_datasets(datasets_element, source, app_dir, load, (source,))
    embedded = _datasets_of(datasets_element, source, "the coordinator") if datasets_element is not None else {}
    datasets = {**included, **embedded}  # embedded definitions take precedence (10.1.1)

    controls_element = _child(root, "controls")
    controls = Controls(
        **{
            key.replace("-", "_"): _text(_child(controls_element, key))
            for key in ("timeout", "concurrency", "execution", "throttle")
        }
    ) if controls_element is not None else Controls()
    parameters_element = _child(root, "parameters")
    parameters = tuple(
        Parameter(_text(_child(prop, "name")) or "", None if _child(prop, "value") is None else (_child(prop, "value").text or ""))  # type: ignore[union-attr]
        for prop in (_children(parameters_element, "property") if parameters_element is not None else [])
    )
    inputs: list[DataIn] = []
    input_events = _child(root, "input-events")
    if input_events is not None:
        for element in input_events.iter():
            if isinstance(element.tag, str) and local_name(element) == "data-in":
                inputs.append(DataIn(
                    name=element.get("name", ""),
                    dataset=element.get("dataset", ""),
                    instances=tuple(_text(i) or "" for i in _children(element, "instance")),
                    start_instance=_text(_child(element, "start-instance")),
                    end_instance=_text(_child(element, "end-instance")),
                ))
    outputs = tuple(
        DataOut(
            name=element.get("name", ""),
            dataset=element.get("dataset", ""),
            instance=_text(_child(element, "instance")) or "",
            nocleanup=element.get("nocleanup", "false").lower() == "true",
        )
        for element in (_children(_child(root, "output-events"), "data-out") if _child(root, "output-events") is not None else [])  # type: ignore[arg-type]
    )
    action_element = _child(root, "action")
    workflow = _child(action_element, "workflow") if action_element is not None else None
    sla_element = next(
        (child for child in (action_element if action_element is not None else []) if isinstance(child.tag, str) and local_name(child) == "info"),
        None,
    )
    sla = None
    if sla_element is not None:
        version = (etree.QName(sla_element).namespace or "").rsplit(":", 1)[-1]
        sla = SLAInfo(version, tuple((local_name(c), (c.text or "").strip()) for c in sla_element if isinstance(c.tag, str)))
    action = Action(
        app_path=_text(_child(workflow, "app-path")) or "" if workflow is not None else "",
        configuration=_properties(_child(workflow, "configuration")) if workflow is not None else (),
        sla=sla,
    )
    events: list[tuple[str, str, str]] = [(e.name, e.dataset, "data-in") for e in inputs]
    events += [(e.name, e.dataset, "data-out") for e in outputs]
    for event_name, dataset_name, kind in events:
        if dataset_name not in datasets:
            raise DefinitionError(
                f"event {event_name!r} refers to undefined dataset {dataset_name!r}", source=source, element=kind
            )
    names = [event.name for event in inputs] + [event.name for event in outputs]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise DefinitionError(f"event names must be unique: {', '.join(duplicates)}", source=source)
    return CoordinatorApp(
        schema_version=namespace.rsplit(":", 1)[-1],
        name=root.get("name", ""),
        frequency=root.get("frequency", ""),
        start=root.get("start", ""),
        end=root.get("end", ""),
        timezone=root.get("timezone", ""),
        action=action,
        controls=controls,
        parameters=parameters,
        datasets=tuple(datasets.values()),
        input_events=tuple(inputs),
        output_events=outputs,
        source=source,
    )


def merge_parameters(app: CoordinatorApp, properties: dict[str, str]) -> dict[str, str]:
    """Job properties with <parameters> defaults filled in; every missing required parameter is an error."""
    merged = dict(properties)
    missing = []
    for parameter in app.parameters:
        if parameter.name in merged:
            continue
        if parameter.default is None:
            missing.append(parameter.name)
        else:
            merged[parameter.name] = parameter.default
    if missing:
        raise DefinitionError(f"required parameters not given: {', '.join(missing)}", source=app.source, element="parameters")
    return merged
