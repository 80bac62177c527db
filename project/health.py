"""Liveness and readiness: /healthz checks the database and the broker."""

from __future__ import annotations

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET


def check_database() -> str:
    """Return "ok" when a trivial query succeeds, else the error's class name."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any failure means "down"; the name says which
        return f"down: {type(exc).__name__}"
    return "ok"


def check_broker() -> str:
    """Return "ok" when Redis answers PING within two seconds, else the error's class name."""
    try:
        client = redis.Redis.from_url(
            settings.CELERY_BROKER_URL, socket_connect_timeout=2, socket_timeout=2
        )
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # any failure means "down"; the name says which
        return f"down: {type(exc).__name__}"
    return "ok"


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """200 with every check "ok", or 503 naming what is down."""
    checks = {"database": check_database(), "broker": check_broker()}
    healthy = all(value == "ok" for value in checks.values())
    return JsonResponse(checks, status=200 if healthy else 503)
