"""Job configuration in the two formats Oozie users have: Java .properties and Hadoop XML."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from lxml import etree

from oozie.definitions.errors import ConfigurationError, DefinitionError
from oozie.definitions.xmlsafe import local_name, namespace_of, parse_xml, source_line

MAX_CONFIG_BYTES = 1_048_576
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_WHITESPACE = " \t\f"  # Java's Properties whitespace; only \n and \r end lines
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_XML_CHARS = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_HEX = frozenset("0123456789abcdefABCDEF")


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Java's logical lines: blank and comment lines dropped, backslash continuations joined."""
    lines: list[tuple[int, str]] = []
    pending: str | None = None
    start = 0
    for number, raw in enumerate(_LINE_BREAK.split(text), start=1):
        line = raw.lstrip(_WHITESPACE)
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
    if pending is not None:  # a backslash on the last line: Java drops it
        lines.append((start, pending))
    return lines


def _unescape(text: str, source: str, line: int) -> str:
    """Resolve `\\t \\n \\r \\f \\uXXXX` and `\\x` -> `x`; UTF-16 surrogate pairs are combined."""
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
            if len(digits) != 4 or not set(digits) <= _HEX:
                raise ConfigurationError(f"malformed \\uXXXX escape {text[i:i + 6]!r}", source=source, line=line)
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    joined = "".join(out)
    if any("\ud800" <= c <= "\udfff" for c in joined):
        try:
            joined = joined.encode("utf-16", "surrogatepass").decode("utf-16")
        except UnicodeDecodeError:
            raise ConfigurationError("unpaired UTF-16 surrogate in \\u escapes", source=source, line=line) from None
    return joined


def _split_key(line: str) -> tuple[str, str]:
    """Split a logical line at the first unescaped `=`, `:` or whitespace (Java rules)."""
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=:" or ch in _WHITESPACE:
            break
        i += 1
    key = line[:min(i, n)]
    while i < n and line[i] in _WHITESPACE:
        i += 1
    if i < n and line[i] in "=:":
        i += 1
        while i < n and line[i] in _WHITESPACE:
            i += 1
    return key, line[i:]


def parse_properties(text: str, source: str = "job.properties") -> dict[str, str]:
    """Parse Java .properties text (`=`/`:`/space separators, #/! comments, continuations, \\uXXXX)."""
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigurationError(f"configuration is larger than {MAX_CONFIG_BYTES} bytes", source=source)
    result: dict[str, str] = {}
    for number, line in _logical_lines(text):
        raw_key, raw_value = _split_key(line)
        key = _unescape(raw_key, source, number)
        if not key:
            raise ConfigurationError("a property line has no name", source=source, line=number)
        result[key] = _unescape(raw_value, source, number)
    return result


def _field(prop: etree._Element, name: str) -> etree._Element | None:
    return next((c for c in prop if isinstance(c.tag, str) and local_name(c) == name), None)


def parse_hadoop_configuration(data: bytes | str, source: str = "config.xml") -> dict[str, str]:
    """Parse `<configuration><property><name/><value/></property>...</configuration>` (hardened).

    As in Hadoop: names are trimmed, values kept verbatim, a property without `<value>` is
    ignored, a later duplicate wins unless the earlier one is `<final>true</final>`.
    """
    root = parse_xml(data, source, MAX_CONFIG_BYTES)
    if local_name(root) != "configuration" or namespace_of(root):
        raise ConfigurationError(
            "the root element must be <configuration> (no namespace)", source=source,
            line=source_line(root), element=local_name(root),
        )
    result: dict[str, str] = {}
    final: set[str] = set()
    for prop in root:
        if not isinstance(prop.tag, str):
            continue
        if local_name(prop) != "property" or namespace_of(prop):
            raise ConfigurationError(
                "only <property> elements may appear in <configuration>", source=source,
                line=source_line(prop), element=local_name(prop),
            )
        name_element, value_element = _field(prop, "name"), _field(prop, "value")
        name = (name_element.text or "").strip() if name_element is not None else ""
        if not name:
            raise ConfigurationError("a <property> has no <name>", source=source, line=source_line(prop), element="property")
        if value_element is None or name in final:
            continue
        result[name] = value_element.text or ""
        final_element = _field(prop, "final")
        if final_element is not None and (final_element.text or "").strip().lower() == "true":
            final.add(name)
    return result


def _decode(data: bytes | str) -> str:
    """Text of a configuration: UTF-8, else ISO-8859-1 (Java's Properties.load(InputStream))."""
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("iso-8859-1")


def load_configuration(data: bytes | str, source: str) -> dict[str, str]:
    """A configuration in either format: Hadoop XML if the source ends in .xml or the text starts with `<`."""
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigurationError(f"configuration is larger than {MAX_CONFIG_BYTES} bytes", source=source)
    if source.lower().endswith(".xml"):
        return parse_hadoop_configuration(data, source)
    text = _decode(data)
    if text.lstrip("\ufeff \t\r\n").startswith("<"):
        return parse_hadoop_configuration(data, source)
    return parse_properties(text.removeprefix("\ufeff"), source)


def load_config(path: str | os.PathLike[str], *, loader: Callable[[str], bytes] | None = None) -> dict[str, str]:
    """Read a configuration file (local path, or any URL through loader) and parse it by extension/content."""
    name = os.fspath(path)
    if loader is not None:
        data = loader(name)
    else:
        try:
            with Path(name).open("rb") as handle:
                data = handle.read(MAX_CONFIG_BYTES + 1)
        except OSError as exc:
            raise ConfigurationError(f"cannot read configuration: {exc.strerror or exc}", source=name) from None
    return load_configuration(data, name)


def serialize_hadoop_configuration(values: Mapping[str, str]) -> bytes:
    """A Hadoop XML configuration document holding these properties (parses back to the same mapping)."""
    root = etree.Element("configuration")
    for name, value in values.items():
        bad = _XML_CHARS.search(name) or _XML_CHARS.search(value)
        if bad or name != name.strip() or not name:
            raise DefinitionError(f"property {name!r} cannot be written as Hadoop XML", source="<serialize>")
        prop = etree.SubElement(root, "property")
        etree.SubElement(prop, "name").text = name
        etree.SubElement(prop, "value").text = value
    return bytes(etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True))
