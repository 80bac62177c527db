"""Refuse requests whose URL or headers carry text no view should see, before any view runs.

A NUL character, a lone UTF-16 surrogate or bytes that are not UTF-8 in the path, the query
string or a header would reach the database driver (PostgreSQL refuses NUL in text; surrogates
cannot be encoded) or be silently replaced by U+FFFD. Such requests get a 400 naming the
problem: `{"detail": ...}` on the native API and elsewhere, Oozie's E0303 headers under /oozie/.
Ordinary ASCII requests cost a few string scans.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Literal
from urllib.parse import quote, unquote_to_bytes

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

from kernel.history import acting_as
from kernel.parsers import MAX_SHOWN, bytes_problem
from oozieapi.errors import OozieError, error_response

log = logging.getLogger(__name__)

OOZIE_PREFIX = "/oozie/"
UNPREFIXED_HEADERS = ("CONTENT_TYPE", "CONTENT_LENGTH")  # headers WSGI does not name HTTP_*


def _transported(value: str) -> bytes:
    """The bytes a WSGI string stands for (latin-1 transport); text from elsewhere as UTF-8, surrogates kept."""
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")


def _problem(value: str) -> str | None:
    """What is wrong with a WSGI value read as UTF-8 (None for the usual ASCII without NUL)."""
    if value.isascii() and "\x00" not in value:
        return None
    return bytes_problem(_transported(value))


def _path_bytes(path: str) -> bytes | None:
    """The path's bytes as the client sent them, None for the usual ASCII path without NUL or '%'.

    Django decodes PATH_INFO as UTF-8 and percent-encodes again the bytes that are not
    (`repercent_broken_unicode`); unquoting gives them back.
    """
    if path.isascii() and "%" not in path and "\x00" not in path:
        return None
    return unquote_to_bytes(path.encode("utf-8", "surrogatepass"))


def _shown(raw: bytes) -> str:
    """Raw bytes as a percent-encoded ASCII string for a message (the bad bytes visible, nothing else escaped)."""
    text = quote(raw, safe="/@:;,=+!$'()*~")
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "..."


def _query_problem(query: str) -> tuple[str, str, str] | None:
    """(parameter name, value as sent, problem) of the first parameter that is not UTF-8 text without NUL."""
    for pair in query.split("&"):
        if "%" not in pair and _problem(pair) is None:
            continue
        name, _, value = pair.partition("=")
        name_bytes = unquote_to_bytes(_transported(name).replace(b"+", b" "))
        value_bytes = unquote_to_bytes(_transported(value).replace(b"+", b" "))
        for raw in (name_bytes, value_bytes):
            problem = bytes_problem(raw)
            if problem is not None:
                return _shown(name_bytes), _shown(value_bytes), problem
    return None


def _header_name(key: str) -> str:
    """`HTTP_X_FORWARDED_FOR` -> `X-Forwarded-For`."""
    return key.removeprefix("HTTP_").replace("_", "-").title()


@dataclass(frozen=True)
class HostileInput:
    """Where a request carries text no view should see: `part` is path, query or header."""

    part: Literal["path", "query", "header"]
    name: str
    shown: str
    problem: str

    def describe(self) -> str:
        """`query parameter 'key' contains a NUL character (U+0000)`."""
        if self.part == "path":
            return f"the URL path {self.problem}"
        return f"{'query parameter' if self.part == 'query' else 'header'} {self.name!r} {self.problem}"


def hostile_input(request: HttpRequest) -> HostileInput | None:
    """The first part of the request (path, query parameter, header) that is not UTF-8 text without NUL."""
    meta = request.META
    path = _path_bytes(request.path_info)
    if path is not None:
        problem = bytes_problem(path)
        if problem is not None:
            return HostileInput("path", "path", _shown(path), problem)
    query = str(meta.get("QUERY_STRING", ""))
    if query:
        found = _query_problem(query)
        if found is not None:
            return HostileInput("query", *found)
    for key, value in meta.items():
        if (key.startswith("HTTP_") or key in UNPREFIXED_HEADERS) and isinstance(value, str):
            problem = _header_problem(value)
            if problem is not None:  # the value is not echoed: it may be a credential
                return HostileInput("header", _header_name(key), "", problem)
    return None


def _header_problem(value: str) -> str | None:
    """NUL or a lone surrogate in a header value; other bytes pass (HTTP headers are latin-1, and a

    stray non-UTF-8 cookie set by another site on the same host must not lock anyone out).
    """
    if value.isascii() and "\x00" not in value:
        return None
    if "\x00" in value:
        return bytes_problem(b"\x00")
    surrogate = next((ch for ch in value if "\ud800" <= ch <= "\udfff"), None)
    return None if surrogate is None else bytes_problem(surrogate.encode("utf-8", "surrogatepass"))


def refusal(request: HttpRequest, found: HostileInput) -> HttpResponse:
    """400 naming the problem: Oozie's E0303 headers under /oozie/, `{"detail": ...}` everywhere else."""
    if request.path_info.startswith(OOZIE_PREFIX):
        name = f"{found.name} header" if found.part == "header" else found.name
        value = f"{found.shown}: {found.problem}" if found.shown else found.problem
        return error_response(OozieError(400, "E0303", name, value))
    return JsonResponse({"detail": found.describe()}, status=400)


class HostileInputMiddleware:
    """First in MIDDLEWARE: 400 for NUL, lone surrogates or non-UTF-8 bytes in the path or query string, NUL or surrogates in headers."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        """Refuse hostile input; pass everything else on unchanged."""
        found = hostile_input(request)
        if found is not None:
            return refusal(request, found)
        return self.get_response(request)


class DatabaseUnavailableMiddleware:
    """A view that lost the database (a server restarting) answers 503 with Retry-After, not a 500.

    Django drops the broken connection at the end of the request; the next one reconnects.
    """

    RETRY_AFTER_SECONDS = 5

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        """Pass the request on."""
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        """OperationalError or InterfaceError from the database: 503 (Oozie's E0603 under /oozie/)."""
        if not isinstance(exception, OperationalError | InterfaceError):
            return None
        log.warning("database unavailable during %s %s: %s", request.method, request.path, exception)
        if request.path_info.startswith(OOZIE_PREFIX):
            response = error_response(OozieError(503, "E0603", "the database is unavailable; retry shortly"))
        else:
            response = JsonResponse({"detail": "the database is unavailable; retry shortly"}, status=503)
        response["Retry-After"] = str(self.RETRY_AFTER_SECONDS)
        return response


def _request_user(request: HttpRequest) -> str:
    """`<username> (web)` once the request is authenticated (the admin's session or the API's token), else 'web'."""
    user = getattr(request, "user", None)
    name = getattr(user, "username", "") if user is not None and user.is_authenticated else ""
    return f"{name} (web)" if name else "web"


class StatusActorMiddleware:
    """Status changes a request makes itself (not through a command) are recorded as its user's (kernel.history).

    The user is read when the first change is recorded, after the API has authenticated the
    token: a request that changes no status costs nothing.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with acting_as("web", partial(_request_user, request)):
            return self.get_response(request)
