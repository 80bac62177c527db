"""The buttons of a batch's and a batch job's page (kernel.object_verbs), through `batches.services`.

Batch: release, update-report, delete. Job: release, resume, requeue, set the priority,
delete. Each is disabled with the reason `check_batch_verb` / `check_job_verb` give (the
checks the services make); a delete's confirmation page is the confirmation the seed asks
for, so it runs with `confirmed=True` (checked again in the command).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from batches import services
from batches.admin.verbs import PriorityForm
from batches.commands import NeedsConfirmation
from batches.commands.batch import check_batch_verb
from batches.commands.job import check_job_verb
from batches.models import Batch, BatchJob
from kernel.object_verbs import REFUSALS, ObjectVerb

BATCH_LABELS = {"release": "Release", "update-report": "Update report", "delete": "Delete"}
BATCH_EFFECTS = {
    "release": "held -> pending: it starts when its collection's turn comes",
    "update-report": "failed -> update-reporting: its report is made again and sent",
    "delete": "-> deleted, with its jobs; its depositor is never told",
}
JOB_LABELS = {"release": "Release", "resume": "Resume", "requeue": "Requeue", "priority": "Set priority",
              "delete": "Delete"}


def _refusal(check: Any) -> str:
    try:
        check()
    except NeedsConfirmation:
        return ""  # the confirmation page asks
    except REFUSALS as exc:
        return str(exc)
    return ""


def batch_verbs(batch: Batch, user: Any) -> list[ObjectVerb]:
    """Release (held), update-report (failed), delete (failed or held)."""

    def verb(name: str) -> ObjectVerb:
        def run(data: Mapping[str, Any]) -> str:
            services.batch_verb(batch.pk, name, actor=user, confirmed=True)
            return f"{BATCH_LABELS[name]} of batch {batch.id_text} queued ({batch.status} -> {BATCH_EFFECTS[name]})"

        return ObjectVerb(
            name=name, label=BATCH_LABELS[name], refused=_refusal(lambda: check_batch_verb(batch, name)), run=run,
            effect=lambda data: [f"batch {batch.id_text} ({batch.status}): {BATCH_EFFECTS[name]}"],
            danger=name == "delete",
        )

    return [verb("release"), verb("update-report"), verb("delete")]


def job_verbs(job: BatchJob, user: Any) -> list[ObjectVerb]:
    """Release (held), resume and requeue (failed), priority, delete (failed or held)."""

    def target(name: str) -> str:
        return str(check_job_verb(job, name, confirmed=True))

    def verb(name: str) -> ObjectVerb:
        def effect(data: Mapping[str, Any]) -> list[str]:
            if name == "priority":
                return [f"job {job.id_text}: priority {job.priority} -> {data['priority']} (0 runs first)"]
            lines = [f"job {job.id_text} of batch {job.batch.id_text}: {job.status} -> {target(name)}"]
            if name == "delete":
                lines.append("its depositor is never told about it")
            return lines

        def run(data: Mapping[str, Any]) -> str:
            services.job_verb(job.pk, name, actor=user, priority=data.get("priority"), confirmed=True)
            if name == "priority":
                return f"Priority {data['priority']} of job {job.id_text} queued"
            return f"{JOB_LABELS[name]} of job {job.id_text} queued ({job.status} -> {target(name)})"

        return ObjectVerb(
            name=name, label=JOB_LABELS[name], refused=_refusal(lambda: check_job_verb(job, name)), run=run,
            effect=effect, form=PriorityForm if name == "priority" else None, danger=name == "delete",
        )

    return [verb(name) for name in ("release", "resume", "requeue", "priority", "delete")]
