"""The HTTP surface of the skeleton: health, admin, API root, schema."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import OperationalError
from django.db.models.query import QuerySet
from django.test import Client

from tests.coordinators.api.factories import token, user
from tests.oozieapi.client import basic

pytestmark = pytest.mark.django_db


def test_healthz_names_a_broker_that_is_down(client: Client, settings: object) -> None:
    """With Redis unreachable /healthz answers 503 and says the broker is down."""
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # type: ignore[attr-defined]
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["database"] == "ok"
    assert body["broker"].startswith("down")


def test_healthz_ok_with_a_real_redis(client: Client, settings: object, redis_url: str) -> None:
    """With the database and a real Redis up, /healthz answers 200 with both ok."""
    settings.CELERY_BROKER_URL = redis_url  # type: ignore[attr-defined]
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"database": "ok", "broker": "ok"}


def test_admin_login_page_is_served(client: Client) -> None:
    """/admin/ redirects anonymous users to the login page, which renders."""
    response = client.get("/admin/", follow=True)
    assert response.status_code == 200
    assert b"Log in" in response.content
    assert b"Scheduler operations" in response.content  # templates/admin/base_site.html


def test_api_root_needs_authentication(client: Client, django_user_model: type[User]) -> None:
    """Anonymous calls to /api/v1/ are refused; an authenticated user sees the root."""
    assert client.get("/api/v1/").status_code in (401, 403)
    user = django_user_model.objects.create_user(username="ann", password="pw-ann-123456")
    client.force_login(user)
    response = client.get("/api/v1/")
    assert response.status_code == 200
    assert isinstance(response.json(), dict)


def test_openapi_schema_is_served(client: Client, django_user_model: type[User]) -> None:
    """/api/schema/ returns an OpenAPI 3 document."""
    user = django_user_model.objects.create_user(username="bob", password="pw-bob-123456")
    client.force_login(user)
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    assert response.json()["openapi"].startswith("3.")


@pytest.mark.parametrize(
    ("path", "oozie"),
    [pytest.param("/api/v1/coordinator-jobs/", False, id="native-api"), pytest.param("/oozie/v2/jobs", True, id="oozie-api")],
)
def test_a_request_that_lost_the_database_gets_503_with_retry_after(
    path: str, oozie: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database gone mid-request (a PostgreSQL restart) is a 503 with Retry-After (E0603 under /oozie/), not a 500."""
    account = user("outage")
    auth = basic(account) if oozie else f"Token {token(account)}"

    def gone(*args: object, **kwargs: object) -> None:
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(QuerySet, "count", gone)
    monkeypatch.setattr(QuerySet, "_fetch_all", gone)
    response = Client(headers={"Authorization": auth}).get(path)
    assert response.status_code == 503 and response["Retry-After"] == "5"
    if oozie:
        assert response["oozie-error-code"] == "E0603"
        assert "the database is unavailable" in response["oozie-error-message"]
    else:
        assert response.json() == {"detail": "the database is unavailable; retry shortly"}
