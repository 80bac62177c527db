"""Operation tests: the test operation types, and commands run in process (retries made due at once)."""

from __future__ import annotations

from django.utils import timezone

import tests.operations.types  # noqa: F401 - registers the test operation types
from tests.coordinators.runtime.conftest import in_process_engine, run_pending_commands  # noqa: F401 - fixture
from xcommands.choices import CommandStatus
from xcommands.models import Command


def run_all(rounds: int = 50) -> int:
    """Run every queued command, retries included (their backoff is cut short); how many ran."""
    ran = 0
    for _ in range(rounds):
        Command.objects.filter(status=CommandStatus.PENDING).update(not_before=timezone.now())
        done = run_pending_commands()
        ran += done
        if not done:
            break
    return ran
