"""The commands of operations: a job's attempts (on its partition's key), its cancellation, the completion.

`JobContext` is what a running job sees; it queues the completion when the last job ends.
"""

from __future__ import annotations

from operations.commands.complete import OperationCompleteXCommand
from operations.commands.context import JobContext
from operations.commands.job import (
    JOBS_PER_COMMAND,
    OperationJobCancelXCommand,
    OperationJobXCommand,
)

__all__ = [
    "JOBS_PER_COMMAND",
    "JobContext",
    "OperationCompleteXCommand",
    "OperationJobCancelXCommand",
    "OperationJobXCommand",
]
