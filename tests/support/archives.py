"""tar.gz archives built in memory for the upload tests: well-formed ones, and every hostile kind the server refuses."""

from __future__ import annotations

import gzip
import io
import tarfile
from collections.abc import Callable

WORKFLOW = b"""<workflow-app xmlns="uri:oozie:workflow:0.2" name="uploaded-wf">
    <start to="end"/>
    <end name="end"/>
</workflow-app>
"""


def entry(name: str, data: bytes = b"", *, kind: bytes = tarfile.REGTYPE, link: str = "", mode: int = 0o644) -> tuple[tarfile.TarInfo, bytes]:
    """One member: a file with `data`, or another kind (DIRTYPE, SYMTYPE with `link` ...)."""
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.linkname = link
    info.size = len(data) if kind in (tarfile.REGTYPE, tarfile.AREGTYPE) else 0
    return info, data


def tar_gz(*entries: tuple[tarfile.TarInfo, bytes], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    """The members, in order, as a gzip-compressed tar."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=fmt) as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buffer.getvalue()


def application(*extra: tuple[tarfile.TarInfo, bytes]) -> bytes:
    """A workflow application (workflow.xml, lib/, a script) and any extra members after it."""
    return tar_gz(
        entry("workflow.xml", WORKFLOW),
        entry("lib", kind=tarfile.DIRTYPE, mode=0o755),
        entry("lib/run.sh", b"#!/bin/sh\necho hi\n", mode=0o755),
        *extra,
    )


# Each hostile archive starts with a good file, so a test also sees that what was written is removed.
HOSTILE: dict[str, Callable[[], bytes]] = {
    "dot-dot": lambda: application(entry("../escaped.txt", b"x")),
    "nested-dot-dot": lambda: application(entry("lib/../../escaped.txt", b"x")),
    "absolute": lambda: application(entry("/tmp/escaped.txt", b"x")),
    "backslash": lambda: application(entry("..\\escaped.txt", b"x")),
    "symlink": lambda: application(entry("passwd", kind=tarfile.SYMTYPE, link="/etc/passwd")),
    "hardlink": lambda: application(entry("passwd", kind=tarfile.LNKTYPE, link="/etc/passwd")),
    "device": lambda: application(entry("null", kind=tarfile.CHRTYPE)),
    "fifo": lambda: application(entry("pipe", kind=tarfile.FIFOTYPE)),
    "duplicate": lambda: application(entry("workflow.xml", b"<other/>")),
    "file-over-directory": lambda: application(entry("lib", b"x")),
    "no-files": lambda: tar_gz(entry("empty", kind=tarfile.DIRTYPE)),
    "not-gzip": lambda: b"this is not an archive at all",
    "gzip-not-tar": lambda: gzip.compress(b"just some text, no tar headers" * 40),
    "truncated": lambda: application(entry("big.bin", bytes(range(256)) * 400))[:300],
}
