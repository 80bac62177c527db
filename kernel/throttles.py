"""The native API's request rates: DRF's throttles, at rates read from settings on every request.

DRF binds its rates (`DEFAULT_THROTTLE_RATES`) when its throttle module is imported; these read
API_ANON_RATE and API_USER_RATE when a request comes, so the settings are the one source (an
override in a test or a shell takes effect). An empty rate throttles nothing. A client is told
apart by kernel.auth_guard's client address (REMOTE_ADDR, or AUTH_CLIENT_IP_HEADER's right-most
entry): DRF's own reads the whole X-Forwarded-For header, which a client writes as it likes.

DRF counts in Django's cache. With the default LocMem cache each process counts on its own:
N gunicorn processes let a client make up to N times the rate. Guessing credentials is bounded
by kernel.auth_guard instead, which counts in the database.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle

from kernel.auth_guard import client_ip


class AnonymousRateThrottle(AnonRateThrottle):
    """Anonymous callers, per client address: at most API_ANON_RATE (e.g. "120/minute")."""

    def get_rate(self) -> str | None:
        """API_ANON_RATE; None (no throttle) when empty."""
        return str(settings.API_ANON_RATE or "") or None

    def get_ident(self, request: Request) -> str:
        """The client address as the sign-in guard counts it (not a header the client chose)."""
        return client_ip(request)


class UserRate(UserRateThrottle):
    """Authenticated users, per user: at most API_USER_RATE; unthrottled while it is empty (the default)."""

    def get_rate(self) -> str | None:
        """API_USER_RATE; None (no throttle) when empty."""
        return str(settings.API_USER_RATE or "") or None

    def get_ident(self, request: Request) -> str:
        """The client address as the sign-in guard counts it (not a header the client chose)."""
        return client_ip(request)
