"""How `manage.py up` starts Flower: behind a login by default, never with a password in argv.

Flower 2.2 reads each of its options from an environment variable named `FLOWER_<OPTION>`
(`flower/command.py`, `apply_env_options`; a multiple option such as `basic_auth` is split on
commas), and the command line overrides the environment. The credentials therefore reach Flower
through its own environment, which only its user can read (`/proc/<pid>/environ` is 0400),
and never through its argv, which `ps` shows to every user of the host. The decision and its
limits are in docs/adr/0028-flower-authentication.md.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from project.launcher import LauncherError

#: The file under VAR_DIR holding the generated credentials, `admin:<password>`, mode 0600.
AUTH_FILE_NAME = "flower.auth"
#: The user of the generated credentials.
GENERATED_USER = "admin"
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


@dataclass(frozen=True)
class FlowerChild:
    """What the launcher runs for Flower: an argv free of secrets, the environment it adds, the login.

    `url` is where a browser on this host finds it; `env` holds the authentication options for the Flower child alone (the other children never
    see them); `login` says how to log in without ever containing a password; `new_password` is
    set only on the call that generated it, so the launcher can show it once.
    """

    argv: tuple[str, ...]
    url: str
    env: dict[str, str] = field(default_factory=dict)
    login: str = ""
    new_password: str | None = None


def _enabled(raw: str | None, name: str) -> bool:
    """Read an on/off variable, refusing anything else (a typo must not open Flower)."""
    value = (raw or "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise LauncherError(f"{name}={raw!r} is not a boolean (use true or false)")


def parse_basic_auth(value: str, source: str) -> str:
    """Normalise `user:password[,user2:password2]` (Flower's format), or raise naming `source`.

    The error never repeats the value: it is a secret. Blanks around entries are dropped
    because Flower splits on commas without stripping, so `a:x, b:y` would otherwise give
    user ` b` a login nobody can type.
    """
    entries = [entry.strip() for entry in value.split(",")]
    for number, entry in enumerate(entries, 1):
        user, colon, password = entry.partition(":")
        if not (user.strip() and colon and password):
            raise LauncherError(
                f"{source}: entry {number} is not user:password (the format is "
                "user:password[,user2:password2]; a password may not contain a comma)"
            )
    return ",".join(entries)


def _users(credentials: str) -> str:
    """The user names in normalised credentials, for messages."""
    return ", ".join(entry.partition(":")[0] for entry in credentials.split(","))


def _read_auth_file(path: Path) -> str:
    """The credentials stored in path, its mode tightened to 0600 if someone loosened it."""
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        # A copy made with the wrong umask must not stay readable by the whole host.
        path.chmod(0o600)
    content = path.read_text().strip()
    if not content:
        raise LauncherError(f"{path} is empty: delete it to generate a new Flower password")
    return parse_basic_auth(content, str(path))


def ensure_auth_file(path: Path) -> tuple[str, str | None]:
    """The credentials in path, creating it first (user admin, a random password, mode 0600).

    Returns the credentials and the password when this call generated it (None when the file
    was already there), so the password is shown on the first run only. The file is written
    in full under a temporary name and linked into place, so it is never visible half-written
    or readable by others, and two launchers starting at once agree on one password.
    """
    try:
        return _read_auth_file(path), None
    except FileNotFoundError:
        pass
    password = secrets.token_urlsafe(24)  # 192 bits, and never a ':' or ',' (Flower's separators)
    credentials = f"{GENERATED_USER}:{password}"
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # 0600
    try:
        with os.fdopen(descriptor, "w") as out:
            out.write(credentials + "\n")
        try:
            os.link(temporary, path)
        except FileExistsError:
            return _read_auth_file(path), None  # another launcher was first: use its password
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
    return credentials, password


def flower_child(
    *,
    python: str,
    port: int,
    var_dir: Path,
    address: str = "127.0.0.1",
    basic_auth: str | None = None,
    oauth: str | None = None,
    unauthenticated: str | None = None,
) -> FlowerChild:
    """Flower's argv, environment and login; refuses a Flower without login unless told it is fine.

    `basic_auth`, `oauth` and `unauthenticated` are the values of FLOWER_BASIC_AUTH,
    FLOWER_AUTH and FLOWER_UNAUTHENTICATED (None when unset). In order: FLOWER_BASIC_AUTH
    credentials; else Flower's OAuth (FLOWER_AUTH, with Flower's own FLOWER_OAUTH2_* and
    FLOWER_AUTH_PROVIDER); else, when FLOWER_UNAUTHENTICATED is true (an authenticating proxy
    in front), no login; else, when FLOWER_BASIC_AUTH is set but empty, a refusal; else the
    credentials in VAR_DIR/flower.auth, generated on the first run.
    """
    open_to_all = _enabled(unauthenticated, "FLOWER_UNAUTHENTICATED")
    argv = (
        python,
        "-m",
        "celery",
        "-A",
        "project",
        "flower",
        f"--port={port}",
        f"--address={address}",
        f"--db={var_dir / 'flower.db'}",
        "--persistent=True",
    )
    host = "127.0.0.1" if address in ("", "0.0.0.0", "::") else address  # noqa: S104 - compared, not bound
    url = f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"
    if basic_auth is not None and basic_auth.strip():
        credentials = parse_basic_auth(basic_auth, "FLOWER_BASIC_AUTH")
        return FlowerChild(
            argv,
            url,
            {"FLOWER_BASIC_AUTH": credentials},
            f"{_users(credentials)}, from FLOWER_BASIC_AUTH",
        )
    if oauth and oauth.strip():
        return FlowerChild(argv, url, {"FLOWER_AUTH": oauth.strip()}, "OAuth, FLOWER_AUTH")
    if open_to_all:
        return FlowerChild(argv, url, {}, "none: FLOWER_UNAUTHENTICATED=true")
    if basic_auth is not None:
        raise LauncherError(
            "FLOWER_BASIC_AUTH is set but empty, which would run Flower without a login: set it "
            "to user:password, unset it to use a generated password, or set "
            "FLOWER_UNAUTHENTICATED=true if an authenticating proxy is in front of Flower"
        )
    path = var_dir / AUTH_FILE_NAME
    credentials, new_password = ensure_auth_file(path)
    return FlowerChild(
        argv,
        url,
        {"FLOWER_BASIC_AUTH": credentials},
        login=f"{_users(credentials)}, password in {path}",
        new_password=new_password,
    )
