"""job.properties as java.util.Properties reads them, Hadoop XML configurations, and the dates Oozie's CLI prints.

No server, no database: the client's pure parts.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from oozieclient import render
from oozieclient.configuration import (
    job_configuration,
    local_application_hint,
    properties_and_headers,
)
from oozieclient.properties import (
    ConfigurationError,
    configuration_xml,
    expand,
    parse_hadoop_xml,
    parse_java_properties,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("a=1\nb = 2\nc:3\nd 4\n", {"a": "1", "b": "2", "c": "3", "d": "4"}, id="separators"),
        pytest.param("# comment\n! also\n\n   \nx=1", {"x": "1"}, id="comments-and-blank-lines"),
        pytest.param("path=/a/b\\\n    /c\\\n\t/d\n", {"path": "/a/b/c/d"}, id="continuation-strips-leading-space"),
        pytest.param("even=ends\\\\\nnext=2", {"even": "ends\\", "next": "2"}, id="even-backslashes-do-not-continue"),
        pytest.param("k=tab\\there\\nnew\\u00e9\\q", {"k": "tab\there\nnewéq"}, id="escapes"),
        pytest.param("key\\ with\\ spaces=v", {"key with spaces": "v"}, id="escaped-space-in-key"),
        pytest.param("a\\=b=c", {"a=b": "c"}, id="escaped-separator-in-key"),
        pytest.param("x=  spaced value  ", {"x": "spaced value  "}, id="leading-space-of-value-dropped"),
        pytest.param("x=1\nx=2", {"x": "2"}, id="last-one-wins"),
        pytest.param("empty=\nflag", {"empty": "", "flag": ""}, id="empty-values"),
        pytest.param("url=hdfs://nn:8020/user/${user.name}", {"url": "hdfs://nn:8020/user/${user.name}"}, id="refs-kept"),
        pytest.param("# c \\\nx=1", {"x": "1"}, id="comment-ending-in-backslash-does-not-continue"),
        pytest.param("a=1\r\nb=2\rc=3", {"a": "1", "b": "2", "c": "3"}, id="crlf-and-cr"),
    ],
)
def test_java_properties(text: str, expected: dict[str, str]) -> None:
    """Each rule of java.util.Properties.load, as Oozie's CLI reads job.properties."""
    assert parse_java_properties(text) == expected


def test_a_malformed_unicode_escape_is_refused_by_file() -> None:
    """`\\u12` is not four hex digits: refused, naming the file."""
    with pytest.raises(ConfigurationError, match=r"job.properties: malformed \\uxxxx"):
        parse_java_properties("x=\\u12zz", "job.properties")


def test_hadoop_xml_round_trip() -> None:
    """What configuration_xml writes, parse_hadoop_xml reads back; markup in values survives."""
    values = {"user.name": "ann", "weird": "<a & 'b'>", "oozie.wf.application.path": "file:///x"}
    assert parse_hadoop_xml(configuration_xml(values)) == values


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(b"<conf/>", "top-level element not <configuration>", id="wrong-root"),
        pytest.param(b"<configuration><x/></configuration>", "element not <property>", id="wrong-child"),
        pytest.param(b'<!DOCTYPE c [<!ENTITY e "x">]><configuration/>', "DOCTYPE", id="doctype"),
        pytest.param(b"<configuration>", "not well-formed", id="unclosed"),
    ],
)
def test_bad_xml_configurations_are_refused(data: bytes, message: str) -> None:
    """A Hadoop XML configuration Oozie would refuse is refused, saying why."""
    with pytest.raises(ConfigurationError, match=message):
        parse_hadoop_xml(data, "job.xml")


def test_control_characters_cannot_be_sent() -> None:
    """XML 1.0 cannot carry them: refused by property name before anything is sent."""
    with pytest.raises(ConfigurationError, match="'bad'"):
        configuration_xml({"bad": "a\x01b"})


