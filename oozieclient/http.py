"""Requests to an Oozie server: the URL, the protocol version, authentication, Oozie's error headers.

Oozie's client (OozieClient.handleError) reads a refusal from two headers, `oozie-error-code`
and `oozie-error-message`; `OozieClientError` carries them and prints as Oozie prints them
(`E0604 : E0604: Job does not exist [...]`). An answer without them is `HTTP error code: 404`
with the reason; an unreachable server `IO_ERROR`.

Authentication, as `-auth` (or OOZIE_AUTH) chooses, or guessed from what is given:
BASIC (`-username`/`-password`, or OOZIE_USER/OOZIE_PASSWORD), TOKEN (`Authorization: Token
<key>` from OOZIE_TOKEN, this service's API tokens), SIMPLE (Oozie's pseudo authentication:
`user.name` in the query, nothing proved). The secret is never printed, debug output included.
"""

from __future__ import annotations

import base64
import json
import ssl
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO
from urllib.parse import urlencode, urlsplit

AUTH_TYPES = ("SIMPLE", "BASIC", "TOKEN")
SUPPORTED_VERSIONS = (2, 1)  # the newest first, as OozieClient.validateWSVersion picks
TIMEOUT_SECONDS = 300.0  # bulk verbs wait for their operation on the server (OOZIE_BULK_WAIT_SECONDS)
XML_CONTENT_TYPE = "application/xml;charset=UTF-8"


class OozieClientError(Exception):
    """A refusal or a failure, as `Error: <code> : <message>` prints it."""

    def __init__(self, code: str, message: str, hint: str = "") -> None:
        self.code = code
        self.message = message
        self.hint = hint  # a second line saying what to do, printed after the error
        super().__init__(f"{code} : {message}")


@dataclass(frozen=True)
class Credentials:
    """How requests authenticate: the scheme and its secret (never shown)."""

    scheme: str  # SIMPLE, BASIC or TOKEN
    username: str = ""
    secret: str = field(default="", repr=False)

    def headers(self) -> dict[str, str]:
        """The Authorization header of BASIC and TOKEN; none for SIMPLE."""
        if self.scheme == "BASIC":
            raw = f"{self.username}:{self.secret}".encode()
            return {"Authorization": "Basic " + base64.b64encode(raw).decode("ascii")}
        if self.scheme == "TOKEN":
            return {"Authorization": f"Token {self.secret}"}
        return {}


@dataclass(frozen=True)
class Response:
    """A successful answer: status, headers (lower-case names) and body."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        """The body as JSON; an answer that is not JSON is an error naming what came back."""
        try:
            return json.loads(self.body) if self.body.strip() else None
        except ValueError:
            raise OozieClientError("E0000", f"the server's answer is not JSON: {self.body[:200]!r}") from None

    def text(self) -> str:
        """The body as text (UTF-8, undecodable bytes replaced)."""
        return self.body.decode("utf-8", "replace")


class OozieClient:
    """One Oozie server: `base_url` ends in `/oozie`; the protocol version is asked once, on first use."""

    def __init__(
        self, base_url: str, credentials: Credentials, *, headers: Mapping[str, str] | None = None,
        insecure: bool = False, do_as: str = "", debug: TextIO | None = None, timeout: float = TIMEOUT_SECONDS,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise OozieClientError("E0000", f"the Oozie URL must be http:// or https://, not {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.credentials = credentials
        self.extra_headers = dict(headers or {})
        self.do_as = do_as
        self.debug = debug
        self.timeout = timeout
        self.context = ssl._create_unverified_context() if insecure else None  # noqa: S323 - the user's -insecure
        self._version: int | None = None

    # ---- protocol -----------------------------------------------------------------------

    def version(self) -> int:
        """The newest protocol version both sides speak (GET /versions); E0000 when there is none."""
        if self._version is None:
            served = self.request("GET", "versions", versioned=False).json()
            common = [v for v in SUPPORTED_VERSIONS if isinstance(served, list) and v in served]
            if not common:
                raise OozieClientError(
                    "E0000", f"Protocol version mismatch: this client speaks {list(SUPPORTED_VERSIONS)}, the server {served}",
                )
            self._version = common[0]
        return self._version

    def url(self, path: str, params: Mapping[str, Any] | None = None, *, versioned: bool = True) -> str:
        """The absolute URL of `path` (under /v<N>/ unless `versioned` is False) with its query."""
        query = {k: str(v) for k, v in (params or {}).items() if v is not None}
        if self.credentials.scheme == "SIMPLE" and self.credentials.username:
            query.setdefault("user.name", self.credentials.username)  # Oozie's PseudoAuthenticator
        if self.do_as:
            query.setdefault("doAs", self.do_as)
        prefix = f"/v{self.version()}/" if versioned else "/"
        return self.base_url + prefix + path + (f"?{urlencode(query)}" if query else "")

    # ---- requests -----------------------------------------------------------------------

    def request(
        self, method: str, path: str, params: Mapping[str, Any] | None = None, *, body: bytes | None = None,
        content_type: str = "", versioned: bool = True, allow: tuple[int, ...] = (),
    ) -> Response:
        """Send one request; a refusal becomes OozieClientError unless its status is in `allow`."""
        url = self.url(path, params, versioned=versioned)
        request = urllib.request.Request(url, data=body, method=method)  # noqa: S310 - the scheme is checked in __init__
        for name, value in {**self.credentials.headers(), **self.extra_headers}.items():
            request.add_header(name, value)
        if content_type:
            request.add_header("Content-Type", content_type)
        if self.debug is not None:
            print(f"{method} {url}", file=self.debug)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self.context) as answer:  # noqa: S310
                return Response(answer.status, {k.lower(): v for k, v in answer.headers.items()}, answer.read())
        except urllib.error.HTTPError as error:
            headers = {k.lower(): v for k, v in error.headers.items()} if error.headers else {}
            response = Response(error.code, headers, error.read())
            if error.code in allow:
                return response
            raise _refusal(response, error.reason) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise OozieClientError("IO_ERROR", f"{type(reason).__name__}: {reason} ({self.base_url})") from None


def _refusal(response: Response, reason: str) -> OozieClientError:
    """Oozie's error headers as an error; without them, `HTTP error code: <status>` and the reason."""
    code = response.headers.get("oozie-error-code")
    message = response.headers.get("oozie-error-message")
    if code:
        body_message = _body_message(response.body)  # the headers are ASCII-escaped; the body has the text
        return OozieClientError(code, body_message or message or "")
    return OozieClientError(f"HTTP error code: {response.status}", reason or "")


def _body_message(body: bytes) -> str:
    """`{"error": {"message": ...}}`, the JSON body this service adds to its error headers; "" otherwise."""
    try:
        data = json.loads(body)
    except ValueError:
        return ""
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else ""


def stderr_debug(enabled: bool) -> TextIO | None:
    """Where `-debug` (or OOZIE_DEBUG) writes the requests: stderr, so the output stays as Oozie's."""
    return sys.stderr if enabled else None
