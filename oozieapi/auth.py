"""Who calls the Oozie API: HTTP basic (Django users) or a token header (DRF tokens).

No session cookies here: a browser never sends these credentials on its own to another
site's request without a CORS preflight (POST needs an XML content type, PUT is preflighted),
so the API needs no CSRF tokens. Oozie's pseudo authentication (`?user.name=`) proves nothing
and is ignored.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from rest_framework.authentication import (
    BaseAuthentication,
    BasicAuthentication,
    TokenAuthentication,
)
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from oozieapi.errors import OozieError


class BearerTokenAuthentication(TokenAuthentication):
    """`Authorization: Bearer <key>`: the same tokens under the name most HTTP clients use."""

    keyword = "Bearer"


AUTHENTICATORS: tuple[BaseAuthentication, ...] = (
    BasicAuthentication(), TokenAuthentication(), BearerTokenAuthentication(),
)


def authenticate(request: HttpRequest) -> Any | None:
    """The user named by the Authorization header; None without one; 401 for bad credentials."""
    if not request.META.get("HTTP_AUTHORIZATION"):
        return None
    wrapped = Request(request)
    for authenticator in AUTHENTICATORS:
        try:
            result = authenticator.authenticate(wrapped)
        except AuthenticationFailed as exc:
            raise OozieError(401, "E0500", exc.detail) from None
        if result is not None:
            return result[0]
    raise OozieError(401, "E0500", "use HTTP basic or an 'Authorization: Token <key>' header")
