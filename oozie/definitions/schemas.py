"""XSD validation of coordinator (0.1-0.5) and bundle (0.1-0.2) documents, from packaged files only."""

from __future__ import annotations

import re
import threading
from functools import cache
from pathlib import Path
from typing import Any

from lxml import etree

from oozie.definitions.errors import SchemaValidationError, UnsupportedNamespaceError
from oozie.definitions.xmlsafe import local_name, namespace_of, source_line

XSD_DIR = Path(__file__).resolve().parent / "xsd"
SLA_SCHEMAS = {"uri:oozie:sla:0.1": "oozie-sla-0.1.xsd", "uri:oozie:sla:0.2": "oozie-sla-0.2.xsd"}
COORDINATOR_SCHEMAS = {f"uri:oozie:coordinator:0.{v}": f"oozie-coordinator-0.{v}.xsd" for v in range(1, 6)}
BUNDLE_SCHEMAS = {f"uri:oozie:bundle:0.{v}": f"oozie-bundle-0.{v}.xsd" for v in range(1, 3)}
SCHEMAS = {**COORDINATOR_SCHEMAS, **BUNDLE_SCHEMAS}
_LOCAL_SCHEME = "oozie-xsd:"
_ELEMENT = re.compile(r"Element '(?:\{([^}]*)\})?([^']+)'")
_LOCK = threading.Lock()  # a compiled schema's error log is shared: validate one document at a time


class _LocalResolver(etree.Resolver):
    """Resolve `oozie-xsd:NAME` to the packaged XSD file; refuse every other location."""

    def resolve(self, system_url: str | None, public_id: str | None, context: Any) -> Any:  # type: ignore[override]
        """Serve packaged XSDs; anything else (network, other files) resolves to an empty document."""
        name = (system_url or "").removeprefix(_LOCAL_SCHEME)
        known = set(SCHEMAS.values()) | set(SLA_SCHEMAS.values())
        if (system_url or "").startswith(_LOCAL_SCHEME) and name in known:
            path = XSD_DIR / name
            return self.resolve_string(path.read_bytes(), context, base_url=path.as_uri())
        return self.resolve_string(b"", context, base_url=_LOCAL_SCHEME)


@cache
def _schema(namespace: str) -> etree.XMLSchema:
    """The compiled schema of a namespace, together with the SLA schemas its actions may embed."""
    return compile_imports([(namespace, SCHEMAS[namespace]), *SLA_SCHEMAS.items()], _LocalResolver())


def compile_imports(imports: list[tuple[str, str]], resolver: etree.Resolver, scheme: str = _LOCAL_SCHEME) -> etree.XMLSchema:
    """One schema importing each (namespace, packaged file name), the files served by `resolver` only."""
    wrapper = (
        '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">'
        + "".join(f'<xs:import namespace="{ns}" schemaLocation="{scheme}{name}"/>' for ns, name in imports)
        + "</xs:schema>"
    )
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    parser.resolvers.add(resolver)
    return etree.XMLSchema(etree.fromstring(wrapper.encode(), parser=parser))


def supported_namespaces() -> list[str]:
    """Every root namespace a definition may use."""
    return sorted(SCHEMAS)


def schema_version(namespace: str) -> str:
    """`uri:oozie:coordinator:0.4` -> `0.4`."""
    return namespace.rsplit(":", 1)[-1]


def validate(root: etree._Element, source: str = "<inline>") -> str:
    """Validate against the XSD of the root's namespace and return that namespace."""
    namespace = namespace_of(root)
    if namespace not in SCHEMAS:
        shown = f"namespace {namespace!r} is not supported" if namespace else "the root element has no namespace"
        raise UnsupportedNamespaceError(
            f"{shown}; supported: {', '.join(supported_namespaces())}",
            source=source, line=source_line(root), element=local_name(root),
        )
    schema = _schema(namespace)
    with _LOCK:
        if schema.validate(root):
            return namespace
        entries: list[Any] = list(schema.error_log)  # type: ignore[call-overload]
    error = entries[0] if entries else None
    message = str(error.message) if error is not None else "does not match the schema"
    named = _ELEMENT.search(message)
    element = named.group(2) if named else None
    message = _ELEMENT.sub(lambda m: f"Element '{m.group(2)}'", message)
    message = re.sub(r"\{uri:oozie:sla:[^}]*\}", "sla:", re.sub(r"\{uri:oozie:(?:coordinator|bundle):[^}]*\}", "", message))
    line = error.line if error is not None and isinstance(error.line, int) and error.line > 0 else None
    raise SchemaValidationError(f"invalid for {namespace}: {message}", source=source, line=line, element=element)
