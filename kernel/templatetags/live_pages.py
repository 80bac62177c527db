"""The live operator pages' tags: the script that refreshes a page in place, and the test for its refetches.

A page the operator looks at (GET, signed in, not a pop-up) carries the script
(templates/admin/live.html) with ADMIN_LIVE_SECONDS; every so many seconds it fetches the same URL
again with the header `X-Live-Refresh: 1` and swaps the page's read-only parts. Such a refetch
carries no script and leaves the session's messages for the next page the operator opens.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.conf import settings
from django.http import HttpRequest

register = template.Library()

#: The header the script sends with its refetches.
LIVE_HEADER = "X-Live-Refresh"


@register.filter
def is_live_refresh(request: HttpRequest | None) -> bool:
    """Whether the request is a live page's refetch (its messages are not shown, so not consumed)."""
    return request is not None and request.headers.get(LIVE_HEADER) == "1"


def live_seconds(request: HttpRequest | None, popup: bool = False) -> int:
    """The refresh interval of the page answering `request`: 0 (not live) for a form's answer, a pop-up, a refetch,
    a visitor who is not signed in, or ADMIN_LIVE_SECONDS 0."""
    seconds = int(getattr(settings, "ADMIN_LIVE_SECONDS", 0) or 0)
    if request is None or seconds <= 0 or popup or request.method != "GET" or is_live_refresh(request):
        return 0
    user = getattr(request, "user", None)
    return seconds if user is not None and user.is_authenticated else 0


@register.inclusion_tag("admin/live.html", takes_context=True)
def live_script(context: template.Context) -> dict[str, Any]:
    """The live pages' script and its pause control, when this page is live."""
    return {"live_seconds": live_seconds(context.get("request"), bool(context.get("is_popup")))}
