"""Failed sign-ins are counted in the database; a client that guesses too often is locked out for a while.

The rules (settings in project/settings.py, documented in docs/configuration.md):

1. Every failed credential check stores one AuthFailure row (where, client address, username
   named, when): a wrong password at the admin login or in HTTP basic, an unknown or malformed
   API token (`Token` or `Bearer`) on the native API, the Oozie API or /metrics.
2. AUTH_FAILURE_LIMIT failures from one client address within the last
   AUTH_FAILURE_WINDOW_SECONDS lock that address: every attempt from it that presents
   credentials is refused (429 with Retry-After) before the credentials are looked at, the right
   ones too, until enough failures have left the window. Refused attempts check nothing and are
   not stored, so the table holds at most AUTH_FAILURE_LIMIT rows per address and window.
3. AUTH_ACCOUNT_FAILURE_LIMIT failures naming one username, from any addresses, lock that
   username the same way (distributed guessing; 0 turns it off). The price: anyone can lock an
   account out of password sign-ins for a window. API tokens are not refused by an account lock
   (a token is no guess at the account's password), so automation keeps working meanwhile.
4. A success resets nothing: otherwise an attacker would interleave sign-ins to an account of
   their own with the guesses.
5. The client address is REMOTE_ADDR, or the right-most address in the header
   AUTH_CLIENT_IP_HEADER names (the one the trusted proxy in front appended). IPv6 addresses
   count per /64 network: one host usually holds a whole /64 and can pick any address in it.
6. The counts live in the database, so every process on every host sees the same ones. Rows
   older than the window are deleted by a failure's insert, at most once per PURGE_SECONDS per
   process.
7. Each lockout is logged once at WARNING with the address, the username and the scope (up to
   races between concurrent failures); never a password or a token.
"""

from __future__ import annotations

import base64
import functools
import ipaddress
import logging
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError
from django.db.models import QuerySet, Subquery
from django.http import HttpRequest, HttpResponse
from django.utils.timezone import now
from rest_framework.authentication import TokenAuthentication, get_authorization_header
from rest_framework.exceptions import APIException, AuthenticationFailed, Throttled
from rest_framework.request import Request

from kernel.models import AuthFailure

log = logging.getLogger(__name__)

#: Each process deletes expired rows at most this often (on a failure's insert).
PURGE_SECONDS = 60.0
#: The longest username stored (Django's User.username).
MAX_USERNAME = 150
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_last_purge = -math.inf  # time.monotonic() of this process's last purge


@dataclass(frozen=True)
class Lockout:
    """A refused sign-in: whether the address or the account is locked, and for how many more seconds (at least 1)."""

    subject: str  # "address" or "account"
    retry_after: int

    @property
    def reason(self) -> str:
        """What is locked, in words a person signing in understands."""
        whose = "from your address" if self.subject == "address" else "for this account"
        return f"Too many failed sign-ins {whose}"

    def message(self) -> str:
        """The reason and when to try again, in minutes (rounded up)."""
        minutes = max(1, math.ceil(self.retry_after / 60))
        return f"{self.reason}; try again in {minutes} minute{'s' if minutes != 1 else ''}."


# ---- the client --------------------------------------------------------------------------------


def client_ip(request: HttpRequest) -> str:
    """The address failures are counted under: REMOTE_ADDR, or the right-most of AUTH_CLIENT_IP_HEADER; IPv6 as its /64."""
    header = _meta_key(str(settings.AUTH_CLIENT_IP_HEADER or ""))
    if header:
        # Only the right-most entry was written by the proxy we trust; the rest came from the client.
        forwarded = str(request.META.get(header, "")).split(",")[-1].strip()
        address = _address(forwarded)
        if address:
            return address
    return _address(str(request.META.get("REMOTE_ADDR", ""))) or "unknown"


def _meta_key(header: str) -> str:
    """A header name as request.META spells it: `X-Forwarded-For` and `HTTP_X_FORWARDED_FOR` alike."""
    key = header.strip().upper().replace("-", "_")
    if not key or key == "REMOTE_ADDR" or key.startswith("HTTP_"):
        return key
    return f"HTTP_{key}"


