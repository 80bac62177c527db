"""Unpacking an archive someone sent: a gzip-compressed tar, read as a stream, within limits, into a fresh directory.

An uploaded application (`POST /oozie/v2/upload`, ADR 0036) is written where the service reads
applications, with the service's rights, so what a caller can make it write is bounded and
named, checked while the bytes arrive (nothing unbounded is read into memory):

- the compressed body: at most `max_bytes` (`ArchiveTooLarge`: a 413);
- what it unpacks to: at most `max_unpacked_bytes` of file contents and `max_entries` entries
  (files and directories); the decompressed tar stream itself is bounded too, so a header that
  claims gigabytes (a pax record, a GNU long name) is refused before tarfile reads it whole;
- entries: regular files and directories only (symbolic and hard links, devices, FIFOs and
  sparse files are refused), named by relative paths without `..`, backslashes or control
  characters, each segment at most 255 bytes and the whole name at most 1,024; a name that
  appears twice is refused. Modes are not taken from the archive: 0644, 0755 when the owner may
  execute the file (shell scripts), 0755 for directories; owners and times are not kept.

Everything is written into a new directory (`tempfile.mkdtemp`, mode 0700) under `workdir`;
files are created with O_EXCL|O_NOFOLLOW. Any refusal removes that directory before the
error is raised: a refused archive leaves nothing behind. The caller moves the finished
directory into place with one rename (`place`), so readers never see half an upload.

No Django here: the limits come in as arguments (kernel, below every app).
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import tarfile
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol, cast

MAX_SEGMENT_BYTES = 255
MAX_NAME_BYTES = 1024
HEADER_ALLOWANCE = 4096  # per entry: its 512-byte header, a pax or GNU long-name record, padding to 512
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_COPY_CHUNK = 64 * 1024
_REFUSED_TYPES = {
    tarfile.SYMTYPE: "a symbolic link",
    tarfile.LNKTYPE: "a hard link",
    tarfile.CHRTYPE: "a character device",
    tarfile.BLKTYPE: "a block device",
    tarfile.FIFOTYPE: "a FIFO",
}


class ArchiveError(ValueError):
    """An archive refused: the message names the entry (when there is one) and the rule it breaks."""


class ArchiveTooLarge(ArchiveError):
    """The compressed body is over its limit."""


class Readable(Protocol):
    """What bytes come from: a request body, a file."""

    def read(self, size: int = -1, /) -> bytes: ...  # noqa: D102


@dataclass(frozen=True)
class Limits:
    """What one archive may hold."""

    max_bytes: int  # the compressed body
    max_unpacked_bytes: int  # the files' contents, summed
    max_entries: int  # files and directories


@dataclass(frozen=True)
class Unpacked:
    """A directory an archive was unpacked into, and what it holds."""

    path: Path
    files: int
    bytes: int
    compressed_bytes: int


class _Bounded:
    """A reader that counts what passes and raises `error` as soon as more than `limit` bytes have."""

    def __init__(self, source: Readable, limit: int, error: type[ArchiveError], what: str) -> None:
        self.source = source
        self.limit = limit
        self.error = error
        self.what = what
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        """Up to `size` bytes; never more than one byte past the limit is asked for."""
        room = self.limit - self.count + 1
        data = self.source.read(room if size is None or size < 0 else min(size, room))
        self.count += len(data)
        if self.count > self.limit:
            raise self.error(f"{self.what} is larger than {self.limit} bytes")
        return data


def entry_name(name: str) -> str:
    """The relative path an entry is written to ("" for the archive's top directory); ArchiveError if it is not a plain one."""
    if _CONTROL.search(name):
        raise ArchiveError(f"entry {name!r}: control characters in the name")
    if "\\" in name:
        raise ArchiveError(f"entry {name!r}: a backslash in the name")
    if name.startswith("/"):
        raise ArchiveError(f"entry {name!r}: an absolute path")
    segments = [segment for segment in name.split("/") if segment not in ("", ".")]
    if ".." in segments:
        raise ArchiveError(f"entry {name!r}: a '..' segment leads outside the archive")
    if len(name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
        raise ArchiveError(f"entry {name[:80]!r}...: the name is longer than {MAX_NAME_BYTES} bytes")
    if any(len(segment.encode("utf-8", "surrogateescape")) > MAX_SEGMENT_BYTES for segment in segments):
        raise ArchiveError(f"entry {name!r}: a path segment is longer than {MAX_SEGMENT_BYTES} bytes")
    return "/".join(segments)


def _kind(member: tarfile.TarInfo) -> str:
    """'dir' or 'file'; ArchiveError naming any other kind."""
    if member.isdir():
        return "dir"
    if member.issparse():
        raise ArchiveError(f"entry {member.name!r}: a sparse file")
    if member.isreg():
        return "file"
    kind = _REFUSED_TYPES.get(member.type, f"an entry of type {member.type!r}")
    raise ArchiveError(f"entry {member.name!r}: {kind} (only regular files and directories are accepted)")


def _create(root: Path, name: str, kind: str, mode: int) -> int | None:
    """The directory, or a new file (never through a link, never over another file) open for writing."""
    target = root.joinpath(*name.split("/"))
    try:
        if kind == "dir":
            target.mkdir(mode=0o755, parents=True, exist_ok=True)
            return None
        target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        return os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755 if mode & 0o100 else 0o644)
    except FileExistsError:
        raise ArchiveError(f"entry {name!r}: another entry is already there") from None
    except OSError as exc:
        raise ArchiveError(f"entry {name!r} cannot be written: {exc.strerror or exc}") from None


def _extract(stream: Readable, root: Path, limits: Limits) -> tuple[int, int]:
    """Every entry of the tar stream under `root`; (files, bytes)."""
    entries = files = total = 0
    seen: set[str] = set()
    with tarfile.open(fileobj=cast(IO[bytes], stream), mode="r|") as tar:
        for member in tar:
            kind = _kind(member)
            name = entry_name(member.name)
            if not name:
                if kind == "file":
                    raise ArchiveError(f"entry {member.name!r}: a file without a name")
                continue  # the archive's own top directory ("./")
            entries += 1
            if entries > limits.max_entries:
                raise ArchiveError(f"more than {limits.max_entries} entries")
            if kind == "file" and name in seen:
                raise ArchiveError(f"entry {name!r} appears twice")
            seen.add(name)
            if kind == "file":
                total += member.size
                if total > limits.max_unpacked_bytes:
                    raise ArchiveError(f"the files hold more than {limits.max_unpacked_bytes} bytes")
            descriptor = _create(root, name, kind, member.mode)
            if descriptor is None:
                continue
            with os.fdopen(descriptor, "wb") as out:
                contents = tar.extractfile(member)
                if contents is not None:  # always, for a regular file
                    shutil.copyfileobj(contents, out, _COPY_CHUNK)
            files += 1
    if not files:
        raise ArchiveError("the archive holds no files")
    return files, total


def unpack(source: Readable, workdir: Path, limits: Limits) -> Unpacked:
    """A gzip-compressed tar read from `source` into a new directory under `workdir`; nothing is left behind on a refusal."""
    workdir.mkdir(mode=0o755, parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=workdir))
    compressed = _Bounded(source, limits.max_bytes, ArchiveTooLarge, "the archive")
    stream_limit = limits.max_unpacked_bytes + (limits.max_entries + 2) * HEADER_ALLOWANCE + tarfile.RECORDSIZE
    try:
        with gzip.GzipFile(fileobj=cast(IO[bytes], compressed), mode="rb") as unzipped:
            tar_stream = _Bounded(unzipped, stream_limit, ArchiveError, "the unpacked archive")
            files, total = _extract(tar_stream, root, limits)
    except ArchiveError:
        shutil.rmtree(root, ignore_errors=True)
        raise
    except gzip.BadGzipFile:
        shutil.rmtree(root, ignore_errors=True)
        raise ArchiveError("not a gzip-compressed tar archive (tar.gz)") from None
    except (tarfile.TarError, zlib.error, EOFError) as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise ArchiveError(f"not a readable tar.gz archive: {exc or 'it ends too early'}") from None
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return Unpacked(root, files, total, compressed.count)


def place(unpacked: Unpacked, target: Path) -> Path:
    """Move an unpacked directory to `target` in one rename (same file system); the directory is removed if that fails."""
    try:
        target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        unpacked.path.chmod(0o755)  # mkdtemp made it 0700 while it was being written
        os.rename(unpacked.path, target)
    except OSError:
        shutil.rmtree(unpacked.path, ignore_errors=True)
        raise
    return target
