"""Job configuration in the two formats Oozie users have: Java .properties and Hadoop XML."""

from __future__ import annotations

from collections.abc import Mapping

from lxml import etree

from coordinators.definitions.errors import DefinitionError
from coordinators.definitions.xmlsafe import local_name, parse_xml, source_line

MAX_CONFIG_BYTES = 1_048_576
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Java's logical lines: comments dropped, backslash continuations joined (with their line numbers)."""
    lines: list[tuple[int, str]] = []
    pending: str | None = None
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.lstrip(" \t\f") if pending is not None else raw.lstrip(" \t\f")
        if pending is None:
            if not line or line[0] in "#!":
                continue
            start = number
        trailing = len(line) - len(line.rstrip("\\"))
        continued = trailing % 2 == 1
        body = line[:-1] if continued else line
        pending = body if pending is None else pending + body
        if not continued:
            lines.append((start, pending))
            pending = None
    if pending is not None:
        lines.append((start, pending))
    return lines


def _unescape(text: str, source: str, line: int) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2:i + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise DefinitionError(f"malformed \\u escape {text[i:i + 6]!r}", source=source, line=line)
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def parse_properties(text: str, source: str = "job.properties") -> dict[str, str]:
    """Parse Java .properties text: `=`, `:` or whitespace separators, #/! comments, continuations, \\uXXXX."""
    if len(text) > MAX_CONFIG_BYTES:
        raise DefinitionError(f"configuration is larger than {MAX_CONFIG_BYTES} bytes", source=source)
    result: dict[str, str] = {}
    for number, line in _logical_lines(text):
        i, n = 0, len(line)
        key_chars: list[str] = []
        while i < n:
            ch = line[i]
            if ch == "\\" and i + 1 < n:
                key_chars.append(line[i:i + 2])
                i += 2
                continue
            if ch in "=: \t\f":
                break
            key_chars.append(ch)
            i += 1
        while i < n and line[i] in " \t\f":
            i += 1
        if i < n and line[i] in "=:":
            i += 1
            while i < n and line[i] in " \t\f":
                i += 1
        key = _unescape("".join(key_chars), source, number)
        if not key:
            raise DefinitionError("a property line has no name", source=source, line=number)
        result[key] = _unescape(line[i:], source, number)
    return result


def parse_hadoop_configuration(data: bytes | str, source: str = "config.xml") -> dict[str, str]:
    """Parse `<configuration><property><name/><value/></property>...</configuration>` (hardened)."""
    root = parse_xml(data, source, MAX_CONFIG_BYTES)
    if local_name(root) != "configuration":
        raise DefinitionError("the root element must be <configuration>", source=source, line=source_line(root), element=local_name(root))
    result: dict[str, str] = {}
    for prop in root:
        if not isinstance(prop.tag, str):
            continue
        if local_name(prop) != "property":
            raise DefinitionError("only <property> elements may appear in <configuration>", source=source, line=source_line(prop), element=local_name(prop))
        fields = {local_name(child): (child.text or "") for child in prop if isinstance(child.tag, str)}
        name = fields.get("name", "").strip()
        if not name:
            raise DefinitionError("a <property> has no <name>", source=source, line=source_line(prop), element="property")
        result[name] = fields.get("value", "")
    return result


def load_configuration(data: bytes | str, source: str) -> dict[str, str]:
    """A configuration file in either format: XML if it starts with `<`, .properties otherwise."""
    text = data.decode("utf-8", errors="strict") if isinstance(data, bytes) else data
    if text.lstrip().startswith("<"):
        return parse_hadoop_configuration(text, source)
    return parse_properties(text, source)


def serialize_hadoop_configuration(values: Mapping[str, str]) -> bytes:
    """A Hadoop XML configuration document holding these properties."""
    root = etree.Element("configuration")
    for name, value in values.items():
        prop = etree.SubElement(root, "property")
        etree.SubElement(prop, "name").text = name
        etree.SubElement(prop, "value").text = value
    return bytes(etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True))
