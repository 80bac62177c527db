"""Periodic service for operations: complete those whose jobs all ended but whose completion was lost."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef

from coordinators.commands.actions import stale_after
from operations.choices import JOB_UNFINISHED, OperationStatus
from operations.commands import OperationCompleteXCommand
from operations.models import Operation, OperationJob, completion_key
from statusservice.common import BATCH
from xcommands.choices import CommandStatus
from xcommands.models import Command
from xcommands.queue import enqueue


def lost_completions(now: datetime) -> int:
    """Queue a completion for running operations with no unfinished job and no completion queued.

    A completion is normally queued by the job that wrote the last outcome; this finds the
    ones lost (that job's transaction committed the outcome but its completion command was
    skipped, failed for good, or its worker died in between), after a short grace period.
    """
    unfinished = OperationJob.objects.filter(operation=OuterRef("pk"), status__in=sorted(JOB_UNFINISHED))
    grace = min(timedelta(seconds=5), stale_after())
    candidates = list(
        Operation.objects.filter(status=OperationStatus.RUNNING, created_at__lt=now - grace)
        .exclude(Exists(unfinished)).values_list("pk", "target")[:BATCH]
    )
    queued = 0
    with transaction.atomic():
        for operation_id, target in candidates:
            waiting = Command.objects.filter(
                key=completion_key(target), name=OperationCompleteXCommand.command_name,
                status__in=(CommandStatus.PENDING, CommandStatus.RUNNING), params__operation_id=operation_id,
            )
            if not waiting.exists():
                enqueue(OperationCompleteXCommand(operation_id=operation_id, target=target))
                queued += 1
    return queued
