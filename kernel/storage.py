"""Storage URLs and the roots they must lie under: one check, comparing exactly what fsspec opens.

Coordinators (COORD_APPLICATION_ROOTS), workflows (WORKFLOW_FS_ROOTS), batches
(BATCH_PAYLOAD_ROOTS) and the tasks the project ships all let users name storage by URL, and
workers act with the service's rights. A root check is only a boundary if it compares the path
the file system will open, so `resolve` reads a URL the way fsspec does (`url_to_fs`: the
protocol's own `_strip_protocol`, no percent-decoding, `file://host/x` and bare relative paths
being relative to the working directory; the host of `hdfs://namenode/x` or the bucket of
`s3://bucket/x` is kept in the compared path) and then:

- refuses what cannot be compared safely: no protocol and not an absolute path, upper-case
  protocols (fsspec knows none), chained URLs (`a::b`), `file:` without `///`, control
  characters, a `%`-escaped `.` or `..` segment anywhere, and `.`/`..` segments on non-local
  file systems (object stores keep them as literal keys; some servers normalize them);
- resolves local paths with `os.path.realpath` (`..` and symbolic links), so a root check
  sees the file the link points at. Callers open `StoragePath.path`, the resolved path, not
  what the user wrote.

`under(target, roots)` then compares file systems (`file` and `local` are the same one) and
paths segment by segment: `file:///data` admits `/data` and `/data/x`, never `/database`. A
bare `s3://` root admits the whole protocol. A root that does not resolve admits nothing.

`map_uri` moves the URIs of migrated applications (STORAGE_URI_MAP: `hdfs://namenode:8020` read
as `file:///srv/hdfs`) before anything else: every caller maps first, then checks the mapped URI
against its roots and opens that, so a mapping never widens what the roots admit.

What remains (SECURITY.md): a local user who can write inside a root may swap a checked
directory for a symbolic link between the check and the open; roots should be directories
only the service writes to.
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

import fsspec
from django.conf import settings

log = logging.getLogger(__name__)

MAX_URL_CHARS = 4096
LOCAL_PROTOCOLS = frozenset({"file", "local"})
_PROTOCOL = re.compile(r"^[a-z][a-z0-9+.-]*$")
_SCHEME_LIKE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class StorageURLError(ValueError):
    """A storage URL that is malformed, or names something the check cannot compare safely."""


class OutsideRoots(StorageURLError):  # noqa: N818 - reads as the reason: "OutsideRoots: ..."
    """A well-formed storage URL that lies under none of the allowed roots."""


@dataclass(frozen=True)
class StoragePath:
    """A URL as fsspec opens it: the canonical protocol and the path on that file system.

    Local paths are resolved (symbolic links followed, `..` removed): open `path`, not the
    URL the user wrote, so what is opened is what was checked.
    """

    protocol: str  # the file system, compared with roots: `file` for every local one
    path: str
    whole_protocol: bool = False  # a bare `s3://` root: everything on that file system
    scheme: str = ""  # the protocol as written (a registered subclass keeps its own implementation)

    @property
    def local(self) -> bool:
        """Whether this is a file on this machine's own disk."""
        return self.protocol == "file"

    @property
    def url(self) -> str:
        """The URL to open: `file:///resolved/path`, or `protocol://path`, in the protocol written."""
        return f"{self.scheme or self.protocol}://{self.path}"


@lru_cache(maxsize=64)
def _implementation(protocol: str) -> Any | None:
    """fsspec's file system class for a protocol; None when its package is not installed.

    Raises StorageURLError for a protocol fsspec does not know at all.
    """
    try:
        return fsspec.get_filesystem_class(protocol)
    except ImportError:
        return None  # s3fs, pyarrow ... missing: it cannot be opened here, the raw path is compared
    except ValueError:
        raise StorageURLError(f"protocol {protocol!r} is not a storage protocol this service knows") from None


def canonical_protocol(protocol: str) -> str:
    """The name a file system goes by: `file` for local files, else its class's first protocol."""
    if protocol in LOCAL_PROTOCOLS:
        return "file"
    implementation = _implementation(protocol)
    if implementation is None:
        return protocol
    names = implementation.protocol
    return str(names if isinstance(names, str) else names[0])


def _segments_are_plain(path: str, *, dots_allowed: bool) -> None:
    """Refuse `%`-escaped dot segments always, and plain `.`/`..` segments where they are literal keys."""
    for segment in path.split("/"):
        decoded = unquote(segment)
        if decoded in (".", "..") and decoded != segment:
            raise StorageURLError(f"a %-escaped {decoded!r} segment ({segment!r}) is not allowed in a storage path")
        if not dots_allowed and segment in (".", ".."):
            raise StorageURLError(f"a {segment!r} segment is not allowed in a path on this file system")


def _prefix_of(source: str) -> str:
    """A mapped prefix as matched: whole segments, so `hdfs://nn` never matches `hdfs://nn2/x`."""
    return source if source.endswith("/") else source + "/"


def map_uri(url: str) -> str:
    """`url` with its longest STORAGE_URI_MAP prefix replaced by that prefix's target; unchanged if none matches.

    Prefixes match whole segments (`hdfs://namenode:8020` matches itself and
    `hdfs://namenode:8020/user/x`, not `hdfs://namenode:80201`); a target is never itself mapped
    (project.env refuses chains), so mapping twice changes nothing.
    """
    if not isinstance(url, str):
        return url
    text = url.strip()
    best = ""
    for source in settings.STORAGE_URI_MAP:
        if (text == source or text.startswith(_prefix_of(source))) and len(source) > len(best):
            best = source
    if not best:
        return url
    target: str = settings.STORAGE_URI_MAP[best]
    rest = text[len(best):].lstrip("/")
    if not rest:
        return target
    return target + rest if target.endswith("/") else f"{target}/{rest}"


