"""Who calls the Oozie API: HTTP basic (Django users) or a token header (DRF tokens).

No session cookies here: a browser never sends these credentials on its own to another
site's request without a CORS preflight (POST needs an XML content type, PUT is preflighted),
so the API needs no CSRF tokens. Oozie's pseudo authentication (`?user.name=`) proves nothing
and is ignored.

Guessing is throttled (kernel.auth_guard): a client address or a basic-auth username with too
many failed checks is answered 429 E0501 with Retry-After, before its credentials are looked at.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from rest_framework.authentication import BaseAuthentication, BasicAuthentication
from rest_framework.exceptions import AuthenticationFailed, Throttled
from rest_framework.request import Request

from kernel import auth_guard
from oozieapi.errors import OozieError


class OozieTokenAuthentication(auth_guard.GuardedTokenAuthentication):
    """`Authorization: Token <key>`, guarded (the lock is checked in the token's own query)."""

    scope = "oozie"


class BearerTokenAuthentication(auth_guard.GuardedBearerAuthentication):
    """`Authorization: Bearer <key>`: the same tokens under the name most HTTP clients use."""

    scope = "oozie"


def authenticators(scope: str) -> tuple[BaseAuthentication, ...]:
    """Basic first (its failures are recorded here, with the username); the token classes guard themselves."""
    return BasicAuthentication(), OozieTokenAuthentication(scope), BearerTokenAuthentication(scope)


def authenticate(request: HttpRequest, *, scope: str = "oozie") -> Any | None:
    """The user named by the Authorization header; None without one; 401 for bad credentials, 429 while locked out.

    `scope` names the caller in the failure records and the lockout log (oozie, metrics).
    """
    if not request.META.get("HTTP_AUTHORIZATION"):
        return None
    basic = str(request.META["HTTP_AUTHORIZATION"]).split(" ", 1)[0].lower() == "basic"
    username = auth_guard.presented_username(request)
    if basic:  # a password is checked: the lock first, the address's and the username's
        lock = auth_guard.lockout(request, username)
        if lock is not None:
            raise OozieError(429, "E0501", lock.message(), retry_after=lock.retry_after)
    wrapped = Request(request)
    for authenticator in authenticators(scope):
        try:
            result = authenticator.authenticate(wrapped)
        except Throttled as exc:
            wait = int(getattr(exc, "wait", None) or 1)
            raise OozieError(429, "E0501", str(exc.detail), retry_after=wait) from None
        except AuthenticationFailed as exc:
            if not isinstance(authenticator, auth_guard.GuardedTokenAuthentication):  # those record their own
                auth_guard.record_failure(request, scope, username)
            raise OozieError(401, "E0500", exc.detail) from None
        if result is not None:
            return result[0]
    # An unknown scheme is a failed check too: guessing under another name must count.
    lock = auth_guard.lockout(request)
    if lock is not None:
        raise OozieError(429, "E0501", lock.message(), retry_after=lock.retry_after)
    auth_guard.record_failure(request, scope, username)
    raise OozieError(401, "E0500", "use HTTP basic or an 'Authorization: Token <key>' header")
