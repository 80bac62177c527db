"""Request body parsers of the native API: JSON, forms and multipart, refusing text no database stores.

PostgreSQL refuses NUL characters in text and JSON, a lone UTF-16 surrogate cannot be encoded
to UTF-8, and Python's json module raises RecursionError (not ValueError) on deep nesting:
each would otherwise reach the database driver or escape DRF's error handling as a 500. These
parsers answer 400 (`{"detail": "JSON parse error - ..."}`) naming the problem and where.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import IO, Any
from urllib.parse import unquote_to_bytes

from django.conf import settings
from django.http import QueryDict
from django.utils.datastructures import MultiValueDict
from rest_framework import parsers
from rest_framework.exceptions import ParseError

MAX_JSON_DEPTH = 64  # nested arrays/objects; real bodies need a handful, json itself breaks near 1000
MAX_SHOWN = 120  # characters of a path or name quoted in a message

_SURROGATE = re.compile("[\ud800-\udfff]")
_UTF8_SURROGATE = re.compile(rb"\xed[\xa0-\xbf][\x80-\xbf]")  # how a surrogate looks UTF-8-encoded
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def text_problem(text: str) -> str | None:
    """What makes decoded text unstorable (`contains a NUL character` ...), or None when it is fine."""
    if "\x00" in text:
        return "contains a NUL character (U+0000)"
    surrogate = _SURROGATE.search(text)
    if surrogate is not None:
        return f"contains a lone surrogate (U+{ord(surrogate[0]):04X})"
    return None


def bytes_problem(raw: bytes, encoding: str = "utf-8") -> str | None:
    """What makes raw bytes unusable as text in `encoding` (NUL, surrogate, bad bytes), or None."""
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        surrogate = _UTF8_SURROGATE.search(raw) if encoding.replace("-", "").lower() == "utf8" else None
        if surrogate is not None:
            first, second, third = surrogate[0]
            return f"contains a lone surrogate (U+{(first & 0x0F) << 12 | (second & 0x3F) << 6 | third & 0x3F:04X})"
        return f"is not valid {encoding} (byte 0x{raw[exc.start]:02X} at offset {exc.start})"
    return text_problem(text)


def _encoding(parser_context: Mapping[str, Any] | None) -> str:
    """The request's charset; only text encodings (a `bz2_codec` charset would inflate the body)."""
    encoding = str((parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET)
    try:
        "".encode(encoding)
    except (LookupError, UnicodeError):
        raise ParseError(f'Unsupported charset "{encoding}" in request Content-Type header.') from None
    return encoding


def _finite_float(text: str) -> float:
    """A JSON number as a float; 1e999 would become infinity, which no JSON column stores."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def _refuse_constant(name: str) -> None:
    """NaN, Infinity and -Infinity are JavaScript, not JSON (DRF's strict mode refuses them too)."""
    raise ValueError(f"{name} is not a JSON value")


def _path(node: tuple[Any, ...] | None) -> str:
    """`$.kwargs["a b"][3]` from the (parent, key) chain the walk keeps (built only for a message)."""
    parts: list[str] = []
    while node is not None:
        node, key = node
        if isinstance(key, int):
            parts.append(f"[{key}]")
        elif _IDENTIFIER.fullmatch(key):
            parts.append(f".{key}")
        else:
            parts.append(f"[{_quoted(key)}]")
    text = "$" + "".join(reversed(parts))
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "..."


def _quoted(text: str) -> str:
    """A JSON string literal, ASCII only (NUL and surrogates escaped), cut to a readable length."""
    return json.dumps(text[:MAX_SHOWN])


def check_json(value: Any) -> None:
    """ParseError naming the first string or key with NUL or a lone surrogate, or nesting deeper than MAX_JSON_DEPTH.

    Walks with an explicit stack (a recursive walk would itself hit the recursion limit).
    """
    stack: list[tuple[Any, int, tuple[Any, ...] | None]] = [(value, 0, None)]
    while stack:
        item, depth, node = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem is not None:
                raise ParseError(f"JSON parse error - the string at {_path(node)} {problem}")
            continue
        if not isinstance(item, dict | list):
            continue
        if depth >= MAX_JSON_DEPTH:
            raise ParseError(f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels at {_path(node)}")
        if isinstance(item, dict):
            for key, child in item.items():
                problem = text_problem(key)
                if problem is not None:
                    raise ParseError(f"JSON parse error - the property name {_quoted(key)} at {_path(node)} {problem}")
                if isinstance(child, str | dict | list):
                    stack.append((child, depth + 1, (node, key)))
        else:
            stack.extend(
                (child, depth + 1, (node, index)) for index, child in enumerate(item)
                if isinstance(child, str | dict | list)
            )


def parse_json(raw: bytes, encoding: str = "utf-8") -> Any:
    """Parse a JSON body: strict UTF-8 (or the declared charset), finite numbers, bounded nesting, storable text."""
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError:
        raise ParseError(f"JSON parse error - the body {bytes_problem(raw, encoding)}") from None
    if "\x00" in text:  # json would say "invalid control character"; name it
        raise ParseError(f"JSON parse error - the body {text_problem(text)}")
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:  # json's C scanner gives up near sys.getrecursionlimit()
        raise ParseError(f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as exc:
        raise ParseError(f"JSON parse error - {exc}") from None
    check_json(value)
    return value


class StrictJSONParser(parsers.JSONParser):
    """DRF's JSON parser, plus: no NUL or lone surrogates in strings and keys, nesting bounded, no infinities."""

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        """The parsed body; ParseError (400) naming the problem."""
        return parse_json(stream.read(), _encoding(parser_context))


def _check_fields(data: MultiValueDict[str, Any], what: str) -> None:
    """ParseError naming the first field whose name or value has NUL or a lone surrogate."""
    for name, values in data.lists():
        problem = text_problem(name)
        if problem is not None:
            raise ParseError(f"{what} parse error - the field name {_quoted(name)} {problem}")
        for value in values:
            problem = text_problem(value) if isinstance(value, str) else text_problem(str(getattr(value, "name", "")))
            if problem is not None:
                raise ParseError(f"{what} parse error - the field {_quoted(name)} {problem}")


class StrictFormParser(parsers.FormParser):
    """DRF's form parser, refusing fields with NUL, lone surrogates or bytes the charset cannot decode."""

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        """The fields as a QueryDict; ParseError (400) naming the first bad field."""
        encoding = _encoding(parser_context)
        raw: bytes = stream.read()
        # QueryDict decodes with errors="replace": check the percent-decoded bytes before it hides them.
        for pair in raw.split(b"&"):
            name, _, value = pair.partition(b"=")
            for part in (name, value):
                problem = bytes_problem(unquote_to_bytes(part.replace(b"+", b" ")), encoding)
                if problem is not None:
                    shown = unquote_to_bytes(name.replace(b"+", b" ")).decode(encoding, "backslashreplace")
                    raise ParseError(f"Form parse error - the field {_quoted(shown)} {problem}")
        return QueryDict(raw, encoding=encoding)


class StrictMultiPartParser(parsers.MultiPartParser):
    """DRF's multipart parser, refusing field names, values and file names with NUL or lone surrogates."""

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        """The fields and files; ParseError (400) naming the first bad field."""
        result = super().parse(stream, media_type, parser_context)
        _check_fields(result.data, "Multipart form")
        _check_fields(result.files, "Multipart form")
        return result
