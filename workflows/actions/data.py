"""Action data (what `wf:actionData` returns): Java properties text, and Oozie's size limit on it."""

from __future__ import annotations

from collections.abc import Mapping


def _utf16_escape(ch: str) -> str:
    data = ch.encode("utf-16-be")
    return "".join(f"\\u{int.from_bytes(data[i:i + 2], 'big'):04X}" for i in range(0, len(data), 2))


def _escape(text: str, key: bool) -> str:
    out: list[str] = []
    for i, ch in enumerate(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[ch])
        elif ch in "=:#!" or (ch == " " and (key or i == 0)):
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) > 0x7E:
            out.append(_utf16_escape(ch))
        else:
            out.append(ch)
    return "".join(out)


def properties_text(values: Mapping[str, str]) -> str:
    """Java .properties text of a map, as Properties.store writes it (without its date comment)."""
    return "".join(f"{_escape(key, True)}={_escape(value, False)}\n" for key, value in values.items())


def over_limit(size: int, limit: int) -> str:
    """Oozie's message for action data over oozie.action.max.output.data, naming our setting; '' within it."""
    if size <= limit:
        return ""
    return f"Output data exceeds its limit [{limit}] ({size} bytes; WORKFLOW_MAX_OUTPUT_DATA)"
