"""Lease renewal: one thread per worker process extends the leases this process holds."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from xcommands.choices import LEASED_STATUSES

log = logging.getLogger(__name__)


class _Renewer:
    """Renews every (command id, token) this process holds every lease/3 seconds."""

    def __init__(self) -> None:
        self._held: dict[int, int] = {}
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

    def hold(self, command_id: int, token: int) -> None:
        """Start renewing this lease."""
        with self._lock:
            self._held[command_id] = token
            self._ensure_thread()

    def release(self, command_id: int) -> None:
        """Stop renewing this lease."""
        with self._lock:
            self._held.pop(command_id, None)

    def _loop(self) -> None:
        lease = int(getattr(settings, "COMMAND_LEASE_SECONDS", 60))
        interval = max(0.2, lease / 3)
        while True:
            self._wake.wait(interval)
            with self._lock:
                held = dict(self._held)
            if held:
                self._renew(held, lease)

    def _renew(self, held: dict[int, int], lease: int) -> None:
        from xcommands.models import Command

        try:
            if connection.vendor == "sqlite":
                # Do not wait long behind a writer: the next beat will try again.
                with connection.cursor() as cursor:
                    cursor.execute("PRAGMA busy_timeout = 1000")
            expires = timezone.now() + timedelta(seconds=lease)
            for command_id, token in held.items():
                Command.objects.filter(
                    pk=command_id, fencing_token=token, status__in=LEASED_STATUSES
                ).update(lease_expires_at=expires)
        except DatabaseError as exc:
            log.warning("lease heartbeat failed (will retry): %s", exc)
            with contextlib.suppress(DatabaseError):
                connection.close()


_renewer = _Renewer()


@contextlib.contextmanager
def heartbeat(command_id: int, token: int) -> Iterator[None]:
    """Keep the command's lease alive while the block runs."""
    _renewer.hold(command_id, token)
    try:
        yield
    finally:
        _renewer.release(command_id)
