"""An Oozie client's view of the service: HTTP basic or token auth, Oozie's URLs, its error headers."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.models import User
from django.test import Client

from oozie.definitions import serialize_hadoop_configuration
from tests.coordinators.api.factories import token


def basic(account: User) -> str:
    """The Authorization header of HTTP basic with the factory's password."""
    raw = f"{account.username}:{account.username}-password-123".encode()
    return "Basic " + base64.b64encode(raw).decode()


class Oozie:
    """Speaks to /oozie/ as `account` (basic auth by default, token auth with token=True, anonymous for None)."""

    def __init__(self, account: User | None, *, use_token: bool = False, version: str = "v2") -> None:
        self.client = Client()
        self.version = version
        self.headers: dict[str, str] = {}
        if account is not None:
            self.headers["Authorization"] = f"Token {token(account)}" if use_token else basic(account)

    def get(self, path: str, **params: Any) -> Any:
        return self.client.get(f"/oozie/{self.version}/{path}", params, headers=self.headers)

    def put(self, path: str, **params: Any) -> Any:
        return self.client.put(f"/oozie/{self.version}/{path}?{urlencode(params)}", headers=self.headers)

    def submit(self, properties: dict[str, str], action: str | None = None, content_type: str = "application/xml;charset=UTF-8") -> Any:
        query = f"?action={action}" if action else ""
        body = serialize_hadoop_configuration(properties)
        return self.client.post(f"/oozie/{self.version}/jobs{query}", body, content_type=content_type, headers=self.headers)


def error_of(response: Any) -> tuple[int, str, str]:
    """(status, oozie-error-code, oozie-error-message) of a refusal."""
    return response.status_code, response.headers.get("oozie-error-code", ""), response.headers.get("oozie-error-message", "")