def _address(text: str) -> str:
    """The canonical address ('' if it is none); IPv4-mapped IPv6 as IPv4, other IPv6 as its /64 network."""
    text = text.strip().strip("[]")
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return ""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network(f"{address}/64", strict=False))
    return str(address)


def presented_username(request: HttpRequest) -> str:
    """The username of an `Authorization: Basic` header, decoded as DRF decodes it ('' for other schemes or garbage)."""
    parts = str(request.META.get("HTTP_AUTHORIZATION", "")).split()
    if len(parts) != 2 or parts[0].lower() != "basic":
        return ""
    try:
        raw = base64.b64decode(parts[1])
    except ValueError:  # binascii.Error and non-ASCII text alike
        return ""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return _username(text.partition(":")[0])


def _username(name: str) -> str:
    """A username as stored and compared: control characters (NUL!) replaced, bounded length."""
    return _CONTROL.sub("?", name)[:MAX_USERNAME]


# ---- the rule ----------------------------------------------------------------------------------


def _window() -> timedelta:
    return timedelta(seconds=max(1, int(settings.AUTH_FAILURE_WINDOW_SECONDS)))


def _limits() -> tuple[int, int]:
    """(per address, per account); 0 or less: that limit is off."""
    return int(settings.AUTH_FAILURE_LIMIT), int(settings.AUTH_ACCOUNT_FAILURE_LIMIT)


def _locked(failures: QuerySet[AuthFailure], limit: int, moment: datetime, subject: str) -> Lockout | None:
    """Locked while the limit-th newest failure is in the window; Retry-After: when it leaves it."""
    if limit <= 0:
        return None
    window = _window()
    recent = failures.filter(at__gt=moment - window).order_by("-at").values_list("at", flat=True)
    oldest_counted = list(recent[limit - 1 : limit])
    if not oldest_counted:
        return None
    seconds = (oldest_counted[0] + window - moment).total_seconds()
    return Lockout(subject, max(1, math.ceil(seconds)))


def lockout(request: HttpRequest, username: str = "") -> Lockout | None:
    """The lockout refusing this client (its address, else the username it names); None: it may try."""
    address_limit, account_limit = _limits()
    moment = now()
    lock = _locked(AuthFailure.objects.filter(client_ip=client_ip(request)), address_limit, moment, "address")
    name = _username(username)
    if lock is None and name:
        # Stops a botnet guessing one password from many addresses, at a price: anyone can lock
        # this username out of password sign-ins for a window (its API tokens keep working).
        lock = _locked(AuthFailure.objects.filter(username=name), account_limit, moment, "account")
    return lock


def record_failure(request: HttpRequest, scope: str, username: str = "") -> None:
    """Store a failed credential check; log at WARNING when it is the one that locks the address or the account."""
    address_limit, account_limit = _limits()
    moment = now()
    address, name = client_ip(request), _username(username)
    row = AuthFailure.objects.create(scope=scope[:32], client_ip=address, username=name, at=moment)
    # The row's rank among the window's failures: exactly one failure is the limit-th, so each
    # lockout is logged once even when several processes record failures at the same time.
    ranked = AuthFailure.objects.filter(at__gt=moment - _window(), pk__lte=row.pk)
    seconds = int(_window().total_seconds())
    if address_limit > 0 and ranked.filter(client_ip=address).count() == address_limit:
        log.warning("sign-in lockout: address %s locked for %d s after %d failures (%s, last username %r)",
                    address, seconds, address_limit, scope, name)
    if name and account_limit > 0 and ranked.filter(username=name).count() == account_limit:
        log.warning("sign-in lockout: account %r locked for %d s after %d failures from any address (%s, last from %s)",
                    name, seconds, account_limit, scope, address)
    _purge_now_and_then(moment)


def _purge_now_and_then(moment: datetime) -> None:
    """Delete failures older than the window, at most once per PURGE_SECONDS in this process (one indexed delete)."""
    global _last_purge
    if time.monotonic() - _last_purge < PURGE_SECONDS:
        return
    _last_purge = time.monotonic()
    AuthFailure.objects.filter(at__lte=moment - _window()).delete()


# ---- where credentials are checked -------------------------------------------------------------


