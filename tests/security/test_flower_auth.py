"""Flower runs behind a login (docs/adr/0028): a real Flower started the way `manage.py up` starts
it refuses requests without the right credentials, which never appear in its argv; the
generated credentials file is private and reused; a Flower without a login needs
FLOWER_UNAUTHENTICATED=true."""

from __future__ import annotations

import base64
import os
import stat
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from project.flower_auth import AUTH_FILE_NAME, flower_child
from project.launcher import LauncherError, Supervisor, free_port
from tests.support.processes import ROOT, wait_until

FLOWER_VARIABLES = ("FLOWER_BASIC_AUTH", "FLOWER_AUTH", "FLOWER_UNAUTHENTICATED")


def _status(url: str, credentials: str | None = None) -> int:
    """The HTTP status of GET url, with HTTP basic credentials `user:password` when given."""
    request = urllib.request.Request(url)  # noqa: S310 - a loopback URL built by the test
    if credentials is not None:
        request.add_header(
            "Authorization", "Basic " + base64.b64encode(credentials.encode()).decode()
        )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0  # not listening yet


def _answers(url: str) -> bool:
    """True once something listens at url (any HTTP status)."""
    return _status(url) != 0


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own Flower variables must not leak into these tests."""
    for name in FLOWER_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.integration
def test_a_real_flower_needs_the_generated_credentials_and_never_shows_them_in_argv(
    tmp_path: Path, redis_url: str, clean_environment: None
) -> None:
    """Without FLOWER_BASIC_AUTH the launcher's code path generates admin's password once (file
    0600, the same on the next call); the real Flower it starts answers 401 without or with wrong
    credentials and 200 with the right ones, listens on loopback, and its argv holds no password."""
    first = flower_child(python=sys.executable, port=free_port(), var_dir=tmp_path)
    auth_file = tmp_path / AUTH_FILE_NAME
    assert first.new_password is not None and len(first.new_password) >= 32
    assert stat.S_IMODE(auth_file.stat().st_mode) == 0o600
    again = flower_child(python=sys.executable, port=free_port(), var_dir=tmp_path)
    assert again.new_password is None
    assert again.env == first.env == {"FLOWER_BASIC_AUTH": f"admin:{first.new_password}"}
    assert stat.S_IMODE(auth_file.stat().st_mode) == 0o600
    assert str(auth_file) in again.login and first.new_password not in again.login

    env = {k: v for k, v in os.environ.items() if k not in FLOWER_VARIABLES}
    env.update({"DJANGO_SETTINGS_MODULE": "project.settings", "REDIS_URL": redis_url})
    supervisor = Supervisor(env=env, log=lambda line: None, cwd=ROOT)
    try:
        child = supervisor.start("flower", again.argv, env=again.env)
        wait_until(lambda: _answers(again.url), 60, "Flower to listen", interval=0.2)
        assert _status(again.url) == 401
        assert _status(again.url, f"admin:{first.new_password}x") == 401
        assert _status(again.url, f"root:{first.new_password}") == 401
        assert _status(again.url, f"admin:{first.new_password}") == 200
        assert _status(again.url + "api/workers", f"admin:{first.new_password}") == 200

        assert child.process is not None
        argv = Path(f"/proc/{child.process.pid}/cmdline").read_bytes().split(b"\0")
        assert b"flower" in argv and b"--address=127.0.0.1" in argv
        assert not any(first.new_password.encode() in part for part in argv)
    finally:
        supervisor.stop_all(grace=10)


def test_flower_runs_without_a_login_only_when_told_so(tmp_path: Path) -> None:
    """FLOWER_BASIC_AUTH set but empty is refused unless FLOWER_UNAUTHENTICATED=true; a value
    that is not a boolean is refused too (a typo must not open Flower); nothing is generated."""
    with pytest.raises(LauncherError, match="FLOWER_UNAUTHENTICATED=true"):
        flower_child(python="python", port=5555, var_dir=tmp_path, basic_auth="")
    with pytest.raises(LauncherError, match="not a boolean"):
        flower_child(python="python", port=5555, var_dir=tmp_path, unauthenticated="sure")
    for allowed in ("true", "1", "yes"):
        child = flower_child(
            python="python", port=5555, var_dir=tmp_path, basic_auth="", unauthenticated=allowed
        )
        assert child.env == {} and "FLOWER_UNAUTHENTICATED" in child.login
    opened = flower_child(python="python", port=5555, var_dir=tmp_path, unauthenticated="true")
    assert opened.env == {}
    assert not (tmp_path / AUTH_FILE_NAME).exists()


def test_manage_py_up_refuses_a_flower_without_a_login_before_starting_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: Any, clean_environment: None
) -> None:
    """`manage.py up` with FLOWER_BASIC_AUTH emptied stops with a message naming
    FLOWER_UNAUTHENTICATED, before it migrates or starts any process."""
    settings.VAR_DIR = tmp_path
    monkeypatch.setenv("FLOWER_BASIC_AUTH", "")
    with pytest.raises(CommandError, match="FLOWER_UNAUTHENTICATED=true"):
        call_command("up", port=free_port(), flower_port=free_port())
    assert not (tmp_path / AUTH_FILE_NAME).exists() and not (tmp_path / "redis").exists()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("ops:s3cret", "ops:s3cret", id="one-user"),
        pytest.param(
            "ops:s3cret, audit:pa:ss", "ops:s3cret,audit:pa:ss", id="two-users-blank-dropped"
        ),
    ],
)
def test_configured_credentials_are_used_and_nothing_is_generated(
    tmp_path: Path, value: str, expected: str
) -> None:
    """FLOWER_BASIC_AUTH wins over the generated file: passed to Flower in its environment,
    normalised (Flower splits on commas without stripping), never in argv or the login text."""
    child = flower_child(python="python", port=5555, var_dir=tmp_path, basic_auth=value)
    assert child.env == {"FLOWER_BASIC_AUTH": expected}
    assert "s3cret" not in " ".join(child.argv) + child.login
    assert not (tmp_path / AUTH_FILE_NAME).exists()


@pytest.mark.parametrize(
    "value",
    ["admin-secretish", "secretish:", ":secretish", "a:secretish,,b:y"],
    ids=["no-colon", "no-password", "no-user", "empty-entry"],
)
def test_malformed_credentials_are_refused_without_echoing_them(tmp_path: Path, value: str) -> None:
    """A FLOWER_BASIC_AUTH Flower would misread stops the launch; the message never repeats it."""
    with pytest.raises(LauncherError, match="FLOWER_BASIC_AUTH: entry") as raised:
        flower_child(python="python", port=5555, var_dir=tmp_path, basic_auth=value)
    assert "secretish" not in str(raised.value)


def test_a_loosened_credentials_file_is_made_private_again(tmp_path: Path) -> None:
    """A credentials file someone made readable by others is tightened to 0600 when reused."""
    first = flower_child(python="python", port=5555, var_dir=tmp_path)
    (tmp_path / AUTH_FILE_NAME).chmod(0o644)
    again = flower_child(python="python", port=5555, var_dir=tmp_path)
    assert again.env == first.env and again.new_password is None
    assert stat.S_IMODE((tmp_path / AUTH_FILE_NAME).stat().st_mode) == 0o600


def test_oauth_counts_as_a_login(tmp_path: Path) -> None:
    """FLOWER_AUTH (Flower's OAuth) is a login: no password is generated, Flower gets FLOWER_AUTH."""
    child = flower_child(python="python", port=5555, var_dir=tmp_path, oauth=".*@example.com")
    assert child.env == {"FLOWER_AUTH": ".*@example.com"}
    assert not (tmp_path / AUTH_FILE_NAME).exists()


def test_only_the_flower_child_sees_its_credentials(tmp_path: Path) -> None:
    """A child's own env reaches it and its restarts only, never its siblings (web, workers)."""
    probe = "import os, sys; open(sys.argv[1], 'w').write(os.environ.get('FLOWER_BASIC_AUTH', '-'))"
    supervisor = Supervisor(env={"PATH": os.environ["PATH"]}, log=lambda line: None, cwd=tmp_path)
    try:
        supervisor.start(
            "flower",
            [sys.executable, "-c", probe, str(tmp_path / "flower")],
            env={"FLOWER_BASIC_AUTH": "a:b"},
        )
        supervisor.start("web", [sys.executable, "-c", probe, str(tmp_path / "web")])
        wait_until(
            lambda: all(
                (tmp_path / n).exists() and (tmp_path / n).read_text() for n in ("flower", "web")
            ),
            15,
            "probes",
        )
    finally:
        supervisor.stop_all(grace=5)
    assert (tmp_path / "flower").read_text() == "a:b"
    assert (tmp_path / "web").read_text() == "-"
