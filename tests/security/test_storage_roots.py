"""Root checks compare what is opened (security issue, item 3).

Rules (kernel.storage, used by coordinators, workflows and batches):
- a URL is read as fsspec opens it: no percent-decoding on one side only; `%`-escaped dot
  segments are refused; `file://host/x` and relative forms (which fsspec reads relative to the
  working directory) are refused; protocols are lower case;
- local paths are resolved (`..`, symbolic links) before they are compared, and what the check
  returns (and the caller opens) is the resolved path;
- so whatever a checker accepts, the file fsspec opens lies under the root, for every root
  setting (COORD_APPLICATION_ROOTS, WORKFLOW_FS_ROOTS, BATCH_PAYLOAD_ROOTS) and every way of
  writing the root.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fsspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from batches.models import Batch, Collection, Profile
from batches.sources import PayloadRefused, check_payload_url
from kernel import storage
from kernel.application_sources import check_readable
from oozie.definitions import DefinitionError
from tests.coordinators.api.factories import api, user
from workflows.actions.storage import StorageError, check_allowed

SEGMENTS = [
    "sub", "file", "..", ".", "%2e%2e", "%2E%2e", ".%2e", "%2e", "%2e.", "link-out", "link-in", "link-root",
    "secret", "outside", "root", "%2f", "%252e%252e", "", "Sub", "..%2f..", "%2e%2e%2fsecret", "~",
]
PREFIXES = ["file://", "file:///", "file://localhost", "file://host", "FILE://", "File://", "local://", "", "file:"]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """base/{root/{sub/file, link-out -> ../outside, link-in -> sub}, outside/secret, %2e%2e/, alias -> root}."""
    base = tmp_path_factory.mktemp("roots")
    root, outside = base / "root", base / "outside"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "file").write_text("inside")
    outside.mkdir()
    (outside / "secret").write_text("secret")
    (root / "link-out").symlink_to(outside, target_is_directory=True)
    (root / "link-in").symlink_to(root / "sub", target_is_directory=True)
    (root / "link-root").symlink_to("/", target_is_directory=True)
    literal = base / "%2e%2e"  # the issue's directory literally named %2e%2e (an fs mkdir can make one)
    (literal / "root").mkdir(parents=True)
    (literal / "root" / "secret").symlink_to(outside / "secret")
    (base / "alias").symlink_to(root, target_is_directory=True)
    return {"base": base, "root": root, "outside": outside, "alias": base / "alias"}


def root_forms(sandbox: dict[str, Path]) -> list[str]:
    """Ways an operator writes the same root: URL, bare path, trailing slash, through a symbolic link."""
    root = sandbox["root"]
    return [f"file://{root}", str(root), f"file://{root}/", f"file://{sandbox['alias']}"]


def coordinators_checker(roots: list[str], django_settings: Any) -> Callable[[str], str]:
    """COORD_APPLICATION_ROOTS through kernel.application_sources.check_readable (what submissions read)."""
    django_settings.COORD_APPLICATION_ROOTS = roots

    def check(url: str) -> str:
        try:
            return check_readable(url, "application")
        except DefinitionError as exc:
            raise storage.StorageURLError(str(exc)) from None

    return check


def workflows_checker(roots: list[str], django_settings: Any) -> Callable[[str], str]:
    """WORKFLOW_FS_ROOTS through workflows.actions.storage.check_allowed (fs actions, fs: EL, attachments)."""
    django_settings.WORKFLOW_FS_ROOTS = roots

    def check(url: str) -> str:
        try:
            return check_allowed(url)
        except StorageError as exc:
            raise storage.StorageURLError(str(exc)) from None

    return check


def batches_checker(roots: list[str], django_settings: Any) -> Callable[[str], str]:
    """BATCH_PAYLOAD_ROOTS through batches.sources.check_payload_url (payloads and manifest entries)."""
    django_settings.BATCH_PAYLOAD_ROOTS = roots
    django_settings.BATCH_PAYLOAD_PROTOCOLS = ["file", "local", "memory"]

    def check(url: str) -> str:
        try:
            return check_payload_url(url)
        except PayloadRefused as exc:
            raise storage.StorageURLError(str(exc)) from None

    return check


CHECKERS = {"coordinators": coordinators_checker, "workflows": workflows_checker, "batches": batches_checker}


def opened_file(url: str) -> str:
    """The real file fsspec opens for the URL a checker returned."""
    fs, path = fsspec.core.url_to_fs(url)
    assert "local" in fs.protocol or "file" in fs.protocol, url
    return os.path.realpath(path)


urls = st.builds(
    lambda prefix, start, segments: prefix + "/".join([start, *segments]),
    st.sampled_from(PREFIXES),
    st.sampled_from(["{root}", "{outside}", "{base}", "{alias}", "{base}/%2e%2e/root", "{root}/%2e%2e"]),
    st.lists(st.sampled_from(SEGMENTS), max_size=6),
)


@pytest.mark.parametrize("where", list(CHECKERS))
@pytest.mark.parametrize("form", range(4), ids=["url", "bare-path", "trailing-slash", "through-a-link"])
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(template=urls)
@example(template="file://{root}/../outside/secret")
@example(template="file://{root}/%2e%2e/outside/secret")
@example(template="file://{base}/%2e%2e/root/secret")
@example(template="file://{root}/link-out/secret")
@example(template="file://{root}/link-root/etc/passwd")
@example(template="FILE://{root}/sub/file")
@example(template="file://localhost{root}/sub/file")
def test_whatever_a_checker_accepts_opens_a_file_under_the_root(
    where: str, form: int, template: str, sandbox: dict[str, Path], settings: Any,
) -> None:
    """Accepted => the file fsspec opens for the returned URL resolves under the root; refusals name the problem."""
    roots = [root_forms(sandbox)[form]]
    check = CHECKERS[where](roots, settings)
    url = template.format(**{name: str(path) for name, path in sandbox.items()})
    real_root = os.path.realpath(sandbox["root"])
    try:
        opened = check(url)
    except storage.StorageURLError as exc:
        assert str(exc)  # a refusal says why
        return
    real = opened_file(opened)
    assert real == real_root or real.startswith(real_root + os.sep), (url, opened, real)


@pytest.mark.parametrize("where", list(CHECKERS))
@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        pytest.param("{root}/sub/file", True, id="plain-inside"),
        pytest.param("{root}/link-in/file", True, id="link-staying-inside"),
        pytest.param("{root}/sub/../sub/file", True, id="dot-dot-staying-inside"),
        pytest.param("{root}/link-out/secret", False, id="link-leading-out"),
        pytest.param("{root}/../outside/secret", False, id="dot-dot-leading-out"),
        pytest.param("{root}/%2e%2e/outside/secret", False, id="escaped-dot-dot"),
        pytest.param("{base}/%2e%2e/root/secret", False, id="issue-literal-escaped-directory"),
        pytest.param("{root}x/secret", False, id="sibling-with-the-root-as-prefix"),
    ],
)
def test_the_cases_of_the_issue(where: str, path: str, allowed: bool, sandbox: dict[str, Path], settings: Any) -> None:
    """The named cases, on every checker: inside (links and `..` that stay inside) passes, every way out is refused."""
    check = CHECKERS[where]([f"file://{sandbox['root']}"], settings)
    url = "file://" + path.format(**{name: str(p) for name, p in sandbox.items()})
    if allowed:
        assert opened_file(check(url)).startswith(os.path.realpath(sandbox["root"]) + os.sep)
    else:
        with pytest.raises(storage.StorageURLError):
            check(url)


memory_urls = st.builds(
    lambda prefix, segments: prefix + "/".join(segments),
    st.sampled_from(["memory://", "memory:///", "MEMORY://", "memory://data/", "memory:///data/"]),
    st.lists(st.sampled_from(["data", "in", "x", "..", ".", "%2e%2e", "", "other", "data%2f.."]), max_size=5),
)


@settings(max_examples=300, deadline=None)
@given(url=memory_urls, root=st.sampled_from(["memory://data", "memory:///data", "memory://data/"]))
def test_object_stores_compare_keys_as_the_file_system_names_them(url: str, root: str) -> None:
    """memory:// (a file system without `..`): accepted => the key fsspec uses starts with the root's key."""
    try:
        target = storage.check_under(url, [root], setting="ROOTS")
    except storage.StorageURLError:
        return
    _, key = fsspec.core.url_to_fs(target.url)
    assert key == "/data" or key.startswith("/data/"), (url, target, key)
    assert ".." not in key.split("/")


