"""Hardened XML parsing: no DTDs, no entities, no network, a size limit, errors with lines."""

from __future__ import annotations

import re

from lxml import etree

from coordinators.definitions.errors import DefinitionError

DEFAULT_MAX_BYTES = 1_048_576
_DOCTYPE = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)


def _parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )


def local_name(element: etree._Element) -> str:
    """An element's name without its namespace."""
    return etree.QName(element).localname


def source_line(element: etree._Element) -> int | None:
    """The line an element starts on, if lxml knows it."""
    line = element.sourceline
    return line if isinstance(line, int) else None


def parse_xml(data: bytes | str, source: str = "<inline>", max_bytes: int = DEFAULT_MAX_BYTES) -> etree._Element:
    """Parse untrusted XML into an element tree, or raise DefinitionError saying why.

    Documents larger than max_bytes, or declaring a DOCTYPE or ENTITY (XXE, billion
    laughs), are refused before the parser sees them.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if len(raw) > max_bytes:
        raise DefinitionError(f"document is {len(raw)} bytes; at most {max_bytes} are accepted", source=source)
    match = _DOCTYPE.search(raw)
    if match:
        line = raw[: match.start()].count(b"\n") + 1
        raise DefinitionError("DOCTYPE and ENTITY declarations are not allowed", source=source, line=line)
    if not raw.strip():
        raise DefinitionError("document is empty", source=source)
    try:
        root = etree.fromstring(raw, parser=_parser())
    except etree.XMLSyntaxError as exc:
        message = exc.msg or str(exc)
        raise DefinitionError(f"malformed XML: {message}", source=source, line=exc.lineno or None) from None
    if root is None:
        raise DefinitionError("document has no root element", source=source)
    for node in root.iter():
        if isinstance(node, etree._Entity):
            raise DefinitionError("entity references are not allowed", source=source, line=source_line(node))
    return root
