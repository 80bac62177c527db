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
