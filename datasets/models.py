"""Dataset instance availability: each positive answer is stored once and shared by every action."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models

#: The done-flag under which announced instances are stored: "available, whatever flag is asked for".
ANY_FLAG = "*"


def uri_key(uri: str, done_flag: str) -> str:
    """A fixed-size key for (URI, done-flag): what is checked on storage."""
    return hashlib.sha256(f"{uri}\0{done_flag}".encode()).hexdigest()


class AvailableInstance(models.Model):
    """A dataset instance known to exist (done-flag present, or announced through the API)."""

    key = models.CharField(max_length=64, unique=True)
    uri = models.TextField()
    done_flag = models.CharField(max_length=255, blank=True)
    available_at = models.DateTimeField()
    source = models.CharField(max_length=16, help_text="'storage' (checked) or 'event' (announced)")
    announced_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="who announced it through the API (events only)",
    )

    class Meta:
        verbose_name = "available dataset instance"

    def __str__(self) -> str:
        return self.uri
