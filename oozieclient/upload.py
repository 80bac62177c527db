"""`oozie job -run|-submit|-dryrun -upload`: the application on this machine's disk sent with the submission.

Apache Oozie reads applications on its own storage only. This service also takes them from
the client (`POST /oozie/v2/upload`, ADR 0036): the directory the application path names (after
`${...}` resolution, as `local_application_hint` reads it; a path naming a file sends the
directory holding it) is packed as a tar.gz of its regular files and directories, sent, and
unpacked by the server under its application roots; the application path is then the
`file://` path the server answers (plus the file's name), and so is every other property whose
value lies inside that directory (`workflowAppUri` of a coordinator kept beside its workflow).
Paths written inside the XML files are not rewritten: name them through properties.

Before sending, the server's limits (`GET /upload`) are checked here, so an application that
is too large is refused by name without sending it. Symbolic links to files are sent as the
files they point to; links to directories and special files are refused (nothing is sent).
"""

from __future__ import annotations

import io
import os
import re
import stat
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from oozieclient.configuration import application, local_path
from oozieclient.http import OozieClient, OozieClientError
from oozieclient.properties import expand

ARCHIVE_TYPE = "application/gzip"
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Packed:
    """An application directory as a tar.gz: the bytes, how many files and how many bytes of contents."""

    data: bytes
    files: int
    size: int


class _CappedBuffer(io.BytesIO):
    """Bytes in memory, refusing to grow past `limit` (the server's maxBytes): a large tree stops early."""

    def __init__(self, limit: int | None, directory: Path) -> None:
        super().__init__()
        self.limit = limit
        self.directory = directory

    def write(self, data: Any) -> int:
        written = super().write(data)
        if self.limit is not None and self.tell() > self.limit:
            raise OozieClientError("E0000", f"-upload: {self.directory} packs to more than {self.limit} bytes, the "
                                            "most this server takes (its OOZIE_UPLOAD_MAX_BYTES)")
        return written


def _limit(limits: Mapping[str, Any], key: str) -> int | None:
    value = limits.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def pack(directory: Path, limits: Mapping[str, Any]) -> Packed:
    """The directory's files and subdirectories as a tar.gz (relative names, modes 0644/0755, no owners) within `limits`."""
    max_entries, max_size = _limit(limits, "maxEntries"), _limit(limits, "maxUnpackedBytes")
    buffer = _CappedBuffer(_limit(limits, "maxBytes"), directory)
    entries = files = size = 0
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for top, dirs, names in os.walk(directory, followlinks=False):
            dirs.sort()
            base = Path(top)
            for name in [*sorted(dirs), *sorted(names)]:
                path = base / name
                relative = path.relative_to(directory).as_posix()
                info = path.stat()  # a link's target: what is sent
                if stat.S_ISDIR(info.st_mode) and path.is_symlink():
                    raise OozieClientError("E0000", f"-upload: {path} is a symbolic link to a directory: replace it with "
                                                    "the directory, or leave it out of the application")
                entries += 1
                if max_entries is not None and entries > max_entries:
                    raise OozieClientError("E0000", f"-upload: {directory} holds more than {max_entries} files and "
                                                    "directories, the most this server takes")
                member = tarfile.TarInfo(relative)
                member.mtime = int(info.st_mtime)
                if stat.S_ISDIR(info.st_mode):
                    member.type, member.mode = tarfile.DIRTYPE, 0o755
                    tar.addfile(member)
                    continue
                if not stat.S_ISREG(info.st_mode):
                    raise OozieClientError("E0000", f"-upload: {path} is not a regular file or a directory")
                size += info.st_size
                if max_size is not None and size > max_size:
                    raise OozieClientError("E0000", f"-upload: the files of {directory} hold more than {max_size} "
                                                    "bytes, the most this server takes")
                member.size, member.mode = info.st_size, 0o755 if info.st_mode & stat.S_IXUSR else 0o644
                with path.open("rb") as contents:
                    tar.addfile(member, contents)
                files += 1
    if not files:
        raise OozieClientError("E0000", f"-upload: {directory} holds no files")
    return Packed(buffer.getvalue(), files, size)


def upload_name(directory: Path) -> str:
    """The directory's name as the server takes it (letters, digits, `.`, `_`, `-`; at most 64), else `app`."""
    return _UNSAFE_NAME.sub("-", directory.name).lstrip("._-")[:64] or "app"


def rewritten(configuration: Mapping[str, str], directory: Path, uploaded: str) -> dict[str, str]:
    """Every property whose value (resolved) is an absolute local path inside `directory`, as the same place under `uploaded`."""
    root = os.path.realpath(directory)
    result = dict(configuration)
    for name, value in configuration.items():
        path = local_path(expand(value, configuration))
        if not path:
            continue
        real = os.path.realpath(path)
        if real == root:
            result[name] = uploaded
        elif real.startswith(root + os.sep):
            result[name] = uploaded + "/" + Path(os.path.relpath(real, root)).as_posix()
    return result


def upload_application(client: OozieClient, configuration: Mapping[str, str], err: TextIO) -> dict[str, str]:
    """Send the application the configuration names on this machine; the configuration naming the server's copy instead."""
    app = application(configuration)
    if app is None:
        raise OozieClientError("E0000", "-upload: the configuration names no application (oozie.wf.application.path, "
                                        "oozie.coord.application.path or oozie.bundle.application.path)")
    if not app.local:
        raise OozieClientError("E0000", f"-upload: {app.name} = {app.path} is not on this machine's disk (-upload sends "
                                        "a file:// or bare path); submit without -upload")
    local = Path(app.local).resolve()
    if not local.exists():
        raise OozieClientError("E0000", f"-upload: {app.name} = {app.path}: {local} does not exist on this machine")
    directory, file_name = (local, "") if local.is_dir() else (local.parent, local.name)
    answer = client.request("GET", "upload", allow=(404, 405))
    if answer.status in (404, 405):
        raise OozieClientError("E0000", "-upload: this Oozie server takes no uploads (an extension of this service; "
                                        "Apache Oozie has none): copy the application to the server's storage")
    packed = pack(directory, answer.json() or {})
    sent = client.request("POST", "upload", {"name": upload_name(directory)}, body=packed.data,
                          content_type=ARCHIVE_TYPE).json() or {}
    uploaded = sent.get("path") if isinstance(sent, dict) else None
    if not isinstance(uploaded, str) or not uploaded:
        raise OozieClientError("E0000", f"-upload: the server's answer names no path: {sent!r}")
    result = rewritten(configuration, directory, uploaded)
    result[app.name] = f"{uploaded}/{file_name}" if file_name else uploaded
    print(f"Uploaded {directory} ({packed.files} files, {packed.size} bytes): {app.name} = {result[app.name]}", file=err)
    return result
