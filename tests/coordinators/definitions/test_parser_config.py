"""Coordinator definitions: configuration formats, includes and name collisions, parameters, SLA."""

from __future__ import annotations

from pathlib import Path

import fsspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oozie.definitions import (
    DefinitionError,
    load_configuration,
    merge_parameters,
    parse_coordinator,
    parse_properties,
    serialize_hadoop_configuration,
)

NS = "uri:oozie:coordinator:0.4"

DATASETS_XML = f"""<datasets xmlns="{NS}">
  <dataset name="logs" frequency="${{coord:hours(1)}}" initial-instance="2009-01-01T01:00Z" timezone="UTC">
    <uri-template>hdfs://bar:8020/app/logs/${{YEAR}}/${{MONTH}}/${{DAY}}/${{HOUR}}</uri-template>
  </dataset>
  <dataset name="shared" frequency="${{coord:days(1)}}" initial-instance="2009-01-01T00:00Z" timezone="UTC">
    <uri-template>hdfs://bar:8020/app/shared/${{YEAR}}/${{MONTH}}/${{DAY}}</uri-template>
    <done-flag></done-flag>
  </dataset>
</datasets>"""


def coordinator(include: str = "datasets.xml", embedded: str = "", params: str = "") -> str:
    return f"""<coordinator-app name="hello-coord" frequency="${{coord:days(1)}}"
        start="${{start}}" end="2009-01-04T08:00Z" timezone="America/Los_Angeles" xmlns="{NS}"
        xmlns:sla="uri:oozie:sla:0.2">
  {params}
  <controls><timeout>10</timeout><concurrency>${{concurrency_level}}</concurrency><execution>LIFO</execution></controls>
  <datasets>
    <include>{include}</include>
    {embedded}
  </datasets>
  <input-events>
    <data-in name="input" dataset="logs">
      <start-instance>${{coord:current(-23)}}</start-instance>
      <end-instance>${{coord:current(0)}}</end-instance>
    </data-in>
  </input-events>
  <output-events>
    <data-out name="output" dataset="shared" nocleanup="true"><instance>${{coord:current(0)}}</instance></data-out>
  </output-events>
  <action>
    <workflow>
      <app-path>task:examples.pipeline.produce</app-path>
      <configuration>
        <property><name>wfInput</name><value>${{coord:dataIn('input')}}</value></property>
        <property><name>empty</name><value></value></property>
      </configuration>
    </workflow>
    <sla:info><sla:nominal-time>${{coord:nominalTime()}}</sla:nominal-time><sla:should-end>${{10 * MINUTES}}</sla:should-end></sla:info>
  </action>
</coordinator-app>"""


def test_a_full_application_with_a_relative_include(tmp_path: Path) -> None:
    """Everything in the XML lands in the definition; relative includes resolve against the app directory."""
    (tmp_path / "datasets.xml").write_text(DATASETS_XML)
    app = parse_coordinator(coordinator(), str(tmp_path / "coordinator.xml"), app_dir=str(tmp_path))
    assert (app.schema_version, app.name, app.frequency, app.start, app.timezone) == (
        "0.4", "hello-coord", "${coord:days(1)}", "${start}", "America/Los_Angeles",
    )
    assert (app.controls.timeout, app.controls.concurrency, app.controls.execution, app.controls.throttle) == (
        "10", "${concurrency_level}", "LIFO", None,
    )
    logs, shared = app.dataset("logs"), app.dataset("shared")
    assert logs is not None and shared is not None
    assert logs.done_flag == "_SUCCESS"  # absent: the default
    assert shared.done_flag == ""  # empty: the directory itself
    assert app.input_events[0].start_instance == "${coord:current(-23)}"
    assert app.output_events[0].nocleanup is True
    assert app.action.app_path == "task:examples.pipeline.produce"
    assert dict(app.action.configuration) == {"wfInput": "${coord:dataIn('input')}", "empty": ""}
    assert app.action.sla is not None and app.action.sla.version == "0.2"
    assert app.action.sla.get("should-end") == "${10 * MINUTES}"


def test_includes_through_fsspec_and_embedded_precedence() -> None:
    """memory:// includes work; an embedded dataset of the same name wins over the included one (10.1.1)."""
    fs = fsspec.filesystem("memory")
    fs.pipe("/defs/datasets.xml", DATASETS_XML.encode())
    embedded = (
        '<dataset name="shared" frequency="60" initial-instance="2009-01-01T00:00Z" timezone="UTC">'
        "<uri-template>file:///local/${YEAR}</uri-template></dataset>"
    )
    app = parse_coordinator(coordinator("memory:///defs/datasets.xml", embedded), "c.xml")
    shared = app.dataset("shared")
    assert shared is not None and shared.uri_template == "file:///local/${YEAR}"


def test_same_name_in_two_included_files_is_refused() -> None:
    """Two included files may not define the same dataset (10.1.1)."""
    fs = fsspec.filesystem("memory")
    fs.pipe("/two/a.xml", DATASETS_XML.encode())
    fs.pipe("/two/b.xml", DATASETS_XML.encode())
    text = coordinator("memory:///two/a.xml").replace(
        "<include>memory:///two/a.xml</include>", "<include>memory:///two/a.xml</include><include>memory:///two/b.xml</include>"
    )
    with pytest.raises(DefinitionError, match="defined in two included files"):
        parse_coordinator(text, "c.xml")


