"""Hostile and broken input through parse_coordinator: XXE, billion laughs, DTDs, size, syntax, schema, fuzz."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oozie.definitions import (
    DefinitionError,
    DocumentTooLargeError,
    MalformedXMLError,
    SchemaValidationError,
    UnsafeXMLError,
    UnsupportedNamespaceError,
    parse_coordinator,
)

FIXTURES = Path(__file__).parent / "fixtures"
VALID = (FIXTURES / "app_0.4.xml").read_text()


def no_loader(url: str) -> bytes:
    raise AssertionError(f"nothing may be loaded, asked for {url}")


@pytest.mark.parametrize("name", ["xxe_file.xml", "billion_laughs.xml", "external_dtd.xml"])
def test_hostile_fixtures_are_refused_before_anything_is_expanded(name: str) -> None:
    """DOCTYPE/ENTITY documents are UnsafeXMLErrors, quickly, with the declaration's line."""
    started = time.perf_counter()
    with pytest.raises(UnsafeXMLError) as caught:
        parse_coordinator((FIXTURES / name).read_bytes(), name, loader=no_loader)
    assert time.perf_counter() - started < 0.5
    assert caught.value.line == 2 and str(caught.value).startswith(f"{name}:2:")
    assert "root:" not in str(caught.value)  # /etc/passwd content never appears


def test_a_utf16_doctype_is_refused_too() -> None:
    """The byte scan misses UTF-16; the parsed document's DOCTYPE is still refused, unexpanded."""
    text = (FIXTURES / "xxe_file.xml").read_text().replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>')
    with pytest.raises(UnsafeXMLError):
        parse_coordinator(text.encode("utf-16"), "u16.xml", loader=no_loader)


def test_a_20_mb_document_fails_fast() -> None:
    """The size limit is checked before parsing: < 1 s for 20 MB."""
    huge = VALID.replace("<controls>", "<controls>" + " " * (20 * 1024 * 1024)).encode()
    started = time.perf_counter()
    with pytest.raises(DocumentTooLargeError, match="at most 1048576 bytes"):
        parse_coordinator(huge, "huge.xml")
    assert time.perf_counter() - started < 1.0


def test_malformed_xml_names_file_and_line() -> None:
    """A syntax error is a MalformedXMLError with its line."""
    broken = VALID.replace("</controls>", "</control>")
    with pytest.raises(MalformedXMLError) as caught:
        parse_coordinator(broken, "broken.xml")
    assert caught.value.line == 8 and str(caught.value).startswith("broken.xml:8: malformed XML")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        pytest.param('<workflow-app xmlns="uri:oozie:workflow:0.5" name="w"/>', "namespace 'uri:oozie:workflow:0.5'", id="workflow"),
        pytest.param("<coordinator-app/>", "no namespace", id="none"),
        pytest.param('<coordinator-app xmlns="uri:oozie:coordinator:0.9"/>', "supported: ", id="future-version"),
    ],
)
def test_wrong_namespace_lists_supported_ones(text: str, fragment: str) -> None:
    """Unknown namespaces are refused with the supported list."""
    with pytest.raises(UnsupportedNamespaceError, match=fragment) as caught:
        parse_coordinator(text, "x.xml")
    assert "uri:oozie:coordinator:0.1" in str(caught.value) and "uri:oozie:coordinator:0.5" in str(caught.value)


def test_a_bundle_is_not_a_coordinator() -> None:
    """A valid document of another supported kind is still refused."""
    bundle = '<bundle-app name="b" xmlns="uri:oozie:bundle:0.2"><coordinator name="c"><app-path>x</app-path></coordinator></bundle-app>'
    with pytest.raises(UnsupportedNamespaceError, match="expected <coordinator-app>"):
        parse_coordinator(bundle, "b.xml")


@pytest.mark.parametrize(
    ("old", "new", "line", "element"),
    [
        pytest.param("<controls>", "<controls><bogus/>", 8, "bogus", id="unknown-element"),
        pytest.param('<data-in name="in"', '<data-in name="9in"', 20, "data-in", id="bad-identifier"),
        pytest.param('nocleanup="true"', 'nocleanup="maybe"', 23, "data-out", id="bad-boolean"),
        pytest.param("sla:should-end>", "sla:should-finish>", 36, "should-finish", id="sla-element"),
        pytest.param('name="v04" ', "", 2, "coordinator-app", id="missing-attribute"),  # libxml2: the tag's last line
    ],
)
def test_schema_violations_name_line_and_element(old: str, new: str, line: int, element: str) -> None:
    """XSD errors carry the line and element, and the message says so: `file:line: <element>: ...`."""
    with pytest.raises(SchemaValidationError) as caught:
        parse_coordinator(VALID.replace(old, new), "c.xml")
    assert (caught.value.source, caught.value.line, caught.value.element) == ("c.xml", line, element)
    assert str(caught.value).startswith(f"c.xml:{line}: <{element}>: invalid for uri:oozie:coordinator:0.4")


def test_duplicate_event_names_are_refused() -> None:
    """Input and output events share one name space."""
    text = VALID.replace('<data-out name="out"', '<data-out name="in"')
    with pytest.raises(DefinitionError, match="'in' is used twice"):
        parse_coordinator(text, "c.xml")


def _outcome(data: bytes | str) -> None:
    try:
        parse_coordinator(data, "fuzz.xml", app_dir="memory:///fuzz")
    except DefinitionError:
        pass


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_random_bytes_give_a_result_or_a_definition_error(data: bytes) -> None:
    """Arbitrary bytes never raise anything but DefinitionError."""
    _outcome(data)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.integers(0, len(VALID)),
            st.integers(0, 8),
            st.sampled_from(["<", ">", "&", '"', "'", "/", "=", "x", "\n", "]]>", "<!--", "&#0;", "\x00", "é", "<include>../x</include>", "${"]),
        ),
        min_size=1, max_size=4,
    )
)
def test_mutated_valid_xml_gives_a_result_or_a_definition_error(edits: list[tuple[int, int, str]]) -> None:
    """A valid application with random cuts and insertions never raises anything but DefinitionError."""
    text = VALID
    for position, cut, insert in edits:
        text = text[:position] + insert + text[position + cut:]
    _outcome(text)
    _outcome(text.encode("utf-8", errors="surrogatepass"))
