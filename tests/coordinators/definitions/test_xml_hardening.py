"""Coordinator XML is parsed without DTDs, entities or network, within a size limit, against the XSDs."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oozie.definitions import DefinitionError, UnsupportedNamespaceError, parse_xml, validate


def app(version: str, body: str = "", extra_ns: str = "") -> str:
    return (
        f'<coordinator-app name="c" frequency="60" start="2009-01-01T00:00Z" end="2009-01-02T00:00Z" '
        f'timezone="UTC" xmlns="uri:oozie:coordinator:{version}"{extra_ns}>\n'
        f"{body}<action><workflow><app-path>task:examples.noop</app-path></workflow></action>\n"
        "</coordinator-app>"
    )


@pytest.mark.parametrize("version", ["0.1", "0.2", "0.3", "0.4", "0.5"])
def test_every_schema_version_validates(version: str) -> None:
    """A minimal application of each schema version is accepted against its own XSD."""
    assert validate(parse_xml(app(version), "c.xml"), "c.xml") == f"uri:oozie:coordinator:{version}"


@pytest.mark.parametrize(("version", "sla"), [("0.2", "0.1"), ("0.4", "0.2"), ("0.5", "0.2")])
def test_sla_blocks_validate(version: str, sla: str) -> None:
    """Actions may carry an sla:info block of the SLA schema (0.1 or 0.2)."""
    fields = (
        "<sla:app-name>c</sla:app-name><sla:nominal-time>${coord:nominalTime()}</sla:nominal-time>"
        "<sla:should-start>${5 * MINUTES}</sla:should-start><sla:should-end>${10 * MINUTES}</sla:should-end>"
        "<sla:alert-contact>ops@example.com</sla:alert-contact><sla:dev-contact>dev@example.com</sla:dev-contact>"
        "<sla:qa-contact>qa@example.com</sla:qa-contact><sla:se-contact>se@example.com</sla:se-contact>"
        if sla == "0.1"
        else "<sla:nominal-time>${coord:nominalTime()}</sla:nominal-time><sla:should-end>${10 * MINUTES}</sla:should-end>"
    )
    text = app(version, extra_ns=f' xmlns:sla="uri:oozie:sla:{sla}"').replace(
        "</workflow></action>", f"</workflow><sla:info>{fields}</sla:info></action>"
    )
    assert validate(parse_xml(text, "c.xml"), "c.xml") == f"uri:oozie:coordinator:{version}"


HOSTILE = {
    "xxe-file": '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>',
    "xxe-network": '<!DOCTYPE r [<!ENTITY x SYSTEM "http://127.0.0.1:1/x">]><r>&x;</r>',
    "external-dtd": '<!DOCTYPE r SYSTEM "http://127.0.0.1:1/evil.dtd"><r/>',
    "billion-laughs": (
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
        + "".join(f'<!ENTITY lol{i} "{"&lol" + (str(i - 1) if i > 1 else "") + ";" * 1}' * 10 + '">' for i in range(1, 9))
        + "]><lolz>&lol8;</lolz>"
    ),
    "parameter-entity": '<!DOCTYPE r [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]><r/>',
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_documents_are_refused(name: str) -> None:
    """DOCTYPE and ENTITY declarations are refused outright: no expansion, no file or network access."""
    with pytest.raises(DefinitionError, match="DOCTYPE and ENTITY"):
        parse_xml(HOSTILE[name], "evil.xml")


def test_a_20_mb_document_is_refused_fast() -> None:
    """Size is checked before parsing."""
    huge = app("0.4", body="<!-- " + "x" * (20 * 1024 * 1024) + " -->")
    started = time.perf_counter()
    with pytest.raises(DefinitionError, match="at most 1048576 bytes"):
        parse_xml(huge, "huge.xml")
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        pytest.param("<a>\n<b>\n</a>", 3, "malformed XML", id="mismatched-tag"),
        pytest.param("", None, "empty", id="empty"),
        pytest.param("<a>&unknown;</a>", 1, "malformed XML", id="undeclared-entity"),
    ],
)
def test_malformed_xml_names_the_line(text: str, line: int | None, fragment: str) -> None:
    """Syntax errors name the file and line."""
    with pytest.raises(DefinitionError, match=fragment) as caught:
        parse_xml(text, "bad.xml")
    assert caught.value.line == line
    assert str(caught.value).startswith("bad.xml")


def test_schema_violations_name_line_and_element() -> None:
    """An unexpected element is refused with its line and name."""
    text = app("0.4", body="<controls>\n<timeout>10</timeout>\n</controls>\n<bogus/>\n")
    with pytest.raises(DefinitionError) as caught:
        validate(parse_xml(text, "c.xml"), "c.xml")
    assert caught.value.element == "bogus"
    assert caught.value.line == 5
    assert "c.xml:5: <bogus>" in str(caught.value)


def test_unknown_namespace_lists_the_supported_ones() -> None:
    """A document in another namespace is refused, naming what is supported."""
    with pytest.raises(UnsupportedNamespaceError, match="supported: .*uri:oozie:coordinator:0.5"):
        validate(parse_xml('<workflow-app xmlns="uri:oozie:workflow:0.5"/>', "wf.xml"), "wf.xml")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_are_a_result_or_a_definition_error(data: bytes) -> None:
    """Whatever arrives, the parser answers with a tree or a DefinitionError."""
    try:
        validate(parse_xml(data, "random.xml"), "random.xml")
    except DefinitionError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 400), st.sampled_from(["<", ">", "&", '"', "/", "x", "\n", "]]>", "<!--"]))
def test_mutated_valid_documents_are_a_result_or_a_definition_error(position: int, insert: str) -> None:
    """A valid document with a character inserted anywhere parses or fails with a DefinitionError."""
    text = app("0.4")
    mutated = text[:position] + insert + text[position:]
    try:
        validate(parse_xml(mutated, "m.xml"), "m.xml")
    except DefinitionError:
        pass
