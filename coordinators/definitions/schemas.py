"""XSD validation of coordinator (0.1-0.5) and bundle (0.1-0.2) documents, from local files only."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from lxml import etree

from coordinators.definitions.errors import DefinitionError
from coordinators.definitions.xmlsafe import local_name, source_line

_ELEMENT = re.compile(r"Element '(?:\{[^}]*\})?([^']+)'")
_NAMESPACE = re.compile(r"\{uri:oozie:[a-z]+:0\.\d\}")
XSD_DIR = Path(__file__).resolve().parent / "xsd"
SLA_NAMESPACES = {"uri:oozie:sla:0.1": "oozie-sla-0.1.xsd", "uri:oozie:sla:0.2": "oozie-sla-0.2.xsd"}
SCHEMAS = {
    **{f"uri:oozie:coordinator:0.{v}": f"oozie-coordinator-0.{v}.xsd" for v in range(1, 6)},
    **{f"uri:oozie:bundle:0.{v}": f"oozie-bundle-0.{v}.xsd" for v in range(1, 3)},
}


@cache
def _schema(namespace: str) -> etree.XMLSchema:
    """The compiled schema for a namespace, combined with the SLA schemas its actions may embed."""
    imports = [(namespace, SCHEMAS[namespace]), *SLA_NAMESPACES.items()]
    wrapper = (
        '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">'
        + "".join(
            f'<xs:import namespace="{ns}" schemaLocation="{(XSD_DIR / name).as_uri()}"/>' for ns, name in imports
        )
        + "</xs:schema>"
    )
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    return etree.XMLSchema(etree.fromstring(wrapper.encode(), parser=parser))


def supported_namespaces() -> list[str]:
    """Every namespace a definition may use."""
    return sorted(SCHEMAS)


def validate(root: etree._Element, source: str = "<inline>") -> str:
    """Validate against the schema of the root's namespace; return the namespace.

    A violation is a DefinitionError naming the line and the element at fault.
    """
    namespace = etree.QName(root).namespace or ""
    if namespace not in SCHEMAS:
        raise DefinitionError(
            f"unknown namespace {namespace!r}; supported: {', '.join(supported_namespaces())}",
            source=source, line=source_line(root), element=local_name(root),
        )
    schema = _schema(namespace)
    if schema.validate(root):
        return namespace
    entries: list[Any] = list(schema.error_log)  # type: ignore[call-overload]  # lxml-stubs lack __iter__
    error = entries[0] if entries else None
    message = error.message if error is not None else "does not match the schema"
    named = _ELEMENT.search(message)
    element = named.group(1) if named else None
    message = _NAMESPACE.sub("", message)
    raise DefinitionError(
        f"invalid for {namespace}: {message}", source=source, line=error.line if error is not None else None, element=element
    )