def test_duplicate_embedded_datasets_are_refused(tmp_path: Path) -> None:
    """Embedded definitions cannot share a name."""
    (tmp_path / "datasets.xml").write_text(DATASETS_XML)
    twice = '<dataset name="x" frequency="60" initial-instance="2009-01-01T00:00Z" timezone="UTC"><uri-template>u</uri-template></dataset>' * 2
    with pytest.raises(DefinitionError, match="defined twice"):
        parse_coordinator(coordinator(embedded=twice), "c.xml", app_dir=str(tmp_path))


def test_include_cycles_and_missing_files_are_clear_errors() -> None:
    """A file including itself, or a missing include, is a DefinitionError naming it."""
    fs = fsspec.filesystem("memory")
    fs.pipe("/cycle/d.xml", f'<datasets xmlns="{NS}"><include>memory:///cycle/d.xml</include></datasets>'.encode())
    with pytest.raises(DefinitionError, match="includes itself"):
        parse_coordinator(coordinator("memory:///cycle/d.xml"), "c.xml")
    with pytest.raises(DefinitionError, match="cannot read include"):
        parse_coordinator(coordinator("memory:///nowhere/d.xml"), "c.xml")


def test_undefined_dataset_reference_is_refused(tmp_path: Path) -> None:
    """An event must name a defined dataset."""
    (tmp_path / "datasets.xml").write_text(DATASETS_XML.replace('name="logs"', 'name="other"'))
    with pytest.raises(DefinitionError, match="undefined dataset 'logs'"):
        parse_coordinator(coordinator(), "c.xml", app_dir=str(tmp_path))


def test_parameters_defaults_and_required(tmp_path: Path) -> None:
    """<parameters> fill defaults; required ones missing are all named (schema 0.4)."""
    (tmp_path / "datasets.xml").write_text(DATASETS_XML)
    params = (
        "<parameters><property><name>start</name></property>"
        "<property><name>concurrency_level</name><value>1</value></property>"
        "<property><name>market</name></property></parameters>"
    )
    app = parse_coordinator(coordinator(params=params), "c.xml", app_dir=str(tmp_path))
    assert merge_parameters(app, {"start": "2009-01-02T08:00Z", "market": "us"}) == {
        "start": "2009-01-02T08:00Z", "market": "us", "concurrency_level": "1",
    }
    with pytest.raises(DefinitionError, match="required parameters not given: start, market"):
        merge_parameters(app, {})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("a=1\nb = 2\n", {"a": "1", "b": "2"}, id="equals"),
        pytest.param("a:1\nb 2\n", {"a": "1", "b": "2"}, id="colon-and-space"),
        pytest.param("# c\n! c\n\n  a=1\n", {"a": "1"}, id="comments-and-indent"),
        pytest.param("a=one \\\n    two\n", {"a": "one two"}, id="continuation"),
        pytest.param("a=x\\\\\nb=y\n", {"a": "x\\", "b": "y"}, id="escaped-backslash-no-continuation"),
        pytest.param("a=\\u00e9t\\u00e9\n", {"a": "été"}, id="unicode-escape"),
        pytest.param("k\\=x=v\n", {"k=x": "v"}, id="escaped-separator-in-key"),
        pytest.param("a=\n", {"a": ""}, id="empty-value"),
        pytest.param("a=1\na=2\n", {"a": "2"}, id="last-wins"),
        pytest.param("a=b=c\n", {"a": "b=c"}, id="equals-in-value"),
    ],
)
def test_java_properties(text: str, expected: dict[str, str]) -> None:
    """Java .properties rules as Oozie job.properties use them."""
    assert parse_properties(text) == expected


def test_bad_unicode_escape_names_the_line() -> None:
    """A malformed \\u escape is an error with its line."""
    with pytest.raises(DefinitionError) as caught:
        parse_properties("a=1\nb=\\u12G4\n", "job.properties")
    assert caught.value.line == 2


def test_both_configuration_formats_load_the_same() -> None:
    """Hadoop XML and .properties configurations give the same mapping."""
    values = {"oozie.coord.application.path": "file:///apps/c", "user.name": "ann", "odd": "<&'\">"}
    assert load_configuration(serialize_hadoop_configuration(values), "job.xml") == values
    assert load_configuration("oozie.coord.application.path=file:///apps/c\nuser.name=ann\nodd=<&'\">\n", "job.properties") == values


@pytest.mark.parametrize(
    "text",
    [
        "<configuration><property><value>x</value></property></configuration>",
        "<configuration><other/></configuration>",
        "<props/>",
        '<!DOCTYPE c [<!ENTITY x "y">]><configuration/>',
    ],
)
def test_bad_hadoop_configurations_are_refused(text: str) -> None:
    """Malformed configurations are DefinitionErrors."""
    with pytest.raises(DefinitionError):
        load_configuration(text, "job.xml")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_random_properties_text_is_a_result_or_a_definition_error(text: str) -> None:
    """Whatever the text, the .properties parser answers with a mapping or a DefinitionError."""
    try:
        assert isinstance(parse_properties(text), dict)
    except DefinitionError:
        pass
