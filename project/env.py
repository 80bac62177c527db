"""Typed readers for settings taken from the environment, and DATABASE_URL parsing."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

N = TypeVar("N", int, float)


class ConfigurationError(ValueError):
    """A setting in the environment cannot be understood."""


def env_str(name: str, default: str) -> str:
    """Return the variable's value, or the default when unset or empty."""
    value = os.environ.get(name, "")
    return value if value != "" else default


def env_bool(name: str, default: bool) -> bool:
    """Read a boolean: 1/true/yes/on or 0/false/no/off (any case)."""
    raw = os.environ.get(name, "").strip().lower()
    if raw == "":
        return default
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off"}:
        return False
    raise ConfigurationError(f"{name}={raw!r} is not a boolean (use true or false)")


def env_int(name: str, default: int) -> int:
    """Read an integer, refusing anything that is not one."""
    return _env_number(name, default, int, "an integer")


def env_float(name: str, default: float) -> float:
    """Read a number (seconds, say), refusing anything that is not one."""
    return _env_number(name, default, float, "a number")


def _env_number(name: str, default: N, convert: Callable[[str], N], what: str) -> N:
    raw = os.environ.get(name, "").strip()
    if raw == "":
        return default
    try:
        return convert(raw)
    except ValueError as exc:
        raise ConfigurationError(f"{name}={raw!r} is not {what}") from exc


def env_list(name: str, default: list[str]) -> list[str]:
    """Read a comma-separated list, dropping blanks."""
    raw = os.environ.get(name, "")
    if raw.strip() == "":
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_uri_map(name: str) -> dict[str, str]:
    """Read `from=to,from2=to2` URI prefix pairs (kernel.storage.map_uri): each side a URI with `://`.

    A target lying under a source would map twice (a chain): refused, so mapping is done once.
    """
    result: dict[str, str] = {}
    for item in env_list(name, []):
        source, sep, target = (part.strip() for part in item.partition("="))
        if not sep or "://" not in source or "://" not in target:
            raise ConfigurationError(f"{name}: {item!r} is not from=to with a URI on each side (hdfs://nn:8020=file:///srv/hdfs)")
        source = source if source.endswith("://") else source.rstrip("/")
        if source in result:
            raise ConfigurationError(f"{name}: {source!r} is mapped twice")
        result[source] = target
    for source, target in result.items():
        for other in result:
            if target == other or target.startswith(other if other.endswith("/") else other + "/"):
                raise ConfigurationError(
                    f"{name}: the target {target!r} of {source!r} lies under the mapped prefix {other!r} (map each URI once)"
                )
    return result


# Oozie's processing time zone is UTC or a fixed GMT offset (coordinator spec 4.2), never a
# zone with DST rules: nominal times would otherwise shift with the seasons.
_PROCESSING_TZ = re.compile(r"^(?:UTC|GMT|GMT[+-](?P<h>\d{1,2})(?::?(?P<m>\d{2}))?)$")


def env_processing_timezone(name: str, default: str) -> str:
    """Read the processing time zone: `UTC`, or a fixed offset such as `GMT+05:30`."""
    value = env_str(name, default).strip()
    match = _PROCESSING_TZ.match(value)
    if match is None or int(match["h"] or 0) > 23 or int(match["m"] or 0) > 59:
        raise ConfigurationError(
            f"{name}={value!r} is not a processing time zone (use UTC or a fixed offset such as GMT+05:30)"
        )
    return value


def parse_database_url(url: str, base_dir: Path) -> dict[str, Any]:
    """Turn a DATABASE_URL (sqlite:///path or postgres://...) into a Django DATABASES entry.

    SQLite runs in WAL mode with immediate transactions, so writers queue on the
    database lock instead of failing half-way through a transaction.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    options = dict(parse_qsl(parts.query))
    if scheme == "sqlite":
        raw_path = unquote(parts.path)
        # sqlite:///relative/x.db is relative to the project; sqlite:////abs/x.db is absolute.
        path = raw_path[1:] if raw_path.startswith("//") else raw_path.lstrip("/")
        if path in {"", ":memory:"}:
            raise ConfigurationError("DATABASE_URL: give SQLite a file path, not an in-memory database")
        db_path = Path(path)
        if not db_path.is_absolute():
            db_path = base_dir / db_path
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(db_path),
            "CONN_MAX_AGE": int(options.get("conn_max_age", "600")),
            "CONN_HEALTH_CHECKS": True,
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": int(options.get("timeout", "30")),
                "init_command": (
                    "PRAGMA journal_mode=WAL;"
                    "PRAGMA synchronous=NORMAL;"
                    "PRAGMA busy_timeout=30000;"
                    "PRAGMA foreign_keys=ON;"
                ),
            },
            "TEST": {"NAME": str(db_path.with_name(db_path.stem + "_test" + db_path.suffix))},
        }
    if scheme in {"postgres", "postgresql", "pgsql"}:
        name = unquote(parts.path.lstrip("/"))
        if not name:
            raise ConfigurationError("DATABASE_URL: the PostgreSQL URL names no database")
        entry: dict[str, Any] = {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": unquote(parts.hostname or ""),
            "PORT": str(parts.port or ""),
            "CONN_MAX_AGE": int(options.pop("conn_max_age", "60")),
            "CONN_HEALTH_CHECKS": True,
            "OPTIONS": options,
        }
        return entry
    raise ConfigurationError(
        f"DATABASE_URL scheme {scheme!r} is not supported (use sqlite:/// or postgres://)"
    )
