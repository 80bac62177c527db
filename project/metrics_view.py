"""GET /metrics: the monitoring figures for Prometheus, behind METRICS_TOKEN or API credentials (ADR 0014).

The view lives at the top (project) because it authenticates as the Oozie API does; the figures
and their rendering are `monitoring`'s.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from kernel import auth_guard
from monitoring.figures import compute_figures
from monitoring.prometheus import prometheus_text
from oozieapi.auth import authenticate
from oozieapi.errors import OozieError


def _authorized(request: HttpRequest) -> bool:
    """`Authorization: Bearer <METRICS_TOKEN>`, any active user of the APIs (basic or API token), or an
    operator signed in to the admin (the dashboard links here)."""
    session_user = getattr(request, "user", None)
    if session_user is not None and session_user.is_authenticated and session_user.is_active and session_user.is_staff:
        return True
    expected = str(settings.METRICS_TOKEN or "")
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, credentials = header.partition(" ")
    if expected and scheme.lower() == "bearer" and hmac.compare_digest(credentials.strip().encode(), expected.encode()):
        return True
    try:
        user = authenticate(request, scope="metrics")
    except OozieError:
        return False
    return user is not None and bool(getattr(user, "is_active", False))


@never_cache
@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    """GET /metrics: the figures for Prometheus; 401 without METRICS_TOKEN or API credentials, 429 while locked out."""
    # The lock comes before the METRICS_TOKEN comparison: a locked-out address guesses nothing here.
    # (A wrong Bearer token is a failure: oozieapi.auth looks it up as an API token and records it.)
    lock = auth_guard.lockout(request) if request.META.get("HTTP_AUTHORIZATION") else None
    if lock is not None:
        response = HttpResponse(f"{lock.message()}\n", status=429, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = str(lock.retry_after)
        return response
    if not _authorized(request):
        response = HttpResponse("authentication required: Authorization: Bearer <METRICS_TOKEN>, or API credentials\n",
                                status=401, content_type="text/plain; charset=utf-8")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    body, content_type = prometheus_text(compute_figures(), request.META.get("HTTP_ACCEPT", ""))
    return HttpResponse(body, content_type=content_type)
