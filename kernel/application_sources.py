"""Where coordinator applications and their <include>d dataset files may be read from.

A submission names files on the server's storage (`oozie.coord.application.path`, `<include>`):
without a limit any API user could make the server read any path it can. So a submission
reads only under COORD_APPLICATION_ROOTS (and only over COORD_INCLUDE_PROTOCOLS), checked
before storage is touched, so a refusal says nothing about files outside. The CLI is an
operator's tool on the server itself and reads what its user can read (`trusted`).

What a submission's includes said is stored with the job (`CoordinatorJob.includes`), so
materialization later never reads them again: the job stays what was accepted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import fsspec
from django.conf import settings

from kernel import storage
from oozie.definitions import (
    ApplicationNotFoundError,
    ApplicationUnreadableError,
    DefinitionError,
    fsspec_loader,
)
from oozie.definitions.includes import Loader
from oozie.properties import COORD_APP_PATH

MAX_FILE_BYTES = 1_048_576


def _split(url: str) -> tuple[str, str]:
    if "://" in url:
        protocol, rest = url.split("://", 1)
        return protocol.lower(), rest
    return "file", url


def is_allowed(url: str) -> bool:
    """Whether url lies under one of the application roots (compared as fsspec opens it: kernel.storage)."""
    try:
        return storage.under(storage.resolve(storage.map_uri(url)), settings.COORD_APPLICATION_ROOTS)
    except storage.StorageURLError:
        return False


def check_readable(url: str, what: str, *, trusted: bool = False) -> str:
    """The URL to open: refuse a protocol outside COORD_INCLUDE_PROTOCOLS or (untrusted) a path outside COORD_APPLICATION_ROOTS.

    A URI of a migrated application is mapped first (STORAGE_URI_MAP): the protocol and the
    roots are checked on what it maps to, which is what is opened. Untrusted reads open the
    resolved URL that was checked (symbolic links followed), not what the submitter wrote;
    trusted ones (the CLI on the server) open what they name, mapped.
    """
    mapped = storage.map_uri(url)
    note = storage.mapped_note(url, mapped)
    protocol, _ = _split(mapped)
    if protocol not in settings.COORD_INCLUDE_PROTOCOLS:
        raise DefinitionError(
            f"{what} {url!r}{note}: protocol {protocol!r} is not allowed "
            f"(COORD_INCLUDE_PROTOCOLS: {', '.join(settings.COORD_INCLUDE_PROTOCOLS)})",
            source=url,
        )
    if trusted:
        return mapped
    try:
        return storage.check_under(mapped, settings.COORD_APPLICATION_ROOTS, setting="COORD_APPLICATION_ROOTS", what=what).url
    except storage.OutsideRoots:
        raise DefinitionError(
            f"{what} {url!r}{note} is outside the application roots (COORD_APPLICATION_ROOTS)", source=url
        ) from None
    except storage.StorageURLError as exc:
        raise DefinitionError(f"{what} {url!r}: {exc}", source=url) from None


def submission_loader(*, trusted: bool = False) -> tuple[Loader, dict[str, str]]:
    """A loader for a submission's includes, and the texts it read (to store with the job)."""
    base = fsspec_loader(max_bytes=MAX_FILE_BYTES, allowed_protocols=settings.COORD_INCLUDE_PROTOCOLS)
    read: dict[str, str] = {}

    def load(url: str) -> bytes:
        data = base(check_readable(url, "<include>", trusted=trusted))
        read[url] = data.decode("utf-8", errors="replace")
        return data

    return load, read


def snapshot_loader(snapshot: Mapping[str, str], fallback: Callable[[], Loader]) -> Loader:
    """Serve includes from what was stored at submission; jobs stored without a snapshot read storage."""

    def load(url: str) -> bytes:
        if url in snapshot:
            return snapshot[url].encode("utf-8")
        return fallback()(url)

    return load


def read_application(
    app_path: str,
    *,
    trusted: bool = False,
    filename: str = "coordinator.xml",
    what: str = "coordinator application",
    prop: str = COORD_APP_PATH,
) -> tuple[str, str]:
    """The XML named by an application path property, and its directory (DefinitionError if refused).

    A local path, `file://` or another allowed URI under the application roots; a directory
    means its `filename` (coordinator.xml, or bundle.xml for bundles).
    """
    opened = check_readable(app_path, prop, trusted=trusted)
    try:
        fs, path = fsspec.core.url_to_fs(opened)
        if fs.isdir(path):
            path = path.rstrip("/") + "/" + filename
            if not fs.exists(path):
                raise ApplicationNotFoundError(
                    f"cannot read the {what} {app_path}: the directory has no {filename}",
                    app_path=app_path, directory_exists=True,
                )
        elif not fs.exists(path):
            raise ApplicationNotFoundError(
                f"cannot read the {what} {app_path}: no such directory or file", app_path=app_path, directory_exists=False,
            )
        size = fs.size(path)
        if size is not None and size > MAX_FILE_BYTES:
            raise ApplicationUnreadableError(f"{app_path} is larger than {MAX_FILE_BYTES} bytes", source=app_path)
        with fs.open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except (ApplicationNotFoundError, ApplicationUnreadableError):
        raise
    except (OSError, ValueError, ImportError) as exc:
        raise ApplicationUnreadableError(f"cannot read the {what} {app_path}: {exc}", source=app_path) from None
    if len(data) > MAX_FILE_BYTES:
        raise ApplicationUnreadableError(f"{app_path} is larger than {MAX_FILE_BYTES} bytes", source=app_path)
    protocol, _ = _split(opened)
    directory = path.rsplit("/", 1)[0]
    # A plain local path stays one (the job shows what was submitted, resolved); URLs keep their
    # protocol (a mapped one's: relative includes are read where the application was).
    app_dir = directory if "://" not in app_path else f"{protocol}://{directory.split('://', 1)[-1]}"
    try:
        return data.decode("utf-8"), app_dir
    except UnicodeDecodeError:
        raise ApplicationUnreadableError(f"{app_path} is not UTF-8 text", source=app_path) from None
