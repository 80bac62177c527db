"""Lease renewal: one thread per worker process extends every lease this process holds.

Commands hold leases (kind "command"); other apps register their own kinds (workflow nodes
run by the `workflows.run` task). Each kind renews its rows with a conditional UPDATE on
its fencing token, so a lease lost meanwhile is never extended.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from xcommands.choices import LEASED_STATUSES
from xcommands.sqlite_busy import set_timeout

log = logging.getLogger(__name__)

#: Renew the held (row id -> token) leases of one kind so they expire at the given time.
Renew = Callable[[dict[Any, int], datetime], None]


@dataclass(frozen=True)
class LeaseKind:
    """How one kind of lease is renewed, and how long it lasts."""

    renew: Renew
    seconds: Callable[[], float]


def _renew_commands(held: dict[Any, int], expires: datetime) -> None:
    from xcommands.models import Command

    for command_id, token in held.items():
        Command.objects.filter(pk=command_id, fencing_token=token, status__in=LEASED_STATUSES).update(
            lease_expires_at=expires
        )


_KINDS: dict[str, LeaseKind] = {
    "command": LeaseKind(_renew_commands, lambda: float(getattr(settings, "COMMAND_LEASE_SECONDS", 60))),
}


def register_kind(kind: str, renew: Renew, seconds: Callable[[], float]) -> None:
    """Let leases of another kind be held and renewed by the heartbeat thread."""
    _KINDS[kind] = LeaseKind(renew, seconds)


class _Renewer:
    """Renews every (kind, id, token) this process holds every lease/3 seconds."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, Hashable], int] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def _ensure_thread(self) -> None:
        # Threads do not survive fork: a prefork pool child starts its own.
        if self._thread is not None and self._thread.is_alive() and self._pid == os.getpid():
            return
        self._pid = os.getpid()
        self._thread = threading.Thread(target=self._loop, name="xcommands-heartbeat", daemon=True)
        self._thread.start()

    def hold(self, kind: str, row_id: Hashable, token: int) -> None:
        """Start renewing this lease."""
        if kind not in _KINDS:
            raise KeyError(f"no lease kind {kind!r} is registered")
        with self._lock:
            self._held[(kind, row_id)] = token
            self._ensure_thread()

    def release(self, kind: str, row_id: Hashable) -> None:
        """Stop renewing this lease."""
        with self._lock:
            self._held.pop((kind, row_id), None)

    def _interval(self, kinds: set[str]) -> float:
        return max(0.2, min((_KINDS[kind].seconds() for kind in kinds), default=60.0) / 3)

    def _loop(self) -> None:
        interval = self._interval(set(_KINDS))
        while True:
            self._wake.wait(interval)
            with self._lock:
                held = dict(self._held)
            if held:
                interval = self._interval({kind for kind, _ in held})
                self._renew(held)

    def _renew(self, held: dict[tuple[str, Hashable], int]) -> None:
        by_kind: dict[str, dict[Hashable, int]] = {}
        for (kind, row_id), token in held.items():
            by_kind.setdefault(kind, {})[row_id] = token
        try:
            if connection.vendor == "sqlite":
                # Do not wait long behind a writer: the next beat will try again.
                set_timeout(connection, 1000)
            now = timezone.now()
            for kind, rows in by_kind.items():
                lease = _KINDS[kind]
                lease.renew(rows, now + timedelta(seconds=lease.seconds()))
        except DatabaseError as exc:
            # The database may be restarting: drop the broken connection; the next beat reconnects.
            log.warning("lease heartbeat failed (will retry): %s", exc)
            with contextlib.suppress(DatabaseError):
                connection.close()


_renewer = _Renewer()


@contextlib.contextmanager
def lease(kind: str, row_id: Hashable, token: int) -> Iterator[None]:
    """Keep the lease of a row of the given kind alive while the block runs."""
    _renewer.hold(kind, row_id, token)
    try:
        yield
    finally:
        _renewer.release(kind, row_id)


def heartbeat(command_id: int, token: int) -> contextlib.AbstractContextManager[None]:
    """Keep the command's lease alive while the block runs."""
    return lease("command", command_id, token)
