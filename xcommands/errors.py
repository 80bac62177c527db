"""Exceptions of the command engine and the classification commands raise to steer it."""

from __future__ import annotations


class CommandError(Exception):
    """Base of the engine's own errors."""


class PermanentError(CommandError):
    """A failure that retrying cannot fix: no retry, straight to rollback."""


class TransientError(CommandError):
    """A failure worth retrying (with backoff) until max_retries is spent."""


class PreconditionFailed(CommandError):  # noqa: N818 - the Oozie name for this outcome
    """The command no longer applies (job in another state): logged and skipped, not an error."""


class FencedOut(CommandError):  # noqa: N818 - names the condition, as in the literature
    """The worker's lease was taken over: its result must not be committed."""


class UnknownCommand(CommandError):  # noqa: N818
    """No command class is registered under this name."""


class IllegalCommandTransition(CommandError):
    """An operator action that the command's status does not allow (e.g. retry a running one)."""


class CommandFailed(CommandError):  # noqa: N818 - what Flower's Failed view lists
    """Raised by a command's Celery task after the command failed for good (its rollback ran, its row
    says why): Celery then records the task as FAILURE, so Flower's Failed view shows it. The
    durable outcome was committed before; the message is acknowledged, never delivered again."""
