"""Durable per-key command queues: one row per key, one row per enqueued command."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import Q

from kernel.secrets import masker
from xcommands.choices import ACTIVE_STATUSES, LEASED_STATUSES, CommandStatus


class CommandKey(models.Model):
    """A job key: its row lock orders enqueues against completions; `next_seq` numbers its commands."""

    key = models.CharField(max_length=255, unique=True)
    next_seq = models.BigIntegerField(default=0)

    class Meta:
        verbose_name = "command queue"
        verbose_name_plural = "command queues"

    def __str__(self) -> str:
        return self.key


class CommandQuerySet(models.QuerySet["Command"]):
    """Named filters over commands."""

    def active(self) -> CommandQuerySet:
        """Commands still holding their key (pending, leased or parked)."""
        return self.filter(status__in=ACTIVE_STATUSES)

    def for_key(self, key: str) -> CommandQuerySet:
        """Commands of one key in queue order."""
        return self.filter(key=key).order_by("seq")


class Command(models.Model):
    """One enqueued command: FIFO by (key, seq); fenced by `fencing_token` while leased.

    Invariants: at most one leased (RUNNING/ROLLING_BACK) command per key; a command only
    starts when no active command of its key has a lower seq.
    """

    key = models.CharField(max_length=255)
    seq = models.BigIntegerField()
    name = models.CharField(max_length=200, help_text="registered command name (= Celery task name)")
    params = models.JSONField(default=dict)
    status = models.CharField(
        max_length=16, choices=CommandStatus.choices, default=CommandStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    max_retries = models.PositiveIntegerField(default=3)
    not_before = models.DateTimeField(help_text="earliest start (retry backoff)")
    wake_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="when the recovery sweep rings this command if it is still waiting (NULL: "
        "not the head of its key; its predecessor rings it)",
    )
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    fencing_token = models.BigIntegerField(default=0)
    enqueued_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    history = models.JSONField(default=list, help_text="one entry per attempt and rollback")
    result = models.JSONField(null=True, blank=True)
    owner = models.ForeignKey(
        "auth.User",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="who enqueued it through the API (NULL for the system)",
    )

    objects = CommandQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["key", "seq"], name="xcmd_key_seq_uniq"),
            models.UniqueConstraint(
                fields=["key"],
                condition=Q(status__in=sorted(LEASED_STATUSES)),
                name="xcmd_one_leased_per_key",
            ),
        ]
        indexes = [
            # The head of a key: lowest seq among active commands.
            models.Index(
                fields=["key", "seq"],
                condition=Q(status__in=sorted(ACTIVE_STATUSES)),
                name="xcmd_active_head_idx",
            ),
            # Recovery sweep: expired leases and due pending heads.
            models.Index(
                fields=["lease_expires_at"],
                condition=Q(status__in=sorted(LEASED_STATUSES)),
                name="xcmd_lease_idx",
            ),
            models.Index(
                fields=["wake_at"],
                condition=Q(wake_at__isnull=False),
                name="xcmd_wake_idx",
            ),
            # Parked commands for the admin; history by key uses the (key, seq) unique index.
            models.Index(
                fields=["status"],
                condition=Q(status=CommandStatus.PARKED),
                name="xcmd_parked_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name}#{self.pk} [{self.key}] {self.status}"

    def display_kwargs(self) -> dict[str, Any]:
        """What Flower shows next to the task name: the key and the arguments, secret properties masked.

        Anyone who may open Flower reads these, and the worker needs only the command id: an
        update's or a rerun's configuration and a keyed job's arguments are masked (kernel.secrets).
        """
        return {"key": self.key, "params": masker(self.params).data(self.params)}
