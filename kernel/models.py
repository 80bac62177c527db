"""What the security boundaries remember across processes and hosts (kernel.auth_guard)."""

from __future__ import annotations

from django.db import models


class AuthFailure(models.Model):
    """One failed credential check: where, from which client address, naming which username, when.

    kernel.auth_guard counts these rows per address and per username within a window; rows
    older than the window mean nothing and are purged.
    """

    scope = models.CharField(max_length=32, help_text="where the check failed: admin, api, oozie, metrics")
    client_ip = models.CharField(max_length=64, help_text="the client address (an IPv6 /64 network)")
    username = models.CharField(max_length=150, blank=True, help_text="the username named, '' for a token")
    at = models.DateTimeField()

    class Meta:
        indexes = [
            # The lock checks: the failures of one address, or one username, newest first.
            models.Index(fields=["client_ip", "at"], name="kernel_authfailure_ip_at"),
            models.Index(fields=["username", "at"], name="kernel_authfailure_user_at"),
            # The purge of rows older than the window.
            models.Index(fields=["at"], name="kernel_authfailure_at"),
        ]

    def __str__(self) -> str:
        return f"{self.scope} failure from {self.client_ip} ({self.username or 'no username'}) at {self.at:%Y-%m-%d %H:%M:%S}"


class StatusRecord(models.Model):
    """One status change of a workflow job or node, bundle, batch, batch job or operation: from, to, when, by, why.

    Written in the transaction that saves the new status (kernel.history), one row per change,
    so a History page never shows a change that did not happen. Coordinator jobs and actions
    keep their own table (coordinators.StatusChange), older than this one.
    """

    kind = models.CharField(max_length=16, help_text="what changed: workflow, node, bundle, batch, batch-job, operation")
    object_id = models.CharField(max_length=140, help_text="its primary key, as text")
    parent_id = models.CharField(max_length=140, blank=True, help_text="the object it belongs to (a node's workflow)")
    from_status = models.CharField(max_length=24, blank=True)
    to_status = models.CharField(max_length=24)
    at = models.DateTimeField()
    by = models.CharField(max_length=200, blank=True, help_text="the command, service or user that changed it")
    reason = models.TextField(blank=True)

    class Meta:
        indexes = [
            # An object's History page, and its children's changes (a workflow's nodes, an operation's jobs).
            models.Index(fields=["kind", "object_id", "at"], name="kernel_status_record_idx"),
            models.Index(fields=["kind", "parent_id", "at"], name="kernel_status_parent_idx"),
        ]
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.kind} {self.object_id}: {self.from_status} -> {self.to_status}"
