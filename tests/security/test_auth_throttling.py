"""Guessing passwords and tokens is throttled (kernel.auth_guard, kernel.throttles).

The rules checked here:

- AUTH_FAILURE_LIMIT failed credential checks from one client address within
  AUTH_FAILURE_WINDOW_SECONDS lock that address: every further attempt carrying credentials,
  the right ones too, gets 429 with Retry-After, on the native API (DRF Throttled), the Oozie
  API (E0501), /metrics and the admin login (a form error, no session).
- The lock lasts until the failures leave the window; another address is not affected; a
  success resets nothing, and successes below the limit are answered as before.
- AUTH_ACCOUNT_FAILURE_LIMIT failures naming one username from any addresses lock that
  username's password sign-ins; its API token keeps working.
- The client address is REMOTE_ADDR, or the right-most entry of AUTH_CLIENT_IP_HEADER; IPv6
  counts per /64.
- Each lockout is logged once at WARNING, without the secret; old rows are purged.
- Anonymous native API callers are throttled at API_ANON_RATE.
"""

from __future__ import annotations

import base64
import logging
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, RequestFactory
from django.utils import timezone

from kernel import auth_guard
from kernel.models import AuthFailure
from tests.coordinators.api.factories import token, user
from tests.oozieapi.client import basic

pytestmark = pytest.mark.django_db

LIMIT = 3
WINDOW = 600
ELSEWHERE = "192.0.2.77"  # another client's address (TEST-NET-1)


@pytest.fixture(autouse=True)
def small_limits(settings: Any) -> None:
    """Lock after LIMIT failures within WINDOW seconds; the per-account limit out of the way unless a test sets it."""
    settings.AUTH_FAILURE_LIMIT = LIMIT
    settings.AUTH_FAILURE_WINDOW_SECONDS = WINDOW
    settings.AUTH_ACCOUNT_FAILURE_LIMIT = 0
    settings.AUTH_CLIENT_IP_HEADER = ""


@pytest.fixture
def ann() -> User:
    """A user with a password and an API token."""
    return user("ann")


@pytest.fixture
def ops() -> User:
    """A staff user who may sign in to the admin."""
    return user("ops", staff=True)


def wrong_basic(name: str) -> str:
    """HTTP basic naming `name` with a wrong password."""
    return "Basic " + base64.b64encode(f"{name}:not-the-password".encode()).decode()


def later(seconds: float) -> None:
    """Move every stored failure `seconds` into the past (as if that much time went by)."""
    for failure in AuthFailure.objects.all():
        failure.at -= timedelta(seconds=seconds)
        failure.save(update_fields=["at"])


def admin_login(client: Client, username: str, password: str) -> Any:
    """POST the admin login form."""
    return client.post("/admin/login/", {"username": username, "password": password, "next": "/admin/"})


def signed_in(client: Client) -> bool:
    """Whether the client's session holds a signed-in user."""
    return "_auth_user_id" in client.session


# ---- the native API ------------------------------------------------------------------------


def test_native_api_locks_an_address_after_wrong_tokens(ann: User, caplog: pytest.LogCaptureFixture) -> None:
    """LIMIT wrong tokens: the right token is answered 429 with Retry-After; the lockout is logged once, no token in it."""
    client = Client()
    with caplog.at_level(logging.WARNING, logger="kernel.auth_guard"):
        for attempt in range(LIMIT):
            assert client.get("/api/v1/", headers={"Authorization": f"Token guess-{attempt}"}).status_code == 401
        response = client.get("/api/v1/", headers={"Authorization": f"Token {token(ann)}"})
        assert response.status_code == 429
        assert 0 < int(response["Retry-After"]) <= WINDOW
        assert "Too many failed sign-ins" in response.json()["detail"]
        client.get("/api/v1/", headers={"Authorization": "Token another-guess"})
    lockouts = [record for record in caplog.records if "lockout" in record.getMessage()]
    assert len(lockouts) == 1 and "127.0.0.1" in lockouts[0].getMessage()
    assert "guess" not in caplog.text and token(ann) not in caplog.text
    assert AuthFailure.objects.count() == LIMIT  # a refused attempt checks nothing and stores nothing


