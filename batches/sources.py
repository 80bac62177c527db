"""Where batch payloads may be read from, and reading them: sizes, whole files, streamed copies.

Payloads are named by URL and read through fsspec (`file://`, `memory://`, `s3://` ... as
BATCH_PAYLOAD_PROTOCOLS allows), or over http(s) when BATCH_ALLOW_HTTP is set, and then only
from hosts OUTBOUND_ALLOWED_HOSTS lists (kernel.outbound: checked at submission, checked again
with DNS when read, connected to the checked address, redirects not followed). API
submissions may only name payloads under BATCH_PAYLOAD_ROOTS (checked before anything is
read, so a refusal says nothing about what lies outside); the CLI is trusted. The URLs a
manifest lists are checked the same way when they are read, with the submission's trust.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

import fsspec
from django.conf import settings

from kernel import outbound, storage

CHUNK = 1024 * 1024


class PayloadError(ValueError):
    """A payload URL that may not, or cannot, be read (a clear refusal, or a download failure)."""


class PayloadRefused(PayloadError):
    """Not allowed (protocol or root): never retried."""


def _split(url: str) -> tuple[str, str]:
    if "://" in url:
        protocol, rest = url.split("://", 1)
        return protocol.lower(), rest
    return "file", url


def is_http(url: str) -> bool:
    """http:// or https://."""
    return _split(url)[0] in ("http", "https")


def check_payload_url(url: str, *, trusted: bool = False, what: str = "payload_url") -> str:
    """The URL to open; PayloadRefused unless the protocol is allowed and (untrusted) the URL lies under BATCH_PAYLOAD_ROOTS.

    Untrusted local paths are compared and opened as fsspec opens them (kernel.storage): no
    percent-decoding, symbolic links resolved; open the returned URL, not the one submitted.
    """
    if not url or len(url) > 2000 or "\x00" in url or any(ord(c) < 32 for c in url):
        raise PayloadRefused(f"{what}: not a URL of at most 2000 printable characters")
    url = storage.map_uri(url)  # a migrated application's URI (STORAGE_URI_MAP): checked and opened as what it maps to
    protocol, _ = _split(url)
    if protocol in ("http", "https"):
        if not settings.BATCH_ALLOW_HTTP:
            raise PayloadRefused(f"{what} {url!r}: http(s) payloads are not allowed (BATCH_ALLOW_HTTP)")
        try:
            outbound.check_url(url)  # the CLI too: trust is about storage roots, not where the server connects
        except outbound.OutboundRefused as exc:
            raise PayloadRefused(
                f"{what}: {exc}; BATCH_ALLOW_HTTP lets http(s) payloads in only from OUTBOUND_ALLOWED_HOSTS"
            ) from None
        return url
    if protocol not in settings.BATCH_PAYLOAD_PROTOCOLS:
        raise PayloadRefused(
            f"{what} {url!r}: protocol {protocol!r} is not allowed (BATCH_PAYLOAD_PROTOCOLS: "
            f"{', '.join(settings.BATCH_PAYLOAD_PROTOCOLS)})"
        )
    if trusted:
        return url
    try:
        return storage.check_under(url, settings.BATCH_PAYLOAD_ROOTS, setting="BATCH_PAYLOAD_ROOTS", what=what).url
    except storage.OutsideRoots:
        raise PayloadRefused(f"{what} {url!r} is outside the payload roots (BATCH_PAYLOAD_ROOTS)") from None
    except storage.StorageURLError as exc:
        raise PayloadRefused(f"{what} {url!r}: {exc}") from None


def _timeout() -> float:
    return float(settings.BATCH_HTTP_TIMEOUT_SECONDS)


@contextmanager
def open_url(url: str) -> Iterator[IO[bytes]]:
    """A binary stream of the URL's content (PayloadError when it cannot be opened)."""
    if is_http(url):
        try:
            with outbound.open_url(url, headers={"User-Agent": "scheduler-ingest"}, timeout=_timeout()) as response:
                yield response
        except outbound.OutboundRefused as exc:  # a name resolving to loopback or link-local: never retried
            raise PayloadRefused(f"{url}: {exc}") from None
        except OSError as exc:
            raise PayloadError(f"{url}: {exc}") from exc
        return
    try:
        handle = fsspec.open(url, "rb").open()
    except (OSError, ValueError, ImportError) as exc:
        raise PayloadError(f"{url}: {exc.__class__.__name__}: {exc}") from exc
    try:
        yield handle
    finally:
        handle.close()


def read_bytes(url: str, *, max_bytes: int) -> bytes:
    """The whole content, refused (PayloadRefused) when larger than max_bytes."""
    with open_url(url) as stream:
        data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise PayloadRefused(f"{url}: larger than {max_bytes} bytes")
    return data


def size_of(url: str) -> int | None:
    """The content's size without reading it (fsspec info, or an http HEAD); None when unknown."""
    try:
        if is_http(url):
            with outbound.open_url(url, method="HEAD", headers={"User-Agent": "scheduler-ingest"}, timeout=_timeout()) as response:
                length = response.headers.get("Content-Length")
                return int(length) if length and length.isdigit() else None
        fs, path = fsspec.core.url_to_fs(url)
        size = fs.info(path).get("size")
        return int(size) if size is not None else None
    except (OSError, ValueError, ImportError, KeyError):
        return None


def copy_to(url: str, destination: str, *, update: Callable[[bytes], Any] | None = None) -> int:
    """Stream the URL into a local file (written beside, then renamed into place); bytes copied.

    `update` sees every chunk (a digest). A partial file never stays under the final name.
    """
    os.makedirs(os.path.dirname(destination) or ".", exist_ok=True)
    partial = destination + ".part"
    copied = 0
    with open_url(url) as stream, open(partial, "wb") as out:
        while True:
            try:
                chunk = stream.read(CHUNK)
            except OSError as exc:
                raise PayloadError(f"{url}: {exc}") from exc
            if not chunk:
                break
            out.write(chunk)
            copied += len(chunk)
            if update is not None:
                update(chunk)
    os.replace(partial, destination)
    return copied
