"""The root of the native API: links to every resource collection."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from project.api_urls import ROOT_LINKS


@extend_schema(responses={200: dict[str, str]})
@api_view(["GET"])
def api_root(request: Request) -> Response:
    """List the native API's collections (each app adds its own under /api/v1/)."""
    return Response(
        {name: reverse(route, request=request) for name, route in ROOT_LINKS.items()}
    )
