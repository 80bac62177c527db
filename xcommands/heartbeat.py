"""Lease renewal: one thread per worker process extends every lease this process holds.

Commands hold leases (kind "command"); other apps register their own kinds (workflow nodes
run by the `workflows.run` task). Each kind renews its rows with a conditional UPDATE on
its fencing token, so a lease lost meanwhile is never extended.

`lost()` tells work running under a lease (a shell command) that it should stop: a renewal
found the row taken by someone else, or no renewal has been confirmed for a whole lease (a
database cut off: by now the lease has lapsed and the work may run again elsewhere).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Collection, Hashable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from xcommands.choices import LEASED_STATUSES
from xcommands.models import Command
from xcommands.sqlite_busy import set_timeout

log = logging.getLogger(__name__)

#: Renew the held (row id -> token) leases of one kind so they expire at the given time; the ids renewed.
Renew = Callable[[dict[Any, int], datetime], Collection[Any]]


@dataclass(frozen=True)
class LeaseKind:
    """How one kind of lease is renewed, and how long it lasts."""

    renew: Renew
    seconds: Callable[[], float]


def _renew_commands(held: dict[Any, int], expires: datetime) -> list[Any]:
    return [
        command_id for command_id, token in held.items()
        if Command.objects.filter(pk=command_id, fencing_token=token, status__in=LEASED_STATUSES).update(
            lease_expires_at=expires
        )
    ]


_KINDS: dict[str, LeaseKind] = {
    "command": LeaseKind(_renew_commands, lambda: float(settings.COMMAND_LEASE_SECONDS)),
}


def register_kind(kind: str, renew: Renew, seconds: Callable[[], float]) -> None:
    """Let leases of another kind be held and renewed by the heartbeat thread."""
    _KINDS[kind] = LeaseKind(renew, seconds)


class _Renewer:
    """Renews every (kind, id, token) this process holds every lease/3 seconds."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, Hashable], int] = {}
        #: When each held lease was last known to be ours (monotonic); None: someone else has it.
        self._confirmed: dict[tuple[str, Hashable], float | None] = {}
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
            self._confirmed[(kind, row_id)] = time.monotonic()  # just taken
            self._ensure_thread()

    def release(self, kind: str, row_id: Hashable) -> None:
        """Stop renewing this lease."""
        with self._lock:
            self._held.pop((kind, row_id), None)
            self._confirmed.pop((kind, row_id), None)

    def lost(self) -> bool:
        """Whether a lease this process holds is lost: taken by another, or unconfirmed for a whole lease."""
        now = time.monotonic()
        with self._lock:
            confirmed = dict(self._confirmed)
        return any(at is None or now - at >= _KINDS[kind].seconds() for (kind, _), at in confirmed.items())

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
            asked, now = time.monotonic(), timezone.now()
            for kind, rows in by_kind.items():
                lease = _KINDS[kind]
                renewed = set(lease.renew(rows, now + timedelta(seconds=lease.seconds())))
                with self._lock:
                    for row_id in rows:
                        if (kind, row_id) in self._confirmed:
                            self._confirmed[(kind, row_id)] = asked if row_id in renewed else None
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


def lost() -> bool:
    """Whether a lease held by this process is lost (see the module's docstring): stop the work it covers."""
    return _renewer.lost()


def heartbeat(command_id: int, token: int) -> contextlib.AbstractContextManager[None]:
    """Keep the command's lease alive while the block runs."""
    return lease("command", command_id, token)