def test_failures_below_the_limit_and_successes_are_answered_as_before(ann: User, ops: User) -> None:
    """LIMIT-1 failures then the right credentials: 200 everywhere; successes never count, however many."""
    client = Client()
    for attempt in range(LIMIT - 1):
        client.get("/api/v1/", headers={"Authorization": f"Token guess-{attempt}"})
    for _ in range(3 * LIMIT):
        response = client.get("/api/v1/", headers={"Authorization": f"Token {token(ann)}"})
        assert response.status_code == 200 and "Retry-After" not in response
        assert client.get("/oozie/v2/jobs", headers={"Authorization": basic(ann)}).status_code == 200
    assert admin_login(client, "ops", "ops-password-123").status_code == 302
    assert AuthFailure.objects.count() == LIMIT - 1


def test_another_address_is_not_affected(ann: User) -> None:
    """A locked address does not lock its neighbours: another client's right token is answered 200."""
    for attempt in range(LIMIT):
        Client().get("/api/v1/", headers={"Authorization": f"Token guess-{attempt}"})
    assert Client().get("/api/v1/", headers={"Authorization": f"Token {token(ann)}"}).status_code == 429
    other = Client(REMOTE_ADDR=ELSEWHERE)
    assert other.get("/api/v1/", headers={"Authorization": f"Token {token(ann)}"}).status_code == 200


def test_a_success_resets_nothing(ann: User) -> None:
    """Failures interleaved with the attacker's own valid sign-ins still add up to a lock."""
    client = Client()
    for attempt in range(LIMIT):
        client.get("/api/v1/", headers={"Authorization": f"Token guess-{attempt}"})
        if attempt < LIMIT - 1:
            assert client.get("/api/v1/", headers={"Authorization": f"Token {token(ann)}"}).status_code == 200
    assert client.get("/api/v1/", headers={"Authorization": f"Token {token(ann)}"}).status_code == 429


# ---- the Oozie API and /metrics -------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["basic", "token", "bearer"])
def test_oozie_api_locks_an_address_after_wrong_credentials(ann: User, scheme: str) -> None:
    """LIMIT wrong basic passwords or tokens on /oozie/: the right ones get 429 E0501 with Retry-After; before, 401 E0500."""
    wrong = {"basic": wrong_basic("ann"), "token": "Token guess", "bearer": "Bearer guess"}[scheme]
    right = {"basic": basic(ann), "token": f"Token {token(ann)}", "bearer": f"Bearer {token(ann)}"}[scheme]
    client = Client()
    for _ in range(LIMIT):
        response = client.get("/oozie/v2/jobs", headers={"Authorization": wrong})
        assert (response.status_code, response["oozie-error-code"]) == (401, "E0500")
    response = client.get("/oozie/v2/jobs", headers={"Authorization": right})
    assert (response.status_code, response["oozie-error-code"]) == (429, "E0501")
    assert response["oozie-error-message"].startswith("E0501: ") and "Too many failed sign-ins" in response["oozie-error-message"]
    assert 0 < int(response["Retry-After"]) <= WINDOW
    assert list(AuthFailure.objects.values_list("scope", flat=True).distinct()) == ["oozie"]


def test_failures_count_across_surfaces(ann: User, ops: User) -> None:
    """One count per address: a wrong token, a wrong basic password and a wrong admin password lock every surface."""
    client = Client()
    client.get("/api/v1/", headers={"Authorization": "Token guess"})
    client.get("/oozie/v2/jobs", headers={"Authorization": wrong_basic("ann")})
    admin_login(client, "ops", "wrong")
    assert client.get("/oozie/v2/jobs", headers={"Authorization": basic(ann)}).status_code == 429
    assert client.get("/api/v1/", headers={"Authorization": f"Token {token(ann)}"}).status_code == 429
    assert admin_login(client, "ops", "ops-password-123").status_code == 429


