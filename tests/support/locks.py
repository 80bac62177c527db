"""Holding a row lock from another connection, as a running command does, for the length of a block."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection, transaction


@contextmanager
def row_locked(queryset: Any) -> Iterator[None]:
    """Lock the queryset's rows (`SELECT ... FOR UPDATE`) in a second transaction while the block runs (PostgreSQL)."""
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                list(queryset.select_for_update())
                locked.set()
                release.wait(30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(10), "the row lock was not taken"
        yield
    finally:
        release.set()
        holder.join(30)
