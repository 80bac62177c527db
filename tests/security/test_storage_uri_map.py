"""STORAGE_URI_MAP: URI prefixes of migrated applications mapped once, longest prefix first, never around a root.

kernel.storage.map_uri replaces whole-segment prefixes; project.env reads the setting from the
environment and refuses what would map twice. Every reader maps first and checks the roots on
what the URI maps to: a mapping to a place outside the roots is refused like any such URI.
"""

from __future__ import annotations

from typing import Any

import pytest

from kernel import application_sources, storage
from oozie.definitions import DefinitionError
from project.env import ConfigurationError, env_uri_map
from workflows.actions.storage import StorageError, check_allowed

MAP = {
    "hdfs://namenode:8020": "file:///srv/hdfs",
    "hdfs://namenode:8020/user/etl": "s3://bucket/etl/",
    "hdfs://nn2": "memory://",
}


@pytest.mark.parametrize(("url", "mapped"), [
    pytest.param("hdfs://namenode:8020/user/ann/x", "file:///srv/hdfs/user/ann/x", id="prefix"),
    pytest.param("hdfs://namenode:8020", "file:///srv/hdfs", id="the-prefix-itself"),
    pytest.param("hdfs://namenode:8020/user/etl/in/a", "s3://bucket/etl/in/a", id="longest-prefix-wins"),
    pytest.param("hdfs://namenode:8020/user/etlx/a", "file:///srv/hdfs/user/etlx/a", id="whole-segments-only"),
    pytest.param("hdfs://namenode:80201/x", "hdfs://namenode:80201/x", id="another-port-unmapped"),
    pytest.param("hdfs://nn2/data/_SUCCESS", "memory://data/_SUCCESS", id="to-memory"),
    pytest.param("/plain/path", "/plain/path", id="plain-path-unmapped"),
    pytest.param("s3://bucket/etl/x", "s3://bucket/etl/x", id="a-target-is-not-mapped-again"),
])
def test_map_uri(settings: Any, url: str, mapped: str) -> None:
    """The longest matching prefix (whole segments) is replaced by its target; anything else is unchanged."""
    settings.STORAGE_URI_MAP = MAP
    assert storage.map_uri(url) == mapped
    assert storage.map_uri(storage.map_uri(url)) == mapped  # mapping twice changes nothing


def test_the_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """`from=to,from=to`, a trailing slash of a prefix ignored; malformed pairs, duplicates and chains refused."""
    monkeypatch.setenv("STORAGE_URI_MAP", "hdfs://namenode:8020/=file:///srv/hdfs, hdfs://nn2=s3://bucket/prefix")
    assert env_uri_map("STORAGE_URI_MAP") == {"hdfs://namenode:8020": "file:///srv/hdfs", "hdfs://nn2": "s3://bucket/prefix"}
    monkeypatch.delenv("STORAGE_URI_MAP")
    assert env_uri_map("STORAGE_URI_MAP") == {}
    for bad, message in (
        ("hdfs://nn", "is not from=to"),
        ("hdfs://nn=/srv/hdfs", "is not from=to"),
        ("hdfs://nn=file:///a,hdfs://nn/=file:///b", "mapped twice"),
        ("hdfs://a=hdfs://b/x,hdfs://b=file:///srv", "lies under the mapped prefix"),
    ):
        monkeypatch.setenv("STORAGE_URI_MAP", bad)
        with pytest.raises(ConfigurationError, match=message):
            env_uri_map("STORAGE_URI_MAP")


def test_a_mapping_to_outside_the_roots_is_refused(settings: Any, tmp_path: Any) -> None:
    """hdfs://namenode:8020 mapped to /etc: application reads and workflow storage refuse it, naming the mapping."""
    settings.STORAGE_URI_MAP = {"hdfs://namenode:8020": "file:///etc"}
    with pytest.raises(DefinitionError, match=r"mapped to 'file:///etc/passwd' .*outside the application roots"):
        application_sources.check_readable("hdfs://namenode:8020/passwd", "oozie.wf.application.path")
    assert not application_sources.is_allowed("hdfs://namenode:8020/passwd")
    with pytest.raises(StorageError, match="FS014.*mapped to 'file:///etc/passwd'"):
        check_allowed("hdfs://namenode:8020/passwd")
    with pytest.raises(storage.OutsideRoots):
        storage.check_under("hdfs://namenode:8020/passwd", [f"file://{tmp_path}"], setting="ROOTS")
    # The same URI unmapped lies under the roots' bare hdfs:// (the default): the mapping, not the URI, is refused.
    settings.STORAGE_URI_MAP = {}
    assert check_allowed("hdfs://namenode:8020/passwd") == "hdfs://namenode:8020/passwd"
    # Mapped inside the roots, it is allowed and opened where it maps to.
    settings.STORAGE_URI_MAP = {"hdfs://namenode:8020": f"file://{tmp_path}"}
    assert check_allowed("hdfs://namenode:8020/passwd") == f"file://{tmp_path.resolve()}/passwd"


@pytest.mark.parametrize(("text", "mapped"), [
    pytest.param("hdfs://namenode:8020/user/ann/in", "file:///srv/hdfs/user/ann/in", id="a-whole-argument"),
    pytest.param("-Dinput=hdfs://namenode:8020/user/ann/in", "-Dinput=file:///srv/hdfs/user/ann/in", id="after-equals"),
    pytest.param("hdfs://nn2/a,hdfs://namenode:8020/user/etl/b", "memory://a,s3://bucket/etl/b", id="a-list"),
    pytest.param("cp 'hdfs://nn2/a' x", "cp 'memory://a' x", id="quoted"),
    pytest.param("xhdfs://nn2/a hdfs://nn22/a", "xhdfs://nn2/a hdfs://nn22/a", id="not-a-uri-start-or-another-host"),
    pytest.param("hdfs://namenode:80201/x", "hdfs://namenode:80201/x", id="another-port"),
    pytest.param("no uri here", "no uri here", id="plain-text"),
])
def test_map_uris_in_text(settings: Any, text: str, mapped: str) -> None:
    """Every URI starting with a mapped prefix inside a text is mapped (shell arguments, env-vars); nothing else moves."""
    settings.STORAGE_URI_MAP = MAP
    assert storage.map_uris_in(text) == mapped
    assert storage.map_uris_in(mapped) == mapped  # mapping twice changes nothing
