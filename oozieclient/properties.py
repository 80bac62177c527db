"""Job configurations as the Oozie client reads and sends them: `.properties`, Hadoop XML, `${name}` references.

`parse_java_properties` follows java.util.Properties.load (comments `#`/`!`, `=`, `:` or
white space between key and value, continuation lines ending in an odd number of `\\`, the
escapes `\\t \\n \\r \\f \\uXXXX`, any other `\\x` is `x`). `parse_hadoop_xml` reads a Hadoop
`<configuration>` as OozieCLI.parseDocument does (a DOCTYPE refused, as Oozie refuses it);
`configuration_xml` writes the body `POST /jobs` sends. `expand` resolves `${name}` the way
Hadoop's Configuration does, only to name a local application in a hint: the server does the
real expansion.
"""

from __future__ import annotations

import re
import xml.parsers.expat
from collections.abc import Mapping
from xml.sax.saxutils import escape

_WHITE = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_REFERENCE = re.compile(r"\$\{([^}$\s]+)\}")
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
MAX_EXPANSION_DEPTH = 20  # Hadoop's Configuration.MAX_SUBST


class ConfigurationError(ValueError):
    """A job configuration the client cannot read or send; the message names the file and the problem."""


def _logical_lines(text: str) -> list[str]:
    """Natural lines joined where one ends in an odd number of backslashes; comments and blank lines dropped."""
    lines: list[str] = []
    natural = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    current: str | None = None
    for raw in natural:
        line = raw.lstrip(_WHITE)
        if current is None:
            if not line or line[0] in "#!":
                continue
            current = ""
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            current += line[:-1]
            continue
        lines.append(current + line)
        current = None
    if current is not None:  # the file ended after a continuation backslash
        lines.append(current)
    return lines


def _unescape(text: str, where: str) -> str:
    """java.util.Properties.loadConvert: `\\uXXXX`, `\\t \\n \\r \\f`, and `\\x` is `x`."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        i += 1
        if char != "\\" or i >= len(text):
            out.append(char)
            continue
        char = text[i]
        i += 1
        if char == "u":
            digits = text[i:i + 4]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigurationError(f"{where}: malformed \\uxxxx encoding")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(char, char))
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    """Key and raw value of a logical line: the key ends at an unescaped `=`, `:` or white space."""
    escaped = False
    end = len(line)
    separator = False
    for index, char in enumerate(line):
        if escaped:
            escaped = False
            continue
        if char == "\\":
            escaped = True
            continue
        if char in "=:":
            end, separator = index, True
            break
        if char in _WHITE:
            end = index
            break
    rest = line[end + 1 if separator else end:].lstrip(_WHITE)
    if not separator and rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_WHITE)
    return line[:end], rest


def parse_java_properties(text: str, source: str = "job.properties") -> dict[str, str]:
    """The properties of a `.properties` text, in file order (a repeated key keeps its last value)."""
    result: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split(line)
        result[_unescape(key, source)] = _unescape(value, source)
    return result


def parse_hadoop_xml(data: bytes, source: str = "job.xml") -> dict[str, str]:
    """The `<property>` name/value pairs of a Hadoop `<configuration>`; a DOCTYPE or another root is refused."""
    result: dict[str, str] = {}
    stack: list[str] = []
    field: dict[str, str] = {}
    text: list[str] = []

    def start(name: str, attributes: dict[str, str]) -> None:
        local = name.rsplit(" ", 1)[-1]
        if not stack and local != "configuration":
            raise ConfigurationError(f"{source}: bad conf file: top-level element not <configuration>")
        if len(stack) == 1 and local != "property":
            raise ConfigurationError(f"{source}: bad conf file: element not <property>")
        if len(stack) == 1:
            field.clear()
        stack.append(local)
        text.clear()

    def end(name: str) -> None:
        local = stack.pop()
        if len(stack) == 2 and local in ("name", "value"):
            field[local] = "".join(text)
        elif len(stack) == 1 and "name" in field and "value" in field:
            result[field["name"]] = field["value"]

    def doctype(*_: object) -> None:
        raise ConfigurationError(f"{source}: a DOCTYPE is not allowed in a configuration")

    parser = xml.parsers.expat.ParserCreate(namespace_separator=" ")
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = text.append
    parser.StartDoctypeDeclHandler = doctype
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as exc:
        raise ConfigurationError(f"{source}: not well-formed XML: {exc}") from None
    return result


def check_well_formed(data: bytes, source: str) -> str:
    """The root element's name of a well-formed XML document (no DOCTYPE); ConfigurationError otherwise."""
    roots: list[str] = []

    def start(name: str, attributes: dict[str, str]) -> None:
        if not roots:
            roots.append(name.rsplit(" ", 1)[-1])

    def doctype(*_: object) -> None:
        raise ConfigurationError(f"{source}: a DOCTYPE is not allowed (Oozie refuses them)")

    parser = xml.parsers.expat.ParserCreate(namespace_separator=" ")
    parser.StartElementHandler = start
    parser.StartDoctypeDeclHandler = doctype
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as exc:
        raise ConfigurationError(f"{source}: {exc}") from None
    return roots[0]


def configuration_xml(properties: Mapping[str, str]) -> bytes:
    """The Hadoop XML configuration `POST /jobs` takes; a character XML 1.0 cannot carry is refused by name."""
    parts = ['<?xml version="1.0" encoding="UTF-8"?>\n<configuration>\n']
    for name, value in properties.items():
        for text in (name, value):
            if _XML_ILLEGAL.search(text):
                raise ConfigurationError(f"property {name!r}: a control character XML cannot carry")
        parts.append(f"  <property>\n    <name>{escape(name)}</name>\n    <value>{escape(value)}</value>\n  </property>\n")
    parts.append("</configuration>\n")
    return "".join(parts).encode("utf-8")


def expand(value: str, properties: Mapping[str, str]) -> str:
    """`${name}` references to other properties replaced (recursively, at most MAX_EXPANSION_DEPTH rounds); unknown ones kept."""
    for _ in range(MAX_EXPANSION_DEPTH):
        replaced = _REFERENCE.sub(lambda m: properties.get(m.group(1), m.group(0)), value)
        if replaced == value:
            break
        value = replaced
    return value
