"""E-mail when no mail server is configured: a backend that refuses clearly instead of trying localhost:25.

Django's default (SMTP on localhost:25) turns every alert into "Connection refused" and
retries on a machine without a mail server. Without EMAIL_HOST (and EMAIL_BACKEND) the
settings pick this backend: senders see at once that e-mail is off and why, and the SLA
notifier logs that once instead of retrying (docs/coordinators.md, "SLA monitoring").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.core.mail.backends.base import BaseEmailBackend

NOT_CONFIGURED_BACKEND = "kernel.mail.NotConfiguredBackend"


class EmailNotConfigured(RuntimeError):  # noqa: N818 - reads as the condition
    """No mail server is configured (EMAIL_HOST unset): nothing can be sent until one is."""


class NotConfiguredBackend(BaseEmailBackend):
    """Sends nothing: every attempt raises EmailNotConfigured (fail_silently: sends nothing, says 0)."""

    def send_messages(self, email_messages: Sequence[Any]) -> int:
        """Refuse: no mail server is configured."""
        if not email_messages or self.fail_silently:
            return 0
        raise EmailNotConfigured("e-mail is not configured: set EMAIL_HOST (and EMAIL_PORT ...) to send it")


def email_configured() -> bool:
    """Whether e-mail can be sent: a mail server (EMAIL_HOST) or another backend is configured."""
    return str(settings.EMAIL_BACKEND) != NOT_CONFIGURED_BACKEND
