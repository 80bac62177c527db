"""`manage.py user`: create users (job admins with --admin) and print their API tokens, as the README's steps use them."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from kernel.permissions import is_admin

pytestmark = pytest.mark.django_db


def run(*args: str, stdin: str | None = None, monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[str, str]:
    if stdin is not None:
        assert monkeypatch is not None
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    out, err = io.StringIO(), io.StringIO()
    call_command("user", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def refused(*args: str) -> str:
    with pytest.raises(CommandError) as caught:
        run(*args)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_add_creates_a_plain_user_without_password_or_token() -> None:
    """A plain user: no staff, no superuser, no usable password, no token unless asked; not a job admin."""
    out, _ = run("add", "ann")
    ann = User.objects.get(username="ann")
    assert "created user 'ann'" in out and "tokens only" in out
    assert not (ann.is_staff or ann.is_superuser or ann.has_usable_password() or is_admin(ann))
    assert not Token.objects.filter(user=ann).exists()


def test_add_admin_with_token_prints_only_the_key_which_authenticates() -> None:
    """`--admin --token`: a job admin whose token (the only thing on stdout) opens the API, as `TOKEN=$(...)` expects."""
    out, err = run("add", "ops", "--admin", "--token")
    ops = User.objects.get(username="ops")
    key = out.strip()
    assert out == key + "\n" and key == Token.objects.get(user=ops).key and len(key) == 40
    assert "created job admin" in err
    assert ops.is_superuser and ops.is_staff and is_admin(ops)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/v1/coordinator-jobs/").status_code == 200
    client.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    assert client.get("/api/v1/coordinator-jobs/").status_code == 401


def test_password_stdin_sets_the_password(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--password-stdin` reads the first line as the password (for HTTP basic and the admin site)."""
    run("add", "bob", "--password-stdin", stdin="s3cret-Passw0rd-long\nignored\n", monkeypatch=monkeypatch)
    bob = User.objects.get(username="bob")
    assert bob.check_password("s3cret-Passw0rd-long") and not bob.is_staff


@pytest.mark.parametrize("stdin", ["\n", ""], ids=["empty-line", "no-input"])
def test_empty_password_is_refused_and_nothing_is_created(monkeypatch: pytest.MonkeyPatch, stdin: str) -> None:
    """An empty password from stdin is refused before anything is stored."""
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    with pytest.raises(CommandError, match="empty password"):
        call_command("user", "add", "carl", "--password-stdin", stdout=io.StringIO(), stderr=io.StringIO())
    assert not User.objects.filter(username="carl").exists()


def test_existing_name_is_refused_and_nothing_changes() -> None:
    """Adding a name that exists says so and leaves the user, its password and its token as they were."""
    ann = User.objects.create_user("ann", password="first-password-123")
    token = Token.objects.create(user=ann)
    message = refused("add", "ann", "--admin", "--token")
    assert "exists already" in message and "nothing changed" in message
    ann.refresh_from_db()
    assert not ann.is_superuser and ann.check_password("first-password-123")
    assert list(Token.objects.filter(user=ann).values_list("key", flat=True)) == [token.key]


@pytest.mark.parametrize("name", ["bad name", "semi;colon", "x" * 151], ids=["space", "semicolon", "too-long"])
def test_invalid_names_are_refused(name: str) -> None:
    """Names the user model would not accept are refused in one line; nothing is stored."""
    assert "user name" in refused("add", name)
    assert not User.objects.exists()


def test_token_prints_an_existing_users_token_and_refuses_unknown_users() -> None:
    """`user token NAME` prints the same key every time (created on first ask); an unknown user is refused."""
    User.objects.create_user("ann")
    first, _ = run("token", "ann")
    again, _ = run("token", "ann")
    assert first == again and first.strip() == Token.objects.get(user__username="ann").key
    assert "no user 'nobody'" in refused("token", "nobody")