def map_uris_in(text: str) -> str:
    """`text` with every URI in it that starts with a STORAGE_URI_MAP prefix mapped (a shell argument, `-Din=hdfs://nn/x`).

    A prefix counts only where a URI starts (at the start, or after a character no scheme
    holds: `=`, `:`, space, a quote ...) and ends with a whole segment (then `/`, the end, a
    space, `,`, `;`, a quote or `)`), so `xhdfs://nn` and `hdfs://nn2` stay as they are; the URI
    runs to the next space, `,`, `;` or quote. Mapping twice changes nothing.
    """
    if not isinstance(text, str) or not settings.STORAGE_URI_MAP:
        return text
    sources = sorted((source.rstrip("/") for source in settings.STORAGE_URI_MAP), key=len, reverse=True)
    pattern = re.compile(r"(?<![A-Za-z0-9+.\-])(?:" + "|".join(map(re.escape, sources)) + r")(?=[/\s,;'\")]|$)")
    out: list[str] = []
    position = 0
    for match in pattern.finditer(text):
        if match.start() < position:
            continue
        end = match.end()
        while end < len(text) and text[end] not in _URI_END:
            end += 1
        out += [text[position:match.start()], map_uri(text[match.start():end])]
        position = end
    out.append(text[position:])
    return "".join(out)


_URI_END = frozenset(" \t\n,;'\"")


def mapped_note(url: str, opened: str) -> str:
    """` (mapped to X by STORAGE_URI_MAP)` when a URL was mapped, for messages naming what the user wrote; else ''."""
    return f" (mapped to {opened!r} by STORAGE_URI_MAP)" if opened.strip() != url.strip() else ""


def resolve(url: str) -> StoragePath:
    """The file system and path fsspec would open for `url`, local paths resolved (StorageURLError if refused)."""
    if not isinstance(url, str) or not url.strip():
        raise StorageURLError("an empty storage URL")
    url = url.strip()
    if len(url) > MAX_URL_CHARS or _CONTROL.search(url):
        raise StorageURLError(f"a storage URL must be at most {MAX_URL_CHARS} printable characters")
    if "::" in url:
        raise StorageURLError(f"chained file systems are not allowed ({url[:200]!r})")
    if "://" in url:
        protocol, rest = url.split("://", 1)
    elif url.startswith("/"):
        protocol, rest = "file", url
    elif _SCHEME_LIKE.match(url):
        raise StorageURLError(f"{url[:200]!r}: write the file system's URL with '://' (file:///path for a local file)")
    else:
        raise StorageURLError(f"{url[:200]!r} is a relative path: name an absolute path or a URL (file:///path)")
    if not _PROTOCOL.match(protocol):
        raise StorageURLError(f"{url[:200]!r}: protocol {protocol!r} must be lower case letters, digits, '+', '.' or '-'")
    canonical = canonical_protocol(protocol)
    if canonical == "file":
        # fsspec reads file://host/x and file://~/x relative to the working directory or home.
        if not rest.startswith("/"):
            raise StorageURLError(f"{url[:200]!r}: a local file URL is file:///absolute/path (no host, no ~)")
        _segments_are_plain(rest, dots_allowed=True)
        return StoragePath("file", os.path.realpath(rest), scheme=protocol)
    if canonical == "memory":  # no host: memory://a and memory:///a are the same file, "/a"
        implementation = _implementation(protocol)
        path = str(implementation._strip_protocol(url)) if implementation is not None else "/" + rest.strip("/")
    else:
        # The host (a name node, a bucket) is part of what is opened: keep it in the compared path.
        path = rest
    _segments_are_plain(path, dots_allowed=False)
    return StoragePath(canonical, path, scheme=protocol)


def resolve_root(root: str) -> StoragePath | None:
    """A configured root as a StoragePath (a bare `s3://` covers the protocol); None, logged, if it is malformed."""
    text = root.strip()
    try:
        if text.endswith("://") and "/" not in text[: -len("://")]:
            protocol = text[: -len("://")]
            if not _PROTOCOL.match(protocol):
                raise StorageURLError(f"protocol {protocol!r} must be lower case")
            return StoragePath(canonical_protocol(protocol), "", whole_protocol=True)
        return resolve(text)
    except StorageURLError as exc:
        log.warning("storage root %r admits nothing: %s", root, exc)
        return None


def under(target: StoragePath, roots: Iterable[str]) -> bool:
    """Whether the (resolved) target lies under one of the roots, comparing whole path segments."""
    for root in (resolve_root(text) for text in roots):
        if root is None or root.protocol != target.protocol:
            continue
        if root.whole_protocol:
            return True
        base = root.path if root.local else posixpath.join("/", root.path)
        path = target.path if target.local else posixpath.join("/", target.path)
        if path == base or path.startswith(base.rstrip("/") + "/"):
            return True
    return False


def check_under(url: str, roots: Iterable[str], *, setting: str, what: str = "path") -> StoragePath:
    """The resolved URL, mapped (map_uri), when it lies under the roots; OutsideRoots naming the setting, StorageURLError if malformed."""
    mapped = map_uri(url)
    target = resolve(mapped)
    if not under(target, roots):
        raise OutsideRoots(f"{what} {url[:200]!r}{mapped_note(url, mapped)} is outside the allowed roots ({setting})")
    return target
