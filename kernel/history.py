"""Status history for every kind of object: who is changing statuses now, and the record of each change.

The actor is a context variable, so threads never see each other's: the command engine names
the running command (`<command> (<user who queued it>)`), a web request its user, a worker or
a service wraps its work in `acting_as(...)`. The name may be resolved lazily (`resolve`): the
query that finds a command's user runs once, on the first change the command records, never
for a command that changes no status.

A change is recorded in the transaction that saves it: one INSERT per change
(`record_status`), one bulk INSERT for a bulk update (`record_statuses`), or implicitly by a
model with `RecordsStatus` when `save()` writes a new status.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from kernel.models import StatusRecord


@dataclass
class Actor:
    """A name, or a way to find it (`resolve`, called once, its answer kept)."""

    name: str
    resolve: Callable[[], str] | None = None
    resolved: str | None = None


_actor: ContextVar[Actor | None] = ContextVar("kernel_status_actor", default=None)


def current_actor() -> str:
    """The name status changes are recorded under now ('' when nobody said)."""
    actor = _actor.get()
    if actor is None:
        return ""
    if actor.resolved is None:
        actor.resolved = (actor.resolve() if actor.resolve is not None else "") or actor.name
    return actor.resolved


def act_as(name: str, resolve: Callable[[], str] | None = None) -> None:
    """Name the actor until the next one is named (a command names itself when it loads)."""
    _actor.set(Actor(name, resolve))


@contextmanager
def acting_as(name: str, resolve: Callable[[], str] | None = None) -> Iterator[None]:
    """Name the actor for the block, then restore the previous one."""
    token = _actor.set(Actor(name, resolve))
    try:
        yield
    finally:
        _actor.reset(token)


#: A status change to record: (kind, object id, parent id, from, to, at, reason).
Change = tuple[str, Any, Any, str, str, datetime, str]


def _row(change: Change, by: str) -> StatusRecord:
    kind, object_id, parent_id, old, new, at, reason = change
    return StatusRecord(kind=kind, object_id=str(object_id)[:140], parent_id=str(parent_id or "")[:140],
                        from_status=old or "", to_status=new, at=at, by=by[:200], reason=(reason or "")[:4000])


def record_status(kind: str, object_id: Any, old: str, new: str, *, parent: Any = "", reason: str = "",
                  at: datetime | None = None) -> None:
    """Record one status change (one INSERT, in the caller's transaction); nothing when the status did not move."""
    if old == new:
        return
    _row((kind, object_id, parent, old, new, at or timezone.now(), reason), current_actor()).save(force_insert=True)


def record_statuses(changes: Iterable[Change]) -> None:
    """Record many changes in one INSERT (a bulk update's); unmoved statuses are left out."""
    rows = status_rows(changes)
    if rows:
        StatusRecord.objects.bulk_create(rows, batch_size=500)


def status_rows(changes: Iterable[Change]) -> list[StatusRecord]:
    """The records of these changes under the current actor, unsaved (a hot path writes them in its own batch); unmoved ones left out."""
    moved = [change for change in changes if change[3] != change[4]]
    by = current_actor() if moved else ""
    return [_row(change, by) for change in moved]


def status_records(kind: str, object_id: Any, limit: int, *, children: str = "") -> list[StatusRecord]:
    """The newest `limit` changes of one object (and of its `children` kind: a workflow's nodes), oldest first."""
    found = Q(kind=kind, object_id=str(object_id))
    if children:
        found |= Q(kind=children, parent_id=str(object_id))
    rows = list(StatusRecord.objects.filter(found).order_by("-at", "-id")[:limit])
    return rows[::-1]


class RecordsStatus(models.Model):
    """A model whose `save()` records a new status (from the status it was loaded or last saved with).

    `status_kind` names the kind; `status_parent()` and `status_reason()` fill the record. A
    `save(update_fields=[...])` without "status" records nothing; a new row records nothing
    (its first status is its creation). A caller may say why with `note_status_reason()`.
    """

    status_kind: ClassVar[str] = ""
    status: Any

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Save; a new status is recorded in the same transaction (no savepoint inside the caller's)."""
        fields = kwargs.get("update_fields")
        before = self.__dict__.get("_loaded_status")
        moved = before is not None and self.status != before and (fields is None or "status" in fields)
        if not moved:
            super().save(*args, **kwargs)
        else:
            with transaction.atomic(savepoint=False):
                super().save(*args, **kwargs)
                reason = self.__dict__.pop("_status_reason", "") or self.status_reason()
                record_status(self.status_kind, self.pk, str(before), self.status, parent=self.status_parent(), reason=reason)
        if fields is None or "status" in fields:
            self.__dict__["_loaded_status"] = self.__dict__.get("status")

    @classmethod
    def from_db(cls, *args: Any, **kwargs: Any) -> Any:
        """Remember the status as loaded, so save() can tell a change."""
        instance = super().from_db(*args, **kwargs)
        instance.__dict__["_loaded_status"] = instance.__dict__.get("status")
        return instance

    def refresh_from_db(self, *args: Any, **kwargs: Any) -> None:
        """Reload, and take the reloaded status as the one to compare the next save() with."""
        super().refresh_from_db(*args, **kwargs)
        self.__dict__["_loaded_status"] = self.__dict__.get("status")

    def status_stored(self) -> None:
        """Take the status as it is now for the stored one (a caller that wrote it without save(): raw SQL that recorded it)."""
        self.__dict__["_loaded_status"] = self.__dict__.get("status")

    def status_parent(self) -> str:
        """The object this one belongs to ('' for none)."""
        return ""

    def status_reason(self) -> str:
        """Why the status changed when the caller did not say ('' by default)."""
        return ""

    def note_status_reason(self, reason: str) -> None:
        """Say why the next saved status change happens."""
        self.__dict__["_status_reason"] = reason
