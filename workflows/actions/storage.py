"""The storage a workflow touches (fs actions, `prepare`, `fs:` functions, attachments): fsspec URIs under roots.

A workflow runs with the service's rights, not its submitter's (Oozie proxies the user on
HDFS; a worker has one identity). So every path is checked before storage is touched: it
must carry its file system (`file:///data/x`, `s3://bucket/x`; Oozie's FS001 otherwise) and
lie under WORKFLOW_FS_ROOTS once `..` and, for local files, symbolic links are resolved
(FS014, Oozie's access-denied code). Glob matches are checked again, one by one (ADR 0022).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import fsspec

from kernel import storage
from workflows.actions.options import fs_roots

GLOB_MAX = 50_000  # Oozie's oozie.action.fs.glob.max
_GLOB = re.compile(r"[*?\[]")


class StorageError(Exception):
    """A path the action may not use, or a file system operation that failed: an Oozie error code and message."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


@dataclass(frozen=True)
class Location:
    """A checked path: the URI, its protocol, the fsspec file system and the path on it."""

    url: str
    protocol: str
    fs: Any  # fsspec.AbstractFileSystem (fsspec has no type hints)
    path: str

    @property
    def local(self) -> bool:
        """Whether this is a file on the worker's own disk."""
        return self.protocol == "file"

    def at(self, path: str) -> Location:
        """Another path on the same file system, checked against the roots."""
        url = "file://" + path if self.local else str(self.fs.unstrip_protocol(path))
        check_allowed(url)
        return Location(url, self.protocol, self.fs, path)


def protocol_of(url: str) -> str:
    """The protocol a URI names, or '' when it names none."""
    return url.split("://", 1)[0].lower() if "://" in url else ""


def check_allowed(url: str) -> str:
    """The URL to open: refuse one without a file system (FS001), malformed, or outside WORKFLOW_FS_ROOTS (FS014).

    A migrated application's URI is mapped first (kernel.storage.map_uri) and the mapped URI checked and opened.

    The roots are compared as fsspec opens the path (kernel.storage): local paths resolved,
    symbolic links followed; the resolved URL is what the action then opens.
    """
    if not protocol_of(url):
        raise StorageError("FS001", f"Missing scheme in path [{url}] (write file:///path for a local file)")
    if "::" in url:
        raise StorageError("FS001", f"Chained file systems are not allowed in path [{url}]")
    mapped = storage.map_uri(url)  # a migrated application's URI (STORAGE_URI_MAP), checked as what it maps to
    note = storage.mapped_note(url, mapped)
    try:
        target = storage.resolve(mapped)
    except storage.StorageURLError as exc:
        raise StorageError("FS001", f"Path [{url}]{note} cannot be used: {exc}") from None
    if not storage.under(target, fs_roots()):
        raise StorageError("FS014", f"Path [{url}]{note} is outside the workflow file system roots (WORKFLOW_FS_ROOTS)")
    return target.url


def locate(url: str) -> Location:
    """The checked location of a URI (StorageError when refused or its file system is unavailable)."""
    url = url.strip()
    opened = check_allowed(url)
    try:
        fs, path = fsspec.core.url_to_fs(opened)
    except (ImportError, ValueError) as exc:
        raise StorageError("FS001", f"File system of path [{url}] is not available: {exc}") from None
    return Location(url, protocol_of(opened), fs, str(path))  # the protocol of what is opened (a mapped URI's)


def has_glob(location: Location) -> bool:
    """Whether the path is a glob pattern (Oozie globs delete, move sources, chmod and fs:exists)."""
    return bool(_GLOB.search(location.path))


def expand(location: Location) -> list[Location]:
    """What the path names on storage: its glob matches, or itself when it exists (Hadoop's globStatus)."""
    if not has_glob(location):
        return [location] if location.fs.exists(location.path) else []
    matches = sorted(str(match) for match in location.fs.glob(location.path))
    if len(matches) > GLOB_MAX:
        raise StorageError("FS013", f"too many globbed files/dirs to do FS operation ({len(matches)} > {GLOB_MAX})")
    return [location.at(match) for match in matches]