def test_metrics_refuses_a_locked_address_even_the_right_metrics_token(settings: Any) -> None:
    """Wrong Bearer guesses at /metrics count; once locked, the right METRICS_TOKEN is answered 429 too."""
    settings.METRICS_TOKEN = "the-metrics-token"
    client = Client()
    for attempt in range(LIMIT):
        assert client.get("/metrics", headers={"Authorization": f"Bearer guess-{attempt}"}).status_code == 401
    response = client.get("/metrics", headers={"Authorization": "Bearer the-metrics-token"})
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    assert set(AuthFailure.objects.values_list("scope", flat=True)) == {"metrics"}


# ---- the admin login -----------------------------------------------------------------------


def test_admin_login_locks_refuses_the_right_password_and_unlocks_after_the_window(
    ops: User, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """LIMIT wrong passwords: the right one is refused (429, a form error, no session) until the window has passed."""
    client = Client()
    for _ in range(LIMIT):
        response = admin_login(client, "ops", "wrong")
        assert response.status_code == 200 and not signed_in(client)
    response = admin_login(client, "ops", "ops-password-123")
    assert response.status_code == 429 and int(response["Retry-After"]) > WINDOW - 60
    assert "Too many failed sign-ins from your address; try again in 10 minutes." in response.content.decode()
    assert not signed_in(client)
    assert client.get("/admin/").status_code == 302  # still sent to the login page

    # One second before the oldest counted failure leaves the window: still locked.
    start = timezone.now()
    monkeypatch.setattr(auth_guard, "now", lambda: start + timedelta(seconds=WINDOW - 1))
    assert admin_login(client, "ops", "ops-password-123").status_code == 429
    monkeypatch.setattr(auth_guard, "now", lambda: start + timedelta(seconds=WINDOW + 1))
    assert admin_login(client, "ops", "ops-password-123").status_code == 302
    assert signed_in(client)


def test_the_lock_slides_with_the_failures(ann: User) -> None:
    """The lock ends when enough failures have aged out, and a new failure locks again at once."""
    client = Client()
    for _ in range(LIMIT):
        client.get("/oozie/v2/jobs", headers={"Authorization": wrong_basic("ann")})
    later(WINDOW + 1)
    assert client.get("/oozie/v2/jobs", headers={"Authorization": basic(ann)}).status_code == 200
    assert client.get("/oozie/v2/jobs", headers={"Authorization": wrong_basic("ann")}).status_code == 401


# ---- the per-account limit ------------------------------------------------------------------


def test_the_account_limit_locks_a_username_guessed_from_many_addresses(
    settings: Any, ann: User, ops: User,
) -> None:
    """Failures naming one username from different addresses lock its password sign-ins everywhere; its token still works."""
    settings.AUTH_ACCOUNT_FAILURE_LIMIT = LIMIT
    for number in range(LIMIT):
        Client(REMOTE_ADDR=f"198.51.100.{number + 1}").get("/oozie/v2/jobs", headers={"Authorization": wrong_basic("ann")})
    fresh = Client(REMOTE_ADDR="203.0.113.9")
    response = fresh.get("/oozie/v2/jobs", headers={"Authorization": basic(ann)})
    assert (response.status_code, response["oozie-error-code"]) == (429, "E0501")
    assert "for this account" in response["oozie-error-message"]
    assert fresh.get("/oozie/v2/jobs", headers={"Authorization": f"Token {token(ann)}"}).status_code == 200
    assert fresh.get("/api/v1/", headers={"Authorization": f"Token {token(ann)}"}).status_code == 200
    # Another username from the same addresses is not locked.
    assert admin_login(fresh, "ops", "ops-password-123").status_code == 302


def test_the_account_limit_covers_the_admin_login(settings: Any, ops: User) -> None:
    """Admin sign-ins naming one username from many addresses lock it: the right password is refused with a form error."""
    settings.AUTH_ACCOUNT_FAILURE_LIMIT = LIMIT
    for number in range(LIMIT):
        admin_login(Client(REMOTE_ADDR=f"198.51.100.{number + 1}"), "ops", "wrong")
    client = Client(REMOTE_ADDR="203.0.113.9")
    response = admin_login(client, "ops", "ops-password-123")
    assert response.status_code == 429 and "Too many failed sign-ins for this account" in response.content.decode()
    assert not signed_in(client)


# ---- the client address, the log and the purge ----------------------------------------------


@pytest.mark.parametrize(
    ("header", "meta", "expected"),
    [
        pytest.param("", {"REMOTE_ADDR": "10.1.2.3", "HTTP_X_FORWARDED_FOR": "1.1.1.1"}, "10.1.2.3", id="remote-addr"),
        pytest.param("HTTP_X_FORWARDED_FOR", {"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": "6.6.6.6, 8.8.4.4"},
                     "8.8.4.4", id="proxy-right-most"),
        pytest.param("X-Forwarded-For", {"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": "8.8.4.4"}, "8.8.4.4",
                     id="header-name-spelling"),
        pytest.param("HTTP_X_FORWARDED_FOR", {"REMOTE_ADDR": "10.0.0.1"}, "10.0.0.1", id="proxy-header-missing"),
        pytest.param("HTTP_X_FORWARDED_FOR", {"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": "junk"}, "10.0.0.1",
                     id="proxy-header-garbage"),
        pytest.param("", {"REMOTE_ADDR": "2001:db8:1:2:aaaa::1"}, "2001:db8:1:2::/64", id="ipv6-per-64"),
        pytest.param("", {"REMOTE_ADDR": "::ffff:192.0.2.1"}, "192.0.2.1", id="ipv4-mapped"),
    ],
)
def test_the_client_address(settings: Any, header: str, meta: dict[str, str], expected: str) -> None:
    """REMOTE_ADDR unless AUTH_CLIENT_IP_HEADER names the proxy's header (right-most entry); IPv6 per /64."""
    settings.AUTH_CLIENT_IP_HEADER = header
    request = RequestFactory().get("/")
    request.META.update(meta)
    assert auth_guard.client_ip(request) == expected


def test_a_forged_forwarded_for_does_not_escape_the_lock(settings: Any, ann: User) -> None:
    """Behind a proxy, a client writing its own X-Forwarded-For entries is still counted by the proxy's right-most one."""
    settings.AUTH_CLIENT_IP_HEADER = "HTTP_X_FORWARDED_FOR"
    for attempt in range(LIMIT):
        Client().get("/api/v1/", headers={"Authorization": "Token guess", "X-Forwarded-For": f"10.9.9.{attempt}, 203.0.113.5"})
    response = Client().get("/api/v1/", headers={"Authorization": f"Token {token(ann)}", "X-Forwarded-For": "1.2.3.4, 203.0.113.5"})
    assert response.status_code == 429


def test_failures_older_than_the_window_are_purged(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure's insert deletes the rows older than the window (at most once per PURGE_SECONDS per process)."""
    old = AuthFailure.objects.create(scope="api", client_ip="10.0.0.1", at=timezone.now() - timedelta(seconds=WINDOW + 5))
    monkeypatch.setattr(auth_guard, "_last_purge", float("-inf"))
    Client().get("/api/v1/", headers={"Authorization": "Token guess"})
    assert not AuthFailure.objects.filter(pk=old.pk).exists()
    assert AuthFailure.objects.count() == 1


# ---- anonymous rate ------------------------------------------------------------------------


def test_anonymous_native_api_calls_are_throttled_at_api_anon_rate(settings: Any) -> None:
    """API_ANON_RATE=3/minute: the fourth anonymous call within the minute is answered 429 with Retry-After."""
    settings.API_ANON_RATE = "3/minute"
    client = Client()
    for _ in range(3):
        assert client.get("/api/docs/").status_code == 200
    response = client.get("/api/docs/")
    assert response.status_code == 429 and 0 < int(response["Retry-After"]) <= 60
    assert Client(REMOTE_ADDR=ELSEWHERE).get("/api/docs/").status_code == 200


def test_users_are_not_throttled_unless_api_user_rate_is_set(settings: Any, ann: User) -> None:
    """API_USER_RATE empty (the default): a user's calls are never throttled; set, they are."""
    settings.API_ANON_RATE = "1/minute"
    client = Client(headers={"Authorization": f"Token {token(ann)}"})
    assert all(client.get("/api/v1/").status_code == 200 for _ in range(5))
    settings.API_USER_RATE = "2/minute"
    assert [client.get("/api/v1/").status_code for _ in range(3)] == [200, 200, 429]
