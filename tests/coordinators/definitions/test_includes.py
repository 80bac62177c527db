"""`<datasets><include>`: relative, absolute and fsspec locations, cycles, and spec 10.1.1 collisions."""

from __future__ import annotations

import itertools
from pathlib import Path

import fsspec
import pytest

from oozie.definitions import (
    DatasetCollisionError,
    DefinitionError,
    DocumentTooLargeError,
    IncludeError,
    SchemaValidationError,
    UnsupportedFeatureError,
    fsspec_loader,
    parse_coordinator,
)

NS = "uri:oozie:coordinator:0.4"
_counter = itertools.count()


def ds(name: str, uri: str = "hdfs://nn/x/${YEAR}") -> str:
    return (
        f'<dataset name="{name}" frequency="${{coord:days(1)}}" initial-instance="2009-01-01T00:00Z" '
        f'timezone="UTC"><uri-template>{uri}</uri-template></dataset>'
    )


def datasets_file(*body: str, ns: str | None = NS) -> bytes:
    xmlns = f' xmlns="{ns}"' if ns else ""
    return f"<datasets{xmlns}>{''.join(body)}</datasets>".encode()


def coordinator(*datasets_body: str, uses: str = "logs") -> str:
    return (
        f'<coordinator-app name="c" frequency="60" start="2009-01-01T00:00Z" end="2009-01-02T00:00Z" '
        f'timezone="UTC" xmlns="{NS}">\n<datasets>\n{chr(10).join(datasets_body)}\n</datasets>\n'
        f'<input-events><data-in name="in" dataset="{uses}"><instance>${{coord:current(0)}}</instance></data-in></input-events>\n'
        "<action><workflow><app-path>hdfs://nn/wf</app-path></workflow></action>\n</coordinator-app>"
    )


def inc(href: str) -> str:
    return f"<include>{href}</include>"


@pytest.fixture
def mem() -> str:
    """A fresh memory:// directory."""
    root = f"/defs{next(_counter)}"
    return root


def put(path: str, data: bytes) -> None:
    fsspec.filesystem("memory").pipe(path, data)


def test_relative_include_against_app_dir(tmp_path: Path) -> None:
    """A relative href resolves against app_dir, `..` included."""
    (tmp_path / "shared").mkdir()
    (tmp_path / "app").mkdir()
    (tmp_path / "shared" / "d.xml").write_bytes(datasets_file(ds("logs")))
    app = parse_coordinator(coordinator(inc("../shared/d.xml")), "c.xml", app_dir=str(tmp_path / "app"))
    assert app.datasets[0].name == "logs"
    assert app.datasets[0].source == str(tmp_path / "shared" / "d.xml")
    assert app.dataset_includes == ("../shared/d.xml",)


def test_absolute_path_include(tmp_path: Path) -> None:
    """An absolute path needs no app_dir."""
    (tmp_path / "d.xml").write_bytes(datasets_file(ds("logs")))
    app = parse_coordinator(coordinator(inc(str(tmp_path / "d.xml"))), "c.xml")
    assert app.datasets[0].source == str(tmp_path / "d.xml")


def test_file_url_include(tmp_path: Path) -> None:
    """file:// URLs go through fsspec."""
    (tmp_path / "d.xml").write_bytes(datasets_file(ds("logs")))
    app = parse_coordinator(coordinator(inc((tmp_path / "d.xml").as_uri())), "c.xml")
    assert app.dataset("logs") is not None


def test_memory_urls_relative_and_absolute(mem: str) -> None:
    """memory:// includes; relative hrefs resolve against a URL app_dir, bare absolute paths stay on its filesystem."""
    put(f"{mem}/a.xml", datasets_file(ds("logs")))
    put(f"{mem}/sub/b.xml", datasets_file(ds("other")))
    text = coordinator(inc("a.xml"), inc(f"{mem}/sub/b.xml"))
    app = parse_coordinator(text, "c.xml", app_dir=f"memory://{mem}")
    assert [d.source for d in app.datasets] == [f"memory://{mem}/a.xml", f"memory://{mem}/sub/b.xml"]
    direct = parse_coordinator(coordinator(inc(f"memory://{mem}/a.xml")), "c.xml")
    assert direct.datasets[0].name == "logs"


def test_nested_includes_resolve_against_the_including_file(mem: str) -> None:
    """An included file's own relative include is relative to that file's directory."""
    put(f"{mem}/one/a.xml", datasets_file(inc("../two/b.xml"), ds("logs")))
    put(f"{mem}/two/b.xml", datasets_file(ds("deep")))
    app = parse_coordinator(coordinator(inc("one/a.xml")), "c.xml", app_dir=f"memory://{mem}")
    assert sorted(d.name for d in app.datasets) == ["deep", "logs"]


