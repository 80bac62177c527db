r"""Ingest manifests: Merritt's checkm 0.7 dialect parsed into frozen specs (pure: no Django).

The format
==========
UTF-8 text (a leading byte-order mark is ignored; NUL and non-UTF-8 bytes are refused), split
into lines on LF (a CR before it is ignored). Line numbers count from 1.

- Line 1 is exactly ``#%checkm_0.7`` (surrounding spaces aside).
- ``#%eof`` is the last non-blank line. Without it the manifest is truncated (refused); any
  non-blank line after it is refused too.
- Blank lines are ignored; lines starting ``#`` but not ``#%`` are comments.
- Lines starting ``#%`` are headers, ``#%name | value | ...``. Each is recorded in
  ``Manifest.headers``: the lower-case name maps to one string per occurrence, the cells after
  the name stripped and joined by `` | ``. Two are interpreted, each at most once:

  ``#%fields | field | ...`` names the columns; required before the first data row. Names are
  case-insensitive; unknown or repeated names are refused, and ``nfo:fileUrl`` is required.
  ``#%profile | URL`` gives the manifest kind by the URL's last path segment:
  ``mrt-ingest-manifest`` (object-manifest), ``mrt-batch-manifest`` (manifest-of-manifests),
  ``mrt-container-batch-manifest`` (container-manifest); any other profile is refused. A kind
  named by the caller and a different profile is an error; with neither, the kind is unknown
  (an error). ``#%prefix`` and other headers are recorded, not interpreted.
- Every other line is a data row: split on ``|`` (there is no escape: write ``%7C`` in URLs),
  each cell stripped. More cells than fields is an error; fewer are padded with empty cells.
  At least one data row is required.

Fields (empty cell = not given):

========================  ====================================================================
``nfo:fileUrl``           required. An absolute URL, or a reference resolved against the
                          manifest's own URL (``base_url``) by RFC 3986 5.2 for any scheme;
                          ``memory://dir/x`` is read as fsspec does (``dir`` is a directory,
                          not a host). Dot segments are removed.
``nfo:hashAlgorithm``     md5, sha1, sha256, sha512; any case, ``SHA-256`` too. Given with
``nfo:hashValue``         its value or not at all; the value is hex of 32/40/64/128 digits.
``nfo:fileSize``          a non-negative decimal integer (at most 20 digits).
``nfo:fileLastModified``  accepted, not interpreted.
``nfo:fileName``          the path inside the object; default: the last segment of the URL's
                          path, percent-decoded. A safe relative path: '/'-separated, no empty,
                          ``.`` or ``..`` segment, no leading '/', backslash, control
                          character or line separator.
``mrt:mimeType``          kept as written.
``mrt:primaryIdentifier`` the object's identifiers (``localIdentifier``: several, separated by
``mrt:localIdentifier``   ``;``) and ERC who/what/when (``creator``, ``title``, ``date``).
``mrt:creator`` ...       In an object manifest, the rows naming one of them must agree.
========================  ====================================================================

Kinds: an *object-manifest* lists the files of one object (one ObjectSpec, file names unique
and no file inside another); a *manifest-of-manifests* names one object manifest per row (one
ObjectSpec per row with ``manifest_url`` and no files); a *container-manifest* names one zip
or tar per row (one ObjectSpec per row, its container as the only file, ``container=True``).

Limits: ``max_bytes`` (default 16 MiB of UTF-8) and ``max_rows`` data rows (default 1,000,000).
Every refusal is a ManifestError whose one-line message names the line: ``line 7: ...``.

Example (the columns Merritt's object manifests use; ``loc001`` is the object's local id):

>>> manifest = parse_manifest('''#%checkm_0.7
... #%profile | http://uc3.cdlib.org/registry/ingest/manifest/mrt-ingest-manifest
... #%prefix | mrt: | http://merritt.cdlib.org/terms#
... #%prefix | nfo: | http://www.semanticdesktop.org/ontologies/2007/03/22/nfo#
... #%fields | nfo:fileUrl | nfo:hashAlgorithm | nfo:hashValue | nfo:fileSize | nfo:fileName | mrt:primaryIdentifier | mrt:localIdentifier
... file:///data/a.txt | md5 | 0cc175b9c0f1b6a831c399e269772661 | 1 | a.txt | | loc001
... # a comment; the next row's URL is relative, its name the URL's last segment, decoded
... sub/b%20c.txt | SHA-256 | CA978112CA1BBDCAFAC231B39A23DC4DA786EFF8147C4E72B9807785AFEE48BB
... #%eof
... ''', base_url="file:///data/manifest.checkm")
>>> manifest.kind, manifest.objects[0].local_ids, manifest.objects[0].primary_id
('object-manifest', ('loc001',), '')
>>> for spec in manifest.objects[0].files:
...     print(spec.url, repr(spec.name), spec.size, spec.digest.algorithm, spec.digest.value[:8])
file:///data/a.txt 'a.txt' 1 md5 0cc175b9
file:///data/sub/b%20c.txt 'b c.txt' None sha256 ca978112
>>> manifest.headers["prefix"]
('mrt: | http://merritt.cdlib.org/terms#', 'nfo: | http://www.semanticdesktop.org/ontologies/2007/03/22/nfo#')
>>> try:
...     parse_manifest("#%checkm_0.7\n#%fields | nfo:fileUrl\nfile:///a\n", kind="object-manifest")
... except ManifestError as error:
...     print(error)
line 3: the manifest is truncated: its last line is not '#%eof'
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol
from urllib.parse import unquote

OBJECT_MANIFEST = "object-manifest"
BATCH_MANIFEST = "manifest-of-manifests"
CONTAINER_MANIFEST = "container-manifest"
MANIFEST_KINDS = (OBJECT_MANIFEST, BATCH_MANIFEST, CONTAINER_MANIFEST)
PROFILE_BASE = "http://uc3.cdlib.org/registry/ingest/manifest/"
PROFILES: Mapping[str, str] = MappingProxyType({
    "mrt-ingest-manifest": OBJECT_MANIFEST,
    "mrt-batch-manifest": BATCH_MANIFEST,
    "mrt-container-batch-manifest": CONTAINER_MANIFEST,
})
SUPPORTED_DIGESTS: Mapping[str, int] = MappingProxyType({"md5": 32, "sha1": 40, "sha256": 64, "sha512": 128})
FIELDS = (
    "nfo:fileUrl", "nfo:hashAlgorithm", "nfo:hashValue", "nfo:fileSize", "nfo:fileLastModified",
    "nfo:fileName", "mrt:mimeType", "mrt:primaryIdentifier", "mrt:localIdentifier",
    "mrt:creator", "mrt:title", "mrt:date",
)
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_ROWS = 1_000_000
PREFIXES = ("mrt: | http://merritt.cdlib.org/terms#", "nfo: | http://www.semanticdesktop.org/ontologies/2007/03/22/nfo#")

_FIELD_NAMES = {name.lower(): name for name in FIELDS}
_ALGORITHMS = {name: name for name in SUPPORTED_DIGESTS} | {"sha-1": "sha1", "sha-256": "sha256", "sha-512": "sha512"}
_HEX = {digits: re.compile(f"[0-9a-fA-F]{{{digits}}}") for digits in SUPPORTED_DIGESTS.values()}
_SIZE = re.compile(r"[0-9]{1,20}")
_URL = re.compile(r"(?:([A-Za-z][A-Za-z0-9+.-]*):)?(?://([^/?#]*))?([^?#]*)(\?[^#]*)?(#.*)?", re.DOTALL)
_UNSAFE_NAME = re.compile(r"[\x00-\x1f\x7f-\x9f\\\u2028\u2029]")  # controls, backslash, line separators
_OBJECT_COLUMNS = (
    "nfo:fileUrl", "nfo:hashAlgorithm", "nfo:hashValue", "nfo:fileSize", "nfo:fileName", "mrt:mimeType",
    "mrt:primaryIdentifier", "mrt:localIdentifier", "mrt:creator", "mrt:title", "mrt:date",
)
_BATCH_COLUMNS = (
    "nfo:fileUrl", "nfo:hashAlgorithm", "nfo:hashValue", "nfo:fileSize",
    "mrt:primaryIdentifier", "mrt:localIdentifier", "mrt:creator", "mrt:title", "mrt:date",
)


class ManifestError(ValueError):
    """A manifest is refused: the one-line message names the line (`line 7: reason`) when there is one."""

    def __init__(self, message: str, *, line: int | None = None) -> None:
        self.reason = message
        self.line = line
        super().__init__(message if line is None else f"line {line}: {message}")


class Hasher(Protocol):
    """What `hasher` returns: a hashlib object."""

    @property
    def name(self) -> str: ...
    def update(self, data: bytes, /) -> None: ...
    def digest(self) -> bytes: ...
    def hexdigest(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Digest:
    """A fixity value; the algorithm is a SUPPORTED_DIGESTS name and the value lower-case hex of its length."""

    algorithm: str
    value: str

    def __post_init__(self) -> None:
        digits = SUPPORTED_DIGESTS.get(self.algorithm)
        if digits is None or not _HEX[digits].fullmatch(self.value) or self.value != self.value.lower():
            raise ManifestError(f"not a normalized digest: {_q(self.algorithm)} {_q(self.value)}")

    @classmethod
    def of(cls, algorithm: str, value: str) -> Digest:
        """A Digest from any accepted spelling (`SHA-256`, upper-case hex); ManifestError otherwise."""
        return _digest(algorithm.strip(), value.strip(), None)


@dataclass(frozen=True, slots=True)
class FileSpec:
    """One file to fetch: its absolute URL, its safe relative name inside the object, optional size and digest."""

    url: str
    name: str
    size: int | None = None
    digest: Digest | None = None
    mime_type: str = ""


@dataclass(frozen=True, slots=True)
class ObjectSpec:
    """One object of a batch: identifiers, ERC metadata and its files, its manifest, or its container."""

    local_ids: tuple[str, ...] = ()
    primary_id: str = ""
    files: tuple[FileSpec, ...] = ()
    manifest_url: str = ""
    container: bool = False
    title: str = ""
    creator: str = ""
    date: str = ""
    manifest_digest: Digest | None = None  # a manifest-of-manifests row's digest and size of
    manifest_size: int | None = None  # the object manifest, for the job that reads it


@dataclass(frozen=True, slots=True)
class Manifest:
    """A parsed manifest: its kind, its objects (one for an object manifest) and its recorded headers."""

    kind: str
    objects: tuple[ObjectSpec, ...]
    headers: dict[str, tuple[str, ...]] = field(default_factory=dict, hash=False)


@dataclass(frozen=True, slots=True)
class _Row:
    """A data row read, before its kind says what it describes."""

    line: int
    file: FileSpec
    primary_id: str
    local_ids: tuple[str, ...]
    title: str
    creator: str
    date: str


_OBJECT_LEVEL = (
    ("primary_id", "primaryIdentifier"), ("local_ids", "localIdentifier"),
    ("title", "title"), ("creator", "creator"), ("date", "date"),
)
_UrlParts = tuple[str | None, str | None, str, str | None, str | None, bool]


def normalize_algorithm(algorithm: str) -> str:
    """The SUPPORTED_DIGESTS name for an accepted spelling (`SHA-256` -> `sha256`); ManifestError otherwise."""
    name = _ALGORITHMS.get(algorithm.strip().lower())
    if name is None:
        raise ManifestError(f"hashAlgorithm {_q(algorithm)} is not supported (md5, sha1, sha256, sha512)")
    return name


def hasher(algorithm: str) -> Hasher:
    """A fresh hashlib object for a supported algorithm (fixity, not security: allowed under FIPS too)."""
    return hashlib.new(normalize_algorithm(algorithm), usedforsecurity=False)


def resolve_url(reference: str, base: str = "") -> str:
    """`reference` made absolute against `base` (RFC 3986 5.2, any scheme, fsspec's memory://); ManifestError if it cannot be."""
    return _resolve(reference, _base_parts(base), None)[0]


def parse_manifest(
    data: bytes | str,
    *,
    base_url: str = "",
    kind: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_rows: int = DEFAULT_MAX_ROWS,
) -> Manifest:
    """A manifest read (format in the module docstring): relative URLs resolved against `base_url`; ManifestError if refused."""
    if kind is not None and kind not in MANIFEST_KINDS:
        raise ManifestError(f"unknown manifest kind {_q(kind)} (supported: {', '.join(MANIFEST_KINDS)})")
    lines = _decode(data, max_bytes).split("\n")
    if lines[0].strip() != "#%checkm_0.7":
        raise ManifestError(f"the first line must be '#%checkm_0.7', not {_q(lines[0].strip())}", line=1)
    last = len(lines)
    while last > 1 and not lines[last - 1].strip():
        last -= 1
    if lines[last - 1].strip() != "#%eof":
        eof = next((number for number in range(1, last) if lines[number - 1].strip() == "#%eof"), None)
        if eof is not None:
            after = next(number for number in range(eof + 1, last + 1) if lines[number - 1].strip())
            raise ManifestError(f"text after '#%eof' on line {eof}", line=after)
        raise ManifestError("the manifest is truncated: its last line is not '#%eof'", line=last)
    base = _base_parts(base_url)
    headers: dict[str, list[str]] = {}
    columns: tuple[str, ...] | None = None
    profile_kind: str | None = None
    rows: list[_Row] = []
    for number in range(2, last):
        text = lines[number - 1].strip()
        if not text:
            continue
        if text[0] == "#":
            if text.startswith("#%"):
                name, _, rest = text[2:].partition("|")
                name = name.strip().lower()
                if name == "eof":
                    raise ManifestError("'#%eof' is not the last line", line=number)
                if name == "fields":
                    if columns is not None:
                        raise ManifestError("a second '#%fields' header", line=number)
                    columns = _columns(rest, number)
                elif name == "profile":
                    if profile_kind is not None:
                        raise ManifestError("a second '#%profile' header", line=number)
                    profile_kind = _profile_kind(rest.split("|")[0].strip(), kind, number)
                elif not name:
                    raise ManifestError("a header without a name", line=number)
                headers.setdefault(name, []).append(" | ".join(cell.strip() for cell in rest.split("|")) if rest else "")
            continue
        if columns is None:
            raise ManifestError("a data row before the '#%fields' header", line=number)
        if len(rows) >= max_rows:
            raise ManifestError(f"more than {max_rows} data rows", line=number)
        cells = text.split("|")
        if len(cells) > len(columns):
            raise ManifestError(f"{len(cells)} cells, but '#%fields' names {len(columns)}", line=number)
        rows.append(_row(dict(zip(columns, (cell.strip() for cell in cells), strict=False)), base, number))
    kind = kind or profile_kind
    if kind is None:
        raise ManifestError("no '#%profile' header and no manifest kind given")
    if not rows:
        raise ManifestError("the manifest has no data rows", line=last)
    return Manifest(kind, _objects(kind, rows), {name: tuple(values) for name, values in headers.items()})


def write_manifest(kind: str, objects: Iterable[ObjectSpec]) -> str:
    """A manifest of this kind that parses back to these objects (an object manifest takes exactly one)."""
    specs = tuple(objects)
    rows: list[tuple[str, ...]] = []
    columns: tuple[str, ...] = _OBJECT_COLUMNS
    if kind == OBJECT_MANIFEST:
        if len(specs) != 1:
            raise ManifestError(f"an object manifest describes one object, not {len(specs)}")
        for index, spec in enumerate(specs[0].files):
            rows.append(_file_cells(spec) + (_object_cells(specs[0]) if index == 0 else ()))
    elif kind == CONTAINER_MANIFEST:
        for obj in specs:
            if len(obj.files) != 1:
                raise ManifestError(f"a container manifest row is one container, not {len(obj.files)} files")
            rows.append(_file_cells(obj.files[0]) + _object_cells(obj))
    elif kind == BATCH_MANIFEST:
        for obj in specs:
            rows.append(_manifest_cells(obj) + _object_cells(obj))
        columns = _BATCH_COLUMNS
    else:
        raise ManifestError(f"unknown manifest kind {_q(kind)} (supported: {', '.join(MANIFEST_KINDS)})")
    if not rows:
        raise ManifestError("a manifest lists at least one row")
    profile = next(name for name, value in PROFILES.items() if value == kind)
    lines = ["#%checkm_0.7", f"#%profile | {PROFILE_BASE}{profile}"]
    lines += [f"#%prefix | {prefix}" for prefix in PREFIXES]
    lines.append("#%fields | " + " | ".join(columns))
    for cells in rows:
        for column, cell in zip(columns, cells, strict=False):
            _check_cell(column, cell)
        width = len(cells)
        while width > 1 and not cells[width - 1]:  # trailing empty cells are implied
            width -= 1
        lines.append(" | ".join(cells[:width]))
    lines.append("#%eof")
    return "\n".join(lines) + "\n"


def write_object_manifest(
    files: Iterable[FileSpec],
    *,
    local_ids: str | Iterable[str] = (),
    primary_id: str = "",
    title: str = "",
    creator: str = "",
    date: str = "",
) -> str:
    """An object manifest of these files, ids and ERC metadata on its first row (`local_ids` may be 'a; b')."""
    ids = [local_id.strip() for local_id in local_ids.split(";")] if isinstance(local_ids, str) else local_ids
    spec = ObjectSpec(
        tuple(local_id for local_id in ids if local_id), primary_id, tuple(files), title=title, creator=creator, date=date
    )
    return write_manifest(OBJECT_MANIFEST, [spec])


def write_batch_manifest(objects: Iterable[ObjectSpec]) -> str:
    """A manifest-of-manifests: one row per object, its `manifest_url` (and optional digest and size) and ids."""
    return write_manifest(BATCH_MANIFEST, objects)


def write_container_manifest(objects: Iterable[ObjectSpec]) -> str:
    """A container manifest: one row per object, its single file the container."""
    return write_manifest(CONTAINER_MANIFEST, objects)


def _q(value: str) -> str:
    """A value quoted for a one-line message, long values shortened."""
    return repr(value if len(value) <= 80 else value[:77] + "...")


def _decode(data: bytes | str, max_bytes: int) -> str:
    """The text of a manifest within the size limit, without NUL or a byte-order mark."""
    if isinstance(data, str):
        if len(data) > max_bytes:  # every character is at least one byte: no need to encode
            raise ManifestError(f"the manifest is larger than {max_bytes} bytes")
        try:
            size = len(data.encode("utf-8"))
        except UnicodeEncodeError as error:
            raise ManifestError("text that is not valid Unicode", line=data.count("\n", 0, error.start) + 1) from None
        if size > max_bytes:
            raise ManifestError(f"the manifest is {size} bytes, more than {max_bytes}")
        text = data
    else:
        if len(data) > max_bytes:
            raise ManifestError(f"the manifest is {len(data)} bytes, more than {max_bytes}")
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as error:
            line = data.count(b"\n", 0, error.start) + 1
            raise ManifestError(f"bytes that are not UTF-8 (0x{data[error.start]:02x})", line=line) from None
    nul = text.find("\x00")
    if nul >= 0:
        raise ManifestError("a NUL character", line=text.count("\n", 0, nul) + 1)
    return text[1:] if text.startswith("\ufeff") else text


def _columns(rest: str, line: int) -> tuple[str, ...]:
    """The canonical field names of a `#%fields` header."""
    cells = [cell.strip() for cell in rest.split("|")] if rest.strip() else []
    unknown = [cell for cell in cells if cell.lower() not in _FIELD_NAMES]
    if unknown:
        raise ManifestError(f"unknown fields {', '.join(map(_q, unknown))} in '#%fields'", line=line)
    columns = tuple(_FIELD_NAMES[cell.lower()] for cell in cells)
    repeated = sorted({name for name in columns if columns.count(name) > 1})
    if repeated:
        raise ManifestError(f"fields named twice in '#%fields': {', '.join(repeated)}", line=line)
    if "nfo:fileUrl" not in columns:
        raise ManifestError("'#%fields' does not name nfo:fileUrl", line=line)
    return columns


def _profile_kind(profile: str, expected: str | None, line: int) -> str:
    """The kind a `#%profile` names, which must be the expected one when there is one."""
    found = PROFILES.get(profile.rstrip("/").rsplit("/", 1)[-1])
    if found is None:
        raise ManifestError(f"profile {_q(profile)} is not one of {', '.join(PROFILES)}", line=line)
    if expected is not None and found != expected:
        raise ManifestError(f"'#%profile' makes this a {found}, but a {expected} is expected", line=line)
    return found


def _row(values: dict[str, str], base: _UrlParts | None, line: int) -> _Row:
    """One data row's values checked and typed."""
    reference = values.get("nfo:fileUrl", "")
    if not reference:
        raise ManifestError("fileUrl is empty", line=line)
    url, path = _resolve(reference, base, line)
    algorithm, value = values.get("nfo:hashAlgorithm", ""), values.get("nfo:hashValue", "")
    digest = _digest(algorithm, value, line) if algorithm or value else None
    size: int | None = None
    if size_text := values.get("nfo:fileSize", ""):
        if not _SIZE.fullmatch(size_text):
            raise ManifestError(f"fileSize {_q(size_text)} is not a non-negative integer", line=line)
        size = int(size_text)
    name = values.get("nfo:fileName", "")
    if not name:
        try:
            name = unquote(path[path.rfind("/") + 1:], errors="strict")
        except UnicodeDecodeError:
            raise ManifestError(f"fileUrl {_q(url)} ends in a name that is not UTF-8", line=line) from None
        if not name:
            raise ManifestError(f"fileUrl {_q(url)} names no file: give its nfo:fileName", line=line)
    if problem := _name_problem(name):
        raise ManifestError(f"fileName {_q(name)} is not a safe relative path ({problem})", line=line)
    local_ids = tuple(dict.fromkeys(part.strip() for part in values.get("mrt:localIdentifier", "").split(";")))
    return _Row(
        line,
        FileSpec(url, name, size, digest, values.get("mrt:mimeType", "")),
        values.get("mrt:primaryIdentifier", ""),
        tuple(local_id for local_id in local_ids if local_id),
        values.get("mrt:title", ""),
        values.get("mrt:creator", ""),
        values.get("mrt:date", ""),
    )


def _digest(algorithm: str, value: str, line: int | None) -> Digest:
    """A Digest from a hashAlgorithm and hashValue cell, both required."""
    if not algorithm:
        raise ManifestError(f"hashValue {_q(value)} has no hashAlgorithm", line=line)
    if not value:
        raise ManifestError(f"hashAlgorithm {_q(algorithm)} has no hashValue", line=line)
    name = _ALGORITHMS.get(algorithm.lower())
    if name is None:
        raise ManifestError(f"hashAlgorithm {_q(algorithm)} is not supported (md5, sha1, sha256, sha512)", line=line)
    digits = SUPPORTED_DIGESTS[name]
    if not _HEX[digits].fullmatch(value):
        raise ManifestError(f"hashValue {_q(value)} is not a {name} digest ({digits} hex digits)", line=line)
    return Digest(name, value.lower())


def _name_problem(name: str) -> str:
    """Why a file name is not a safe relative path, or '' when it is."""
    if not name:
        return "empty"
    if name[0] == "/":
        return "absolute"
    if _UNSAFE_NAME.search(name):
        return "a backslash, control character or line separator"
    for segment in name.split("/"):
        if segment in ("", ".", ".."):
            return f"a {segment!r} segment" if segment else "an empty segment"
    return ""


def _split_url(url: str) -> _UrlParts:
    """Scheme, authority, path, ?query, #fragment (None when absent), and whether a memory:// host was folded into the path."""
    match = _URL.fullmatch(url)
    if match is None:  # the pattern matches every string; kept for the type checker
        raise ManifestError(f"unreadable URL {_q(url)}")
    scheme, authority, path, query, fragment = match.groups()
    if authority and scheme is not None and scheme.lower() == "memory":
        return scheme, "", f"/{authority}{path}", query, fragment, True
    return scheme, authority, path or "", query, fragment, False


def _base_parts(base_url: str) -> _UrlParts | None:
    """The parts of a manifest's own URL (a bare absolute path is a file:// URL), None when not given."""
    if not base_url:
        return None
    parts = _split_url(f"file://{base_url}" if base_url.startswith("/") else base_url)
    if parts[0] is None:
        raise ManifestError(f"the manifest's URL {_q(base_url)} is not absolute")
    return parts


def _resolve(reference: str, base: _UrlParts | None, line: int | None) -> tuple[str, str]:
    """An absolute URL for a reference (RFC 3986 5.2.2) and its path (with a memory:// host folded in)."""
    scheme, authority, path, query, fragment, folded = _split_url(reference)
    if scheme is not None:
        path = _remove_dots(path)
    elif base is None:
        raise ManifestError(f"relative fileUrl {_q(reference)} but no manifest URL to resolve it against", line=line)
    elif authority is not None:
        scheme, path = base[0], _remove_dots(path)
    else:
        scheme, authority, base_path, base_query, _, folded = base
        if not path:
            path, query = base_path, base_query if query is None else query
        elif path[0] == "/":
            path = _remove_dots(path)
        elif authority is not None and not base_path:
            path = _remove_dots("/" + path)
        else:
            path = _remove_dots(base_path[: base_path.rfind("/") + 1] + path)
    tail = (query or "") + (fragment or "")
    if folded:  # memory://dir/x keeps its style: the first path segment is written where a host would be
        return f"{scheme}://{path.lstrip('/')}{tail}", path
    return f"{scheme}:{'' if authority is None else '//' + authority}{path}{tail}", path


def _remove_dots(path: str) -> str:
    """RFC 3986 5.2.4: `.` and `..` segments removed."""
    if "." not in path:
        return path
    absolute = path.startswith("/")
    segments = path[1:].split("/") if absolute else path.split("/")
    out: list[str] = []
    for index, segment in enumerate(segments):
        if segment in (".", ".."):
            if segment == ".." and out:
                out.pop()
            if index == len(segments) - 1:
                out.append("")
        else:
            out.append(segment)
    return ("/" if absolute else "") + "/".join(out)


def _objects(kind: str, rows: list[_Row]) -> tuple[ObjectSpec, ...]:
    """The objects the rows describe in a manifest of this kind."""
    if kind == BATCH_MANIFEST:
        return tuple(
            ObjectSpec(
                row.local_ids, row.primary_id, (), manifest_url=row.file.url, title=row.title, creator=row.creator,
                date=row.date, manifest_digest=row.file.digest, manifest_size=row.file.size,
            )
            for row in rows
        )
    if kind == CONTAINER_MANIFEST:
        return tuple(
            ObjectSpec(
                row.local_ids, row.primary_id, (row.file,), container=True, title=row.title, creator=row.creator,
                date=row.date,
            )
            for row in rows
        )
    return (_one_object(rows),)


def _one_object(rows: list[_Row]) -> ObjectSpec:
    """An object manifest's single object: rows naming its identifiers or metadata agree, file names do not clash."""
    first: dict[str, _Row] = {}  # the row that first named each object-level value
    for row in rows:
        for attribute, label in _OBJECT_LEVEL:
            value = getattr(row, attribute)
            if not value:
                continue
            named = first.setdefault(attribute, row)
            other = getattr(named, attribute)
            if value != other and not (attribute == "local_ids" and set(value) == set(other)):
                shown, earlier = ("; ".join(value), "; ".join(other)) if attribute == "local_ids" else (value, other)
                raise ManifestError(
                    f"{label} {_q(shown)} differs from {_q(earlier)} on line {named.line} "
                    "(an object manifest describes one object)",
                    line=row.line,
                )
    names: dict[str, int] = {}
    for row in rows:
        seen = names.setdefault(row.file.name, row.line)
        if seen != row.line:
            raise ManifestError(f"fileName {_q(row.file.name)} repeats line {seen}", line=row.line)
    for row in rows:
        name = row.file.name
        slash = name.find("/")
        while slash >= 0:
            if name[:slash] in names:
                raise ManifestError(
                    f"fileName {_q(name)} is inside {_q(name[:slash])}, a file on line {names[name[:slash]]}",
                    line=row.line,
                )
            slash = name.find("/", slash + 1)
    one = {attribute: getattr(row, attribute) for attribute, row in first.items()}
    return ObjectSpec(
        one.get("local_ids", ()), one.get("primary_id", ""), tuple(row.file for row in rows),
        title=one.get("title", ""), creator=one.get("creator", ""), date=one.get("date", ""),
    )


def _file_cells(spec: FileSpec) -> tuple[str, ...]:
    """fileUrl, hashAlgorithm, hashValue, fileSize, fileName, mimeType cells of a file."""
    if spec.size is not None and spec.size < 0:
        raise ManifestError(f"cannot write fileSize {spec.size}: sizes are not negative")
    if problem := _name_problem(spec.name):
        raise ManifestError(f"cannot write fileName {_q(spec.name)}: not a safe relative path ({problem})")
    digest = spec.digest
    size = "" if spec.size is None else str(spec.size)
    return (
        spec.url, digest.algorithm if digest else "", digest.value if digest else "", size, spec.name, spec.mime_type,
    )


def _manifest_cells(spec: ObjectSpec) -> tuple[str, ...]:
    """fileUrl, hashAlgorithm, hashValue, fileSize cells of a manifest-of-manifests row."""
    if spec.manifest_size is not None and spec.manifest_size < 0:
        raise ManifestError(f"cannot write fileSize {spec.manifest_size}: sizes are not negative")
    digest = spec.manifest_digest
    size = "" if spec.manifest_size is None else str(spec.manifest_size)
    return (spec.manifest_url, digest.algorithm if digest else "", digest.value if digest else "", size)


def _object_cells(spec: ObjectSpec) -> tuple[str, ...]:
    """primaryIdentifier, localIdentifier, creator, title, date cells of an object."""
    for local_id in spec.local_ids:
        if ";" in local_id or not local_id:
            raise ManifestError(f"cannot write localIdentifier {_q(local_id)}: empty or containing ';'")
    return (spec.primary_id, "; ".join(spec.local_ids), spec.creator, spec.title, spec.date)


def _check_cell(column: str, cell: str) -> None:
    """A value the format can carry: no '|', NUL or LF, no surrounding spaces (CR too), a URL not read as a comment."""
    if "|" in cell or "\n" in cell or "\x00" in cell or cell != cell.strip():
        raise ManifestError(f"cannot write {column} {_q(cell)}: '|', NUL, line breaks and surrounding spaces do not survive")
    if column == "nfo:fileUrl" and (not cell or cell[0] == "#"):
        raise ManifestError(f"cannot write fileUrl {_q(cell)}: empty or starting with '#'")