def test_expand_follows_references_and_keeps_unknown_ones() -> None:
    """`${nameNode}/user/${user.name}/${examplesRoot}` resolved recursively; `${wf:id()}`-like text kept."""
    props = {"nameNode": "file:///srv", "root": "${nameNode}/user", "user.name": "ann"}
    assert expand("${root}/${user.name}/${unknown}", props) == "file:///srv/user/ann/${unknown}"
    assert expand("${a}", {"a": "${a}"}) == "${a}"  # a cycle stops


def _options(**values: object) -> argparse.Namespace:
    defaults: dict[str, object] = {"config": None, "defines": [], "username": None}
    return argparse.Namespace(**{**defaults, **values})


def test_configuration_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """user.name is the login name, the file overrides it, -D overrides both; -Dheader:X=Y is a header."""
    monkeypatch.setenv("LOGNAME", "joe")
    config = tmp_path / "job.properties"
    config.write_text("a=file\nb=file\n")
    built = job_configuration(_options(config=str(config), defines=["b=cli", "header:X-Trace=1", "flag"]), {})
    assert built == {"user.name": "joe", "a": "file", "b": "cli", "flag": "true"}
    assert properties_and_headers(["header:X-Trace=1"]) == ({}, {"X-Trace": "1"})
    assert job_configuration(_options(username="ann", defines=["x=1"]), {})["user.name"] == "ann"  # type: ignore[index]
    assert job_configuration(_options(defines=["x=1"]), {"OOZIE_USER": "bob"})["user.name"] == "bob"  # type: ignore[index]
    assert job_configuration(_options(), {}, required=False) is None
    with pytest.raises(ConfigurationError, match="configuration is not specified"):
        job_configuration(_options(), {})
    with pytest.raises(ConfigurationError, match=r"\.properties' or a '\.xml"):
        (tmp_path / "job.txt").write_text("x=1")
        job_configuration(_options(config=str(tmp_path / "job.txt")), {})
    with pytest.raises(ConfigurationError, match="not found"):
        job_configuration(_options(config=str(tmp_path / "missing.properties")), {})


def test_the_local_application_hint_names_local_paths_only(tmp_path: Path) -> None:
    """file:// and bare paths that exist here get the hint; hdfs:// and paths that do not exist here do not."""
    app = tmp_path / "apps" / "wf"
    app.mkdir(parents=True)
    props = {"nameNode": f"file://{tmp_path}", "oozie.wf.application.path": "${nameNode}/apps/wf"}
    assert f"({app})" in local_application_hint(props)
    assert f"({app})" in local_application_hint({"oozie.coord.application.path": str(app)})
    assert local_application_hint({"oozie.wf.application.path": "hdfs://nn:8020/apps/wf"}) == ""
    assert local_application_hint({"oozie.wf.application.path": f"file://{tmp_path}/nowhere"}) == ""


@pytest.mark.parametrize(
    ("zone", "verbose", "expected"),
    [
        pytest.param("GMT", False, "2026-11-23 10:00 GMT", id="gmt-default"),
        pytest.param("America/Los_Angeles", False, "2026-11-23 02:00 PST", id="named-zone"),
        pytest.param("GMT+05:30", False, "2026-11-23 15:30 +05:30", id="gmt-offset-shortened"),
        pytest.param("GMT", True, "2026-11-23 10:00:00 GMT", id="verbose-seconds"),
        pytest.param("No/Such_Zone", False, "2026-11-23 10:00 GMT", id="unknown-zone-is-gmt"),
    ],
)
def test_dates_print_as_oozies_mask_date(zone: str, verbose: bool, expected: str) -> None:
    """The server's RFC 822 dates printed `yyyy-MM-dd HH:mm zzz` in the -timezone zone (OozieCLI.maskDate)."""
    assert render.mask_date("Mon, 23 Nov 2026 10:00:00 GMT", render.resolve_zone(zone), verbose) == expected
    assert render.mask_date(None, render.resolve_zone(zone)) == "-"


def test_wide_values_push_the_row_right_with_a_space() -> None:
    """Java's `%-Ns` never cuts a value; a value as wide as its column keeps one space before the next."""
    columns = (("A", 4), ("B", 0))
    assert render.row(columns, ["abc", "x"]) == "abc x"
    assert render.row(columns, ["abcdef", "x"]) == "abcdef x"
