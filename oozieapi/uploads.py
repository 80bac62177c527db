"""`/oozie/v{1,2}/upload`: an application directory sent with a submission (`oozie job -upload`, ADR 0036).

Apache Oozie has no such endpoint: its client submits a path the server reads. This one lets
a client send what lives on its own disk. `POST ?name=<app>` with a gzip-compressed tar of the
directory (`Content-Type: application/gzip`, a `Content-Length`) unpacks it (kernel.archives:
bounded while it is read, regular files and directories only, nothing left behind on a
refusal) into a new directory `OOZIE_UPLOAD_ROOT/<user>/<name>-<UTC time>-<random>`, moved
into place in one rename, and answers 201 `{"path": "file:///...", "files": N, "bytes": M}`:
the application path to submit. `GET` answers the limits, so a client can refuse an archive
that is too large before sending it.

Refusals: 401 without credentials (as the whole API), 400 E0300 another content type, 400
E0303 a bad name, 411 E0305 no Content-Length, 413 E0331 a body over OOZIE_UPLOAD_MAX_BYTES,
400 E0330 an archive that is not a clean tar.gz or holds too much, 403 E0332 when uploads are
off (OOZIE_UPLOAD_MAX_BYTES=0), 503 E0332 when OOZIE_UPLOAD_ROOT lies outside the application
roots (a configuration error: nothing would be readable there).
"""

from __future__ import annotations

import logging
import os
import re
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from kernel import archives
from kernel.application_sources import is_allowed
from oozieapi.errors import OozieError, bad_parameter
from oozieapi.formats import json_response
from oozieapi.views import OozieView

log = logging.getLogger(__name__)

ARCHIVE_TYPES = ("application/gzip", "application/x-gzip")
INCOMING = ".incoming"  # where archives are unpacked before the rename: never an application path
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_USER_DIR = re.compile(r"^[A-Za-z0-9_@+-][A-Za-z0-9_.@+-]{0,149}$")


def limits() -> archives.Limits:
    """What one upload may be, from the settings."""
    return archives.Limits(
        max_bytes=settings.OOZIE_UPLOAD_MAX_BYTES,
        max_unpacked_bytes=settings.OOZIE_UPLOAD_MAX_UNPACKED_BYTES,
        max_entries=settings.OOZIE_UPLOAD_MAX_ENTRIES,
    )


def upload_root() -> Path:
    """OOZIE_UPLOAD_ROOT, resolved; E0332 when uploads are off or the root lies outside COORD_APPLICATION_ROOTS."""
    if settings.OOZIE_UPLOAD_MAX_BYTES <= 0:
        raise OozieError(403, "E0332", "this server takes none (OOZIE_UPLOAD_MAX_BYTES is 0)")
    root = Path(os.path.realpath(settings.OOZIE_UPLOAD_ROOT))
    if not Path(settings.OOZIE_UPLOAD_ROOT).is_absolute() or not is_allowed(f"file://{root}"):
        log.error("uploads refused: OOZIE_UPLOAD_ROOT %s is not an absolute path under COORD_APPLICATION_ROOTS", root)
        raise OozieError(503, "E0332", "OOZIE_UPLOAD_ROOT is not under the application roots (COORD_APPLICATION_ROOTS)")
    return root


def user_directory(user: Any) -> str:
    """The caller's directory under the root: the username when it is a plain file name, else `~<id>` (no username has a `~`)."""
    name = str(user.get_username())
    if _USER_DIR.match(name) and name not in (".", ".."):
        return name
    return f"~{user.pk}"


def content_length(request: HttpRequest, maximum: int) -> int:
    """The declared body size: 411 without one, 413 over the limit (refused before a byte is read)."""
    raw = str(request.META.get("CONTENT_LENGTH") or "").strip()
    if not raw:
        raise OozieError(411, "E0305", "Content-Length")
    if not raw.isdigit():
        raise bad_parameter("Content-Length", raw)
    length = int(raw)
    if length > maximum:
        raise OozieError(413, "E0331", f"{length} bytes; this server takes at most {maximum} (OOZIE_UPLOAD_MAX_BYTES)")
    return length


class UploadView(OozieView):
    """GET /oozie/v{1,2}/upload: the limits; POST ?name=<app>: a tar.gz of an application directory, unpacked for the caller."""

    http_method_names = ["get", "head", "post"]

    def get(self, request: HttpRequest, version: str) -> HttpResponse:
        """`{"maxBytes", "maxUnpackedBytes", "maxEntries"}` (403 E0332 when uploads are off)."""
        upload_root()
        bounds = limits()
        return json_response({"maxBytes": bounds.max_bytes, "maxUnpackedBytes": bounds.max_unpacked_bytes,
                              "maxEntries": bounds.max_entries})

    def post(self, request: HttpRequest, version: str) -> HttpResponse:
        """201 `{"path": "file:///<root>/<user>/<name>-<time>-<random>", "files", "bytes"}`; a refusal leaves nothing on disk."""
        name = request.GET.get("name") or "app"
        if not _NAME.match(name):
            raise bad_parameter("name", name)
        content_type = request.META.get("CONTENT_TYPE", "")
        if content_type.split(";")[0].strip().lower() not in ARCHIVE_TYPES:
            raise OozieError(400, "E0300", content_type or "(none)")
        root = upload_root()
        bounds = limits()
        content_length(request, bounds.max_bytes)
        try:
            unpacked = archives.unpack(request, root / INCOMING, bounds)
        except archives.ArchiveTooLarge as exc:
            raise OozieError(413, "E0331", str(exc)) from None
        except archives.ArchiveError as exc:
            raise OozieError(400, "E0330", str(exc)) from None
        stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
        target = archives.place(unpacked, root / user_directory(self.caller) / f"{name}-{stamp}-{secrets.token_hex(6)}")
        log.info("application uploaded by %s: %s (%d files, %d bytes, %d compressed)", self.caller.get_username(),
                 target, unpacked.files, unpacked.bytes, unpacked.compressed_bytes)
        return json_response({"path": f"file://{target}", "files": unpacked.files, "bytes": unpacked.bytes}, status=201)