def _token_and_lock(request: HttpRequest, model: Any, key: str) -> tuple[Any | None, Lockout | None]:
    """The token of `key` (with its user) and the address's lockout, in one query when the key is right.

    The token lookup carries the lock check as a subquery (the limit-th newest failure of this
    address in the window), so a request with a good token costs what it cost before the guard.
    Only an unknown key (a failure anyway) asks about the lock again, to refuse rather than count.
    """
    address_limit, _ = _limits()
    moment = now()
    tokens = model.objects.select_related("user").filter(key=key)
    if address_limit > 0:
        recent = AuthFailure.objects.filter(client_ip=client_ip(request), at__gt=moment - _window())
        tokens = tokens.annotate(
            locked_since=Subquery(recent.order_by("-at").values("at")[address_limit - 1 : address_limit]),
        )
    token = tokens.first()
    if token is None:
        return None, lockout(request)
    locked_since = getattr(token, "locked_since", None)
    if locked_since is None:
        return token, None
    seconds = (locked_since + _window() - moment).total_seconds()
    return token, Lockout("address", max(1, math.ceil(seconds)))


class GuardedTokenAuthentication(TokenAuthentication):
    """DRF's `Authorization: Token <key>`: 429 (Throttled) while the client is locked out; a bad key counts as a failure.

    A locked-out address is refused with the right key too, and nothing about the key is said.
    """

    scope = "api"

    def __init__(self, scope: str | None = None) -> None:
        """`scope`: who checks (api, oozie, metrics), as the failure records and the lockout log name it."""
        super().__init__()
        if scope:
            self.scope = scope

    def _failed(self, request: Request, message: str) -> APIException:
        """A failed check: refused (Throttled) if the address is locked, else recorded; the error to raise."""
        lock = lockout(request)
        if lock is not None:
            return Throttled(wait=lock.retry_after, detail=f"{lock.reason}.")
        record_failure(request, self.scope)
        return AuthenticationFailed(message)

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        """DRF's header rules and messages, with the lock checked in the token's own query."""
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword.lower().encode():
            return None  # not this scheme: no credentials of ours, nothing to guard
        if len(parts) != 2:
            raise self._failed(request, "Invalid token header. Token string should be one word after the keyword.")
        try:
            key = parts[1].decode()
        except UnicodeError:
            raise self._failed(request, "Invalid token header. Token string should not contain invalid characters.") from None
        token, lock = _token_and_lock(request, self.get_model(), key)
        if lock is not None:
            raise Throttled(wait=lock.retry_after, detail=f"{lock.reason}.")
        if token is None:
            record_failure(request, self.scope)
            raise AuthenticationFailed("Invalid token.")
        if not token.user.is_active:
            raise AuthenticationFailed("User inactive or deleted.")
        return token.user, token


class GuardedBearerAuthentication(GuardedTokenAuthentication):
    """`Authorization: Bearer <key>`: the same tokens under the name most HTTP clients use."""

    keyword = "Bearer"


class GuardedAdminAuthenticationForm(AdminAuthenticationForm):
    """The admin login form: refused while the client or the username is locked out; a wrong password counts as a failure.

    `lockout` is set on a refused form so the view can answer 429 (`with_lockout_status`).
    """

    lockout: Lockout | None = None

    def clean(self) -> dict[str, Any]:
        """Check the lock before authenticating: a locked-out client is refused even with the right password."""
        request = self.request
        if request is None:  # no client to count (a form built outside a request)
            return super().clean()
        username = str(self.cleaned_data.get("username") or "")
        self.lockout = lockout(request, username)
        if self.lockout is not None:
            raise ValidationError(self.lockout.message(), code="locked")
        try:
            return super().clean()
        except ValidationError:
            if self.user_cache is None:  # the password was wrong (a staff check refuses a right one)
                record_failure(request, "admin", username)
            raise


def with_lockout_status(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Wrap a login view: when its form was refused for a lockout, answer 429 with Retry-After (same page)."""

    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = view(request, *args, **kwargs)
        form = (getattr(response, "context_data", None) or {}).get("form")
        lock = getattr(form, "lockout", None)
        if isinstance(lock, Lockout):
            response.status_code = 429
            response["Retry-After"] = str(lock.retry_after)
        return response

    return wrapped
