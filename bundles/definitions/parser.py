"""Bundle XML -> BundleApp: the coordinators' hardened parser and the packaged bundle XSDs (pure)."""

from __future__ import annotations

from lxml import etree

from bundles.definitions.model import BundleApp, BundleCoordinator
from oozie.definitions.errors import DefinitionError, UnsupportedNamespaceError
from oozie.definitions.includes import child, children, text
from oozie.definitions.model import Parameter
from oozie.definitions.schemas import BUNDLE_SCHEMAS, schema_version, validate
from oozie.definitions.xmlsafe import DEFAULT_MAX_BYTES, local_name, parse_xml, source_line


class DuplicateCoordinatorError(DefinitionError):
    """Two `<coordinator>`s of a bundle share a name."""


def _parameters(root: etree._Element) -> tuple[Parameter, ...]:
    params = child(root, "parameters")
    if params is None:
        return ()
    return tuple(
        Parameter(text(child(prop, "name")) or "", text(child(prop, "value")), text(child(prop, "description")))
        for prop in children(params, "property")
    )


def _coordinator(element: etree._Element) -> BundleCoordinator:
    configuration = child(element, "configuration")
    pairs = tuple(
        (text(child(prop, "name")) or "", (value.text or "") if (value := child(prop, "value")) is not None else "")
        for prop in (children(configuration, "property") if configuration is not None else [])
    )
    return BundleCoordinator(
        name=element.get("name", "").strip(),
        app_path=text(child(element, "app-path")) or "",
        configuration=pairs,
        critical=element.get("critical"),
        enabled=element.get("enabled"),
        line=source_line(element),
    )


def parse_bundle(data: bytes | str, source: str = "bundle.xml", *, max_bytes: int = DEFAULT_MAX_BYTES) -> BundleApp:
    """Parse and validate bundle XML (uri:oozie:bundle:0.1 or 0.2); coordinator names must be unique."""
    root = parse_xml(data, source, max_bytes)
    namespace = validate(root, source)
    if namespace not in BUNDLE_SCHEMAS or local_name(root) != "bundle-app":
        raise UnsupportedNamespaceError(
            f"expected <bundle-app> in uri:oozie:bundle:0.1-0.2, got <{local_name(root)}> in {namespace}",
            source=source, line=source_line(root), element=local_name(root),
        )
    coordinators = tuple(_coordinator(element) for element in children(root, "coordinator"))
    seen: set[str] = set()
    for coordinator in coordinators:
        if coordinator.name in seen:
            raise DuplicateCoordinatorError(
                f"coordinator names must be unique in a bundle: {coordinator.name!r} is used twice",
                source=source, line=coordinator.line, element="coordinator",
            )
        seen.add(coordinator.name)
    controls = child(root, "controls")
    return BundleApp(
        schema_version=schema_version(namespace),
        name=root.get("name", ""),
        coordinators=coordinators,
        kick_off_time=text(child(controls, "kick-off-time")) or None,
        parameters=_parameters(root),
        source=source,
    )