@pytest.mark.parametrize(
    "href",
    [
        pytest.param("${datasetsDir}/d.xml", id="variable"),
        pytest.param("${coord:conf('datasets.dir')}/d.xml", id="function"),
    ],
)
def test_an_include_location_cannot_use_variables(mem: str, href: str) -> None:
    """Includes are read while parsing, before job properties: `${...}` there is refused by name, nothing read."""
    put(f"{mem}/${{datasetsDir}}/d.xml", datasets_file(ds("logs")))  # even a file of that literal name
    with pytest.raises(IncludeError, match=r"cannot use variables") as caught:
        parse_coordinator(coordinator(inc(href)), "c.xml", app_dir=f"memory://{mem}")
    assert href.split("/")[0] in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_include_including_itself_is_a_cycle(mem: str) -> None:
    """Self-inclusion fails fast with the chain."""
    put(f"{mem}/self.xml", datasets_file(inc("self.xml"), ds("logs")))
    with pytest.raises(IncludeError, match="include cycle") as caught:
        parse_coordinator(coordinator(inc("self.xml")), "c.xml", app_dir=f"memory://{mem}")
    assert caught.value.element == "include" and caught.value.source == f"memory://{mem}/self.xml"


def test_a_two_file_cycle(mem: str) -> None:
    """a -> b -> a is refused."""
    put(f"{mem}/a.xml", datasets_file(inc("b.xml"), ds("logs")))
    put(f"{mem}/b.xml", datasets_file(inc("a.xml"), ds("other")))
    with pytest.raises(IncludeError, match=r"a\.xml -> memory://.*b\.xml -> memory://.*a\.xml includes itself"):
        parse_coordinator(coordinator(inc("a.xml")), "c.xml", app_dir=f"memory://{mem}")


def test_endless_distinct_includes_are_bounded() -> None:
    """A loader that always invents a new file cannot recurse forever."""
    calls: list[str] = []

    def loader(url: str) -> bytes:
        calls.append(url)
        return datasets_file(inc(f"n{len(calls)}/next.xml"), ds(f"d{len(calls)}"))

    with pytest.raises(IncludeError, match="too many includes"):
        parse_coordinator(coordinator(inc("start.xml")), "c.xml", app_dir="/apps", loader=loader)
    assert len(calls) <= 10


def test_a_diamond_reads_the_shared_file_once(mem: str) -> None:
    """a and b both include common.xml: it is the same file, not a collision with itself."""
    put(f"{mem}/a.xml", datasets_file(inc("common.xml"), ds("logs")))
    put(f"{mem}/b.xml", datasets_file(inc("common.xml"), ds("other")))
    put(f"{mem}/common.xml", datasets_file(ds("common")))
    app = parse_coordinator(coordinator(inc("a.xml"), inc("b.xml")), "c.xml", app_dir=f"memory://{mem}")
    assert sorted(d.name for d in app.datasets) == ["common", "logs", "other"]


def test_same_name_in_two_included_files_fails(mem: str) -> None:
    """Spec 10.1.1: no two included files may define the same name; both are named."""
    put(f"{mem}/a.xml", datasets_file(ds("logs")))
    put(f"{mem}/b.xml", datasets_file("\n", ds("logs")))
    with pytest.raises(DatasetCollisionError, match="defined in two included files") as caught:
        parse_coordinator(coordinator(inc("a.xml"), inc("b.xml")), "c.xml", app_dir=f"memory://{mem}")
    assert f"memory://{mem}/a.xml and memory://{mem}/b.xml" in str(caught.value)
    assert (caught.value.source, caught.value.line, caught.value.element) == (f"memory://{mem}/b.xml", 2, "dataset")


def test_same_name_in_a_nested_include_fails(mem: str) -> None:
    """A file and the file it includes are two dataset definition files too."""
    put(f"{mem}/a.xml", datasets_file(inc("b.xml"), ds("logs")))
    put(f"{mem}/b.xml", datasets_file(ds("logs")))
    with pytest.raises(DatasetCollisionError):
        parse_coordinator(coordinator(inc("a.xml")), "c.xml", app_dir=f"memory://{mem}")


def test_same_name_twice_in_one_file_fails(mem: str) -> None:
    """Spec 10.1.1: names are unique within one dataset definition file."""
    put(f"{mem}/a.xml", datasets_file(ds("logs"), "\n", ds("logs")))
    with pytest.raises(DatasetCollisionError, match="defined twice in one dataset definition file") as caught:
        parse_coordinator(coordinator(inc("a.xml")), "c.xml", app_dir=f"memory://{mem}")
    assert caught.value.line == 2


