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


def ssh_key_file() -> str:
    """The private key ssh actions log in with (the operator's; '' refuses every ssh action)."""
    return str(settings.WORKFLOW_SSH_KEY_FILE or "")


def ssh_strict_host_key_checking() -> str:
    """OpenSSH's StrictHostKeyChecking for ssh actions: yes (default), accept-new, or no."""
    return str(settings.WORKFLOW_SSH_STRICT_HOST_KEY_CHECKING)


def ssh_options() -> list[str]:
    """More `-o Name=value` options for the ssh client (Port=2222, UserKnownHostsFile=...)."""
    return [str(option) for option in settings.WORKFLOW_SSH_OPTIONS]


def ssh_timeout_seconds() -> float:
    """How long an ssh action's remote command may run before its connection is cut (and the command killed)."""
    return float(settings.WORKFLOW_SSH_TIMEOUT_SECONDS)


def ssh_allow_user_at_host() -> bool:
    """Whether `<host>` may name another user than the workflow's owner (Oozie's oozie.action.ssh.allow.user.at.host)."""
    return bool(settings.WORKFLOW_SSH_ALLOW_USER_AT_HOST)
