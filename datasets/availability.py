"""Is a dataset instance there? Stored answers first, then storage through fsspec."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime

import fsspec

from datasets.models import ANY_FLAG, AvailableInstance, uri_key
from kernel import storage

log = logging.getLogger(__name__)

Dependency = tuple[str, str]  # (uri, done_flag); an empty flag means the directory itself


def flag_path(uri: str, done_flag: str) -> str:
    """What must exist: the done-flag inside the instance's directory, or the directory."""
    return f"{uri.rstrip('/')}/{done_flag}" if done_flag else uri


def exists_on_storage(uri: str, done_flag: str) -> bool:
    """Ask storage (file://, plain paths, memory://, s3://, hdfs:// with their fsspec packages).

    A migrated dataset's URI is looked for where it maps to (STORAGE_URI_MAP); what is recorded
    as available keeps the URI the coordinator names.
    """
    target = storage.map_uri(flag_path(uri, done_flag))
    try:
        fs, path = fsspec.core.url_to_fs(target)
        return bool(fs.exists(path))
    except (OSError, ValueError, ImportError) as exc:
        log.warning("cannot check %s: %s", target, exc)
        return False


def recorded(dependencies: Iterable[Dependency]) -> set[Dependency]:
    """Those of the dependencies recorded as available (for their done-flag, or announced for any), in one query."""
    pending = [(uri, flag) for uri, flag in dependencies if not uri.startswith("${")]
    wanted = [uri_key(u, f) for u, f in pending] + [uri_key(u, ANY_FLAG) for u, _ in pending]
    known = set(AvailableInstance.objects.filter(key__in=wanted).values_list("key", flat=True)) if wanted else set()
    return {(uri, flag) for uri, flag in pending if uri_key(uri, flag) in known or uri_key(uri, ANY_FLAG) in known}


def still_missing(dependencies: Iterable[Dependency], now: datetime) -> list[Dependency]:
    """The dependencies not yet available; positive storage answers are recorded for everyone."""
    dependencies = list(dependencies)
    pending = [(uri, flag) for uri, flag in dependencies if not uri.startswith("${")]
    deferred = [(uri, flag) for uri, flag in dependencies if uri.startswith("${")]
    known = recorded(pending)
    missing: list[Dependency] = []
    found: list[AvailableInstance] = []
    for uri, flag in pending:
        if (uri, flag) in known:
            continue
        if exists_on_storage(uri, flag):
            found.append(AvailableInstance(key=uri_key(uri, flag), uri=uri, done_flag=flag, available_at=now, source="storage"))
        else:
            missing.append((uri, flag))
    AvailableInstance.objects.bulk_create(found, ignore_conflicts=True)
    return missing + deferred


def on_storage(uri: str, done_flag: str, now: datetime) -> bool:
    """Storage's answer for one instance not recorded as available; a positive answer is recorded for everyone."""
    if not exists_on_storage(uri, done_flag):
        return False
    AvailableInstance.objects.bulk_create([AvailableInstance(
        key=uri_key(uri, done_flag), uri=uri, done_flag=done_flag, available_at=now, source="storage",
    )], ignore_conflicts=True)
    return True


def is_available(uri: str, done_flag: str, now: datetime) -> bool:
    """One instance: a stored answer, else storage (a positive answer is stored for everyone)."""
    return not still_missing([(uri, done_flag)], now)


def normalize_uri(uri: str) -> str:
    """An announced URI as materialized URIs are written: no trailing slash."""
    return uri.strip().rstrip("/") or uri.strip()


def announce(uri: str, now: datetime, *, user_id: int | None = None, source: str = "event") -> bool:
    """Record an instance as available whatever done-flag is asked for (a producer told us); True when new.

    `source` says which producer: "event" (the API) or "output" (a succeeded coordinator action).
    """
    uri = normalize_uri(uri)
    key = uri_key(uri, ANY_FLAG)
    existed = AvailableInstance.objects.filter(key=key).exists()
    AvailableInstance.objects.bulk_create(
        [AvailableInstance(key=key, uri=uri, done_flag=ANY_FLAG, available_at=now, source=source, announced_by_id=user_id)],
        ignore_conflicts=True,
    )
    return not existed
