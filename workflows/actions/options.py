"""The settings of workflow actions and `fs:` functions, with their defaults (docs/configuration.md)."""

from __future__ import annotations

from django.conf import settings

DEFAULT_MAX_OUTPUT_DATA = 2048  # Oozie's oozie.action.max.output.data
DEFAULT_SHELL_TIMEOUT_SECONDS = 3600


def fs_roots() -> list[str]:
    """Where fs actions, `prepare`, `fs:` functions and e-mail attachments may go (a bare `s3://` allows a protocol)."""
    return [str(root) for root in settings.WORKFLOW_FS_ROOTS]


def shell_enabled() -> bool:
    """Whether shell actions may run commands on the workers (off unless an operator turns it on)."""
    return bool(settings.WORKFLOW_SHELL_ENABLED)


def shell_timeout_seconds() -> float:
    """How long a shell command may run before its process group is killed."""
    return float(settings.WORKFLOW_SHELL_TIMEOUT_SECONDS)


def max_output_data() -> int:
    """The largest action data (captured stdout, a Celery task's returned map) in bytes."""
    return int(settings.WORKFLOW_MAX_OUTPUT_DATA)
