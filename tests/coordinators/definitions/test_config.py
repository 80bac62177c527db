"""Job configuration files: Java .properties edge cases, Hadoop XML, load_config, round trips."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oozie.definitions import (
    ConfigurationError,
    DefinitionError,
    UnsafeXMLError,
    load_config,
    parse_hadoop_configuration,
    parse_properties,
    serialize_hadoop_configuration,
)

FIXTURES = Path(__file__).parent / "fixtures"


def test_properties_fixture() -> None:
    """The fixture exercises every separator, comments, a continuation and unicode escapes."""
    assert load_config(FIXTURES / "job.properties") == {
        "user.name": "joe",
        "oozie.coord.application.path": "hdfs://foo:8020/user/joe/myapps/hello-coord.xml",
        "jobStart": "2009-01-02T08:00Z",
        "market": "US",
        "languages": "en,fr,de",
        "greeting": "café ☃",
        "indented.key": "value with trailing space ",
        "empty": "",
    }


def test_hadoop_xml_fixture_matches() -> None:
    """The seed section 11 Hadoop configuration loads by extension."""
    assert load_config(FIXTURES / "job-config.xml") == {
        "user.name": "joe",
        "oozie.coord.application.path": "hdfs://foo:8020/user/joe/myapps/hello-coord.xml",
        "jobStart": "2009-01-02T08:00Z",
    }


def test_load_config_sniffs_content_and_reports_unreadable_files(tmp_path: Path) -> None:
    """Unknown extensions are sniffed; a missing file is a ConfigurationError."""
    (tmp_path / "job.conf").write_text("<configuration><property><name>a</name><value>1</value></property></configuration>")
    assert load_config(tmp_path / "job.conf") == {"a": "1"}
    (tmp_path / "latin1.properties").write_bytes("a=caf\xe9\n".encode("latin-1"))
    assert load_config(tmp_path / "latin1.properties") == {"a": "café"}
    with pytest.raises(ConfigurationError, match="cannot read"):
        load_config(tmp_path / "nope.properties")
    assert load_config("x.properties", loader=lambda url: b"k=v") == {"k": "v"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("a\r\nb=2\rc=3", {"a": "", "b": "2", "c": "3"}, id="cr-lf-and-bare-cr"),
        pytest.param("a=1\\\r\n  2", {"a": "12"}, id="continuation-over-crlf"),
        pytest.param("a=x\\\n\nb=y", {"a": "x", "b": "y"}, id="continuation-into-blank-line"),
        pytest.param("a=x\\\n# not a comment", {"a": "x# not a comment"}, id="continued-hash-is-data"),
        pytest.param("a=x\\", {"a": "x"}, id="backslash-at-eof"),
        pytest.param("a=x\\\\\\\ny", {"a": "x\\y"}, id="three-backslashes"),
        pytest.param("\f\t key\t:\t value", {"key": "value"}, id="form-feed-and-tabs"),
        pytest.param("key  value  with spaces", {"key": "value  with spaces"}, id="space-separator"),
        pytest.param("a:=b", {"a": "=b"}, id="only-one-separator"),
        pytest.param("a\\ b=c", {"a b": "c"}, id="escaped-space-in-key"),
        pytest.param("a\\:b:c", {"a:b": "c"}, id="escaped-colon-in-key"),
        pytest.param("a=\\t\\n\\r\\f\\q", {"a": "\t\n\r\fq"}, id="escapes"),
        pytest.param("a=\\uD83D\\uDE00", {"a": "😀"}, id="surrogate-pair"),
        pytest.param("a=\\u0041\\u00e9", {"a": "Aé"}, id="unicode"),
        pytest.param("#a=1\n   !b=2\n\n   \n", {}, id="only-comments"),
        pytest.param("a=1 # not a comment", {"a": "1 # not a comment"}, id="inline-hash"),
        pytest.param("a\u2028b=c", {"a\u2028b": "c"}, id="unicode-line-separator-is-not-a-newline"),
        pytest.param("a=1\na=2", {"a": "2"}, id="last-wins"),
    ],
)
def test_java_properties_edge_cases(text: str, expected: dict[str, str]) -> None:
    """Java's Properties.load rules."""
    assert parse_properties(text) == expected


@pytest.mark.parametrize(
    ("text", "line"),
    [("ok=1\nbad=\\u12", 2), ("a=1\nb=2\nc=\\uZZZZ", 3), ("a=\\uD83D", 1), ("=value", 1)],
)
def test_bad_properties_name_the_line(text: str, line: int) -> None:
    """Malformed escapes and nameless lines are ConfigurationErrors with the line."""
    with pytest.raises(ConfigurationError) as caught:
        parse_properties(text, "job.properties")
    assert caught.value.line == line and str(caught.value).startswith(f"job.properties:{line}:")


def test_hadoop_configuration_semantics() -> None:
    """Names trimmed, values verbatim, `<value>`-less properties ignored, final properties kept."""
    xml = """<configuration>
      <property><name> a </name><value>  spaced  </value></property>
      <property><name>no-value</name></property>
      <property><name>f</name><value>first</value><final>true</final></property>
      <property><name>f</name><value>second</value></property>
      <property><name>g</name><value>1</value></property>
      <property><name>g</name><value>2</value></property>
    </configuration>"""
    assert parse_hadoop_configuration(xml) == {"a": "  spaced  ", "f": "first", "g": "2"}


@pytest.mark.parametrize(
    ("xml", "error", "line"),
    [
        ("<configuration>\n<property><value>x</value></property></configuration>", ConfigurationError, 2),
        ("<configuration>\n\n<other/></configuration>", ConfigurationError, 3),
        ("<props/>", ConfigurationError, 1),
        ('<configuration xmlns="urn:x"/>', ConfigurationError, 1),
        ("<configuration>\n<property>", DefinitionError, 2),
        ('<!DOCTYPE c [<!ENTITY x SYSTEM "file:///etc/passwd">]><configuration/>', UnsafeXMLError, 1),
    ],
)
def test_bad_hadoop_configurations(xml: str, error: type[DefinitionError], line: int) -> None:
    """Malformed or hostile Hadoop configurations are refused with the line."""
    with pytest.raises(error) as caught:
        parse_hadoop_configuration(xml, "job.xml")
    assert caught.value.line == line


def test_serialize_refuses_what_xml_cannot_hold() -> None:
    """Control characters cannot be written as XML 1.0."""
    with pytest.raises(DefinitionError):
        serialize_hadoop_configuration({"a": "\x00"})


XML_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00\ufffe\uffff"), max_size=30).filter(
    lambda s: all(c in "\t\n\r" or c >= " " for c in s)
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(XML_TEXT.map(str.strip).filter(bool), XML_TEXT, max_size=8))
def test_hadoop_xml_round_trip(values: dict[str, str]) -> None:
    """serialize_hadoop_configuration then parse gives back the mapping."""
    assert parse_hadoop_configuration(serialize_hadoop_configuration(values)) == values


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab=: \t\f\\\n\r#!uU0123456789DdEe")) | st.characters(), max_size=120))
def test_random_properties_text_gives_a_result_or_a_definition_error(text: str) -> None:
    """Whatever the text, the .properties parser answers with a mapping or a DefinitionError."""
    try:
        result = parse_properties(text)
    except DefinitionError:
        return
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in result.items())