def test_same_name_twice_embedded_fails() -> None:
    """Spec 10.1.1: embedded names are unique."""
    with pytest.raises(DatasetCollisionError, match="defined twice in the coordinator") as caught:
        parse_coordinator(coordinator(ds("logs"), ds("logs")), "c.xml")
    assert (caught.value.source, caught.value.line, caught.value.element) == ("c.xml", 4, "dataset")


def test_embedded_definition_overrides_included(mem: str) -> None:
    """Spec 10.1.1: the embedded dataset takes precedence over the included one."""
    put(f"{mem}/a.xml", datasets_file(ds("logs", "hdfs://nn/shared"), ds("other")))
    text = coordinator(inc("a.xml"), ds("logs", "hdfs://nn/private"))
    app = parse_coordinator(text, "c.xml", app_dir=f"memory://{mem}")
    logs = app.dataset("logs")
    assert logs is not None and logs.uri_template == "hdfs://nn/private" and logs.source == "c.xml"
    assert len(app.datasets) == 2


def test_relative_include_without_app_dir_is_refused() -> None:
    """No directory, no relative include."""
    with pytest.raises(IncludeError, match="relative but the application directory is unknown") as caught:
        parse_coordinator(coordinator(inc("d.xml")), "c.xml")
    assert (caught.value.line, caught.value.element) == (3, "include")


def test_unreadable_includes_are_include_errors(mem: str) -> None:
    """Missing files and loader failures are IncludeErrors naming the include."""
    with pytest.raises(IncludeError, match="cannot read include .*FileNotFoundError"):
        parse_coordinator(coordinator(inc("missing.xml")), "c.xml", app_dir=f"memory://{mem}")

    def broken(url: str) -> bytes:
        raise RuntimeError("storage down")

    with pytest.raises(IncludeError, match="storage down"):
        parse_coordinator(coordinator(inc("d.xml")), "c.xml", app_dir="/x", loader=broken)


def test_injected_loader_receives_resolved_urls() -> None:
    """The loader sees absolute locations."""
    seen: list[str] = []

    def loader(url: str) -> bytes:
        seen.append(url)
        return datasets_file(ds("logs"))

    parse_coordinator(coordinator(inc("sub/../d.xml")), "c.xml", app_dir="hdfs://nn:8020/apps/one", loader=loader)
    assert seen == ["hdfs://nn:8020/apps/one/d.xml"]


@pytest.mark.parametrize(
    ("content", "error", "fragment"),
    [
        pytest.param(datasets_file(ds("logs"), ns="uri:oozie:coordinator:0.2"), IncludeError, "differs", id="other-namespace"),
        pytest.param(coordinator().encode(), IncludeError, "must be a <datasets> document", id="not-datasets"),
        pytest.param(datasets_file("<bogus/>"), SchemaValidationError, "bogus", id="schema-violation"),
        pytest.param(b"<datasets>", DefinitionError, "malformed XML", id="malformed"),
        pytest.param(b'<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]><datasets/>', DefinitionError, "DOCTYPE", id="xxe"),
        pytest.param(
            datasets_file('<async-dataset name="a" sequence-type="x" initial-version="1"><uri-template>u</uri-template></async-dataset>'),
            UnsupportedFeatureError, "asynchronous", id="async-dataset",
        ),
    ],
)
def test_bad_included_files(mem: str, content: bytes, error: type[DefinitionError], fragment: str) -> None:
    """Included files get the same hardening and validation as the coordinator, with their own name in errors."""
    put(f"{mem}/d.xml", content)
    with pytest.raises(error, match=fragment):
        parse_coordinator(coordinator(inc("d.xml")), "c.xml", app_dir=f"memory://{mem}")


def test_oversized_include_is_refused(mem: str) -> None:
    """The default loader stops reading past the limit."""
    put(f"{mem}/big.xml", datasets_file(ds("logs")) + b" " * 2_000_000)
    with pytest.raises(DocumentTooLargeError):
        parse_coordinator(coordinator(inc("big.xml")), "c.xml", app_dir=f"memory://{mem}")


def test_protocol_allow_list(mem: str) -> None:
    """fsspec_loader can be restricted to some protocols."""
    put(f"{mem}/d.xml", datasets_file(ds("logs")))
    loader = fsspec_loader(allowed_protocols={"file"})
    with pytest.raises(IncludeError, match="protocol 'memory' is not allowed"):
        parse_coordinator(coordinator(inc("d.xml")), "c.xml", app_dir=f"memory://{mem}", loader=loader)