@pytest.mark.parametrize(
    ("url", "roots", "allowed"),
    [
        pytest.param("hdfs://nn:8020/user/x", ["hdfs://nn:8020/user"], True, id="same-name-node"),
        pytest.param("hdfs://other:8020/user/x", ["hdfs://nn:8020/user"], False, id="other-name-node"),
        pytest.param("s3://bucket/in/x", ["s3://bucket/in"], True, id="same-bucket"),
        pytest.param("s3://bucket/inside/x", ["s3://bucket/in"], False, id="prefix-is-not-a-folder"),
        pytest.param("s3://bucket/in/../out", ["s3://bucket/in"], False, id="dot-dot-on-object-store"),
        pytest.param("s3://anything/at/all", ["s3://"], True, id="bare-protocol-root"),
        pytest.param("local:///tmp/x", ["file:///tmp"], True, id="local-is-file"),
        pytest.param("file:///tmp/x", ["memory://"], False, id="other-file-system"),
        pytest.param("file:///tmp/x", ["not a root"], False, id="malformed-root-admits-nothing"),
    ],
)
def test_file_systems_and_hosts(url: str, roots: list[str], allowed: bool) -> None:
    """File systems are compared by what they are (file == local); a host or bucket is part of the path."""
    if allowed:
        storage.check_under(url, roots, setting="ROOTS")
    else:
        with pytest.raises(storage.StorageURLError):
            storage.check_under(url, roots, setting="ROOTS")


@pytest.mark.django_db
def test_the_batch_api_refuses_the_escaped_directory_of_the_issue(sandbox: dict[str, Path], settings: Any) -> None:
    """The probe's bypass, end to end: a payload under a literal `%2e%2e` directory is a 400 and no batch is stored."""
    settings.BATCH_PAYLOAD_ROOTS = [f"file://{sandbox['root']}"]
    Profile.objects.create(name="p", collection=Collection.objects.create(name="c"), task="examples.ingest_noop")
    url = f"file://{sandbox['base']}/%2e%2e/root/secret"
    response = api(user("ann")).post("/api/v1/batches/", {"profile": "p", "type": "file", "payload_url": url}, format="json")
    assert response.status_code == 400, response.content
    assert "%2e" in response.content.decode() or "outside" in response.content.decode()
    assert Batch.objects.count() == 0
