"""Hardened XML parsing: no DTDs, no entities, no network, a size limit, errors with lines."""

from __future__ import annotations

import re

from lxml import etree

from oozie.definitions.errors import DocumentTooLargeError, MalformedXMLError, UnsafeXMLError

DEFAULT_MAX_BYTES = 1_048_576
# Declarations are refused before parsing; the docinfo check below catches other encodings (UTF-16...).
_DECLARATION = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)


def _parser() -> etree.XMLParser:
    """A fresh parser (lxml parsers are not thread-safe) that never loads or expands anything."""
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
        collect_ids=False,
    )


def local_name(element: etree._Element) -> str:
    """An element's name without its namespace."""
    return str(etree.QName(element).localname)


def namespace_of(element: etree._Element) -> str:
    """An element's namespace URI, '' when it has none."""
    return str(etree.QName(element).namespace or "")


def source_line(element: etree._Element) -> int | None:
    """The line an element starts on, if lxml knows it."""
    line = element.sourceline
    return line if isinstance(line, int) and line > 0 else None


def _declaration_line(raw: bytes) -> int | None:
    """The line of a DOCTYPE/ENTITY declaration, looking through UTF-16/32 encodings too."""
    candidates = [raw]
    if b"\x00" in raw[:4]:
        for codec in ("utf-32", "utf-32-le", "utf-32-be", "utf-16", "utf-16-le", "utf-16-be"):
            candidates.append(raw.decode(codec, errors="ignore").encode("utf-8", errors="ignore"))
    for candidate in candidates:
        match = _DECLARATION.search(candidate)
        if match:
            return candidate[: match.start()].count(b"\n") + 1
    return None


def parse_xml(data: bytes | str, source: str = "<inline>", max_bytes: int = DEFAULT_MAX_BYTES) -> etree._Element:
    """Parse untrusted XML into an element, or raise a DefinitionError saying why."""
    if isinstance(data, str):
        if len(data) > max_bytes:  # each character is at least one byte: refuse before encoding
            raise DocumentTooLargeError(f"document has {len(data)} characters; at most {max_bytes} bytes are accepted", source=source)
        raw = data.encode("utf-8", errors="surrogatepass")
    else:
        raw = bytes(data)
    if len(raw) > max_bytes:
        raise DocumentTooLargeError(f"document is {len(raw)} bytes; at most {max_bytes} bytes are accepted", source=source)
    line = _declaration_line(raw)
    if line is not None:
        raise UnsafeXMLError("DOCTYPE and ENTITY declarations are not allowed", source=source, line=line)
    if not raw.strip():
        raise MalformedXMLError("document is empty", source=source)
    try:
        root = etree.fromstring(raw, parser=_parser())
    except etree.XMLSyntaxError as exc:
        at = exc.lineno if isinstance(exc.lineno, int) and exc.lineno > 0 else None
        reason = re.sub(r",? line \d+, column \d+$", "", (exc.msg or str(exc)).strip())
        raise MalformedXMLError(f"malformed XML: {reason}", source=source, line=at) from None
    except (ValueError, LookupError) as exc:  # e.g. unknown encodings
        raise MalformedXMLError(f"malformed XML: {exc}", source=source) from None
    if root is None:
        raise MalformedXMLError("document has no root element", source=source)
    docinfo = root.getroottree().docinfo
    if docinfo.internalDTD is not None or docinfo.externalDTD is not None or docinfo.doctype:
        raise UnsafeXMLError("DOCTYPE and ENTITY declarations are not allowed", source=source, line=1)
    for node in root.iter():
        if isinstance(node, etree._Entity):
            raise UnsafeXMLError("entity references are not allowed", source=source, line=source_line(node))
    return root
