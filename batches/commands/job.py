"""Job commands: one stage of a job (taken by priority into a slot), and the admin verbs on a job.

Both run under the job's object key (its primary identifier when the submitter gave one, else
its local id, else the job itself), so two versions of one object never interleave.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, ClassVar

from django.db import transaction
from django.utils import timezone

from batches.choices import QUEUES, RESUME_STAGE
from batches.choices import JobStatus as J
from batches.dispatch import keeps_slot, release
from batches.lifecycle import appended, history_entry, move
from batches.models import BatchJob
from batches.stages import STAGE_FUNCTIONS, StageFailed
from kernel.statemachine import IllegalTransition
from xcommands.base import XCommand
from xcommands.errors import PreconditionFailed

log = logging.getLogger(__name__)


def load_job(job_id: int, *, lock: bool = False) -> BatchJob:
    """The job with its batch, profile and collection."""
    query = BatchJob.objects.select_related("batch__profile", "batch__collection")
    if lock:
        query = query.select_for_update(of=("self",))
    return query.get(pk=job_id)


@dataclass
class BatchJobStageXCommand(XCommand):
    """Run the stage the job waits in (`stage`), in the slot it was given (`token`), and record where it goes.

    Not one transaction: a download or a processing task may take long, and what a stage
    stores at once (a minted identifier, each downloaded file) must survive a crash. The
    outcome is recorded with a compare-and-set on (status, token): a stale or duplicated
    attempt records nothing. The slot goes to the next job in the same transaction.
    """

    job_id: int
    stage: str
    token: int
    key: str = ""

    atomic: ClassVar[bool] = False
    max_retries: ClassVar[int] = 3

    def job_key(self) -> str:
        """The object's key."""
        return self.key or f"batch-job:{self.job_id}"

    def load_state(self) -> None:
        """The job as it is now."""
        self.job = load_job(self.job_id)
        self.started = timezone.now()

    def verify_precondition(self) -> None:
        """Still this dispatch, in a stage; a dispatched job that moved on gives its slot back.

        A dispatch may run several stages of its job in a row (see `execute`): when its worker
        died after recording some of them, the command run again continues from the stage the
        job is in now, under the same token.
        """
        job = self.job
        if job.stage_token != self.token:
            raise PreconditionFailed(f"job {job.pk}: dispatch {self.token} was superseded by {job.stage_token}")
        if job.status not in QUEUES or not job.dispatched:
            if job.dispatched:
                with transaction.atomic():
                    release(job.pk)
            raise PreconditionFailed(f"job {job.pk} is {job.status}, not waiting for {self.stage}")

    def execute(self) -> dict[str, Any]:
        """The stage, then its outcome (next queue, or a wait); the next stage too while no better job waits.

        Each stage is recorded on its own (its transition, history line and compare-and-set);
        between two stages the slot goes to a better runnable job if there is one (a lower
        priority number, or the same and older), else the job keeps it and its next stage runs
        at once: no dispatch and no queued command per stage (BATCH_CHAIN_STAGES).
        """
        ran: list[str] = []
        job = self.job
        while True:
            stage = job.status
            to, keeps_slot = self._run_stage(job, stage)
            ran.append(f"{stage}->{to}")
            if not keeps_slot:
                break
            job = load_job(self.job_id)
            if job.stage_token != self.token or not job.dispatched or job.status not in QUEUES:
                break  # moved by someone else meanwhile (not expected while it holds its slot)
            self.started = timezone.now()
        return {"job": job.pk, "token": self.token, "stages": ran}

    def _run_stage(self, job: BatchJob, stage: str) -> tuple[str, bool]:
        """Run one stage and record it: (where the job went, whether it keeps its slot for the next stage)."""
        try:
            outcome = STAGE_FUNCTIONS[stage](job)
        except StageFailed as exc:
            self._record_failure(stage, str(exc))
            return J.FAILED, False
        with transaction.atomic():
            if outcome.status is None:  # wait in this queue (provisioning): looked at again later
                moved = BatchJob.objects.filter(pk=job.pk, status=stage, stage_token=self.token).update(
                    not_before=timezone.now() + timedelta(seconds=outcome.wait_seconds),
                    history=_waited(job.history, stage, outcome.note),
                )
                if moved:
                    release(job.pk)
                return f"{stage} (waits)", False
            fields = dict(outcome.fields)
            if stage != J.PENDING and outcome.status not in (J.FAILED, J.HELD):
                fields["last_successful_status"] = stage  # the seed: pending is no success yet
            moved = move(
                job, outcome.status, note=outcome.note, fields=fields,
                expect_status=stage, expect_token=self.token, started=self.started,
                waited_since=job.queued_at,
            )
            if not moved:
                return f"{outcome.status} (not recorded)", False
            if outcome.status in QUEUES and keeps_slot(job):
                return outcome.status, True
            release(job.pk)
        return outcome.status, False

    def _record_failure(self, stage: str, error: str) -> None:
        job = load_job(self.job_id)
        with transaction.atomic():
            if job.status != stage or job.stage_token != self.token:
                return
            moved = move(job, J.FAILED, note=error, fields={"error": error[:8000]},
                         expect_status=stage, expect_token=self.token, started=self.started)
            if moved:
                release(job.pk)

    def rollback(self, error: str) -> None:
        """The retries are spent (storage or network trouble): the job fails with the last error, its slot goes on."""
        reason = (error.strip().splitlines() or ["failed"])[-1]
        stage = BatchJob.objects.filter(pk=self.job_id).values_list("status", flat=True).first() or self.stage
        if stage in (J.ESTIMATING, J.PROVISIONING):
            # These stages never fail (seed): the job waits in its queue and is tried again later.
            with transaction.atomic():
                if BatchJob.objects.filter(pk=self.job_id, status=stage, stage_token=self.token).update(
                    not_before=timezone.now() + timedelta(seconds=30)
                ):
                    release(self.job_id)
            return
        self.started = timezone.now()
        self._record_failure(stage, f"{stage}: {reason}")


def _waited(history: list[dict[str, Any]], stage: str, note: str) -> list[dict[str, Any]]:
    """The history with one "waits" line; repeated waits update the last line instead of adding lines."""
    if history and history[-1].get("waits") and history[-1].get("stage") == stage:
        last = dict(history[-1])
        last.update(at=timezone.now().isoformat(), note=note[:1000], tries=int(last.get("tries", 1)) + 1)
        return [*history[:-1], last]
    entry = history_entry(stage, stage, note)
    entry["waits"] = True
    entry["tries"] = 1
    return appended(history, entry)


# ---- admin verbs --------------------------------------------------------------------------------

JOB_VERBS = ("release", "resume", "requeue", "delete", "priority")


def check_job_verb(job: BatchJob, verb: str, *, confirmed: bool = False) -> str:
    """The status the verb moves the job to (IllegalTransition if its status does not allow it)."""
    from batches.choices import BatchStatus

    if verb == "release":
        if job.status != J.HELD:
            raise IllegalTransition(f"job {job.pk} is {job.status}; only a held job can be released")
        return J.PENDING
    if verb == "resume":
        if job.status != J.FAILED:
            raise IllegalTransition(f"job {job.pk} is {job.status}; only a failed job can be resumed")
        target = RESUME_STAGE.get(job.last_successful_status)
        if target is None:
            raise IllegalTransition(
                f"job {job.pk} failed before any stage succeeded ({job.error[:200] or 'no error'}): "
                "requeue it from the start, or submit it again"
            )
        return target
    if verb == "requeue":
        if job.status != J.FAILED:
            raise IllegalTransition(f"job {job.pk} is {job.status}; only a failed job can be requeued")
        return J.PENDING
    if verb == "delete":
        if job.status not in (J.FAILED, J.HELD):
            raise IllegalTransition(f"job {job.pk} is {job.status}; only failed or held jobs can be deleted")
        if job.batch.status not in (BatchStatus.COMPLETED, BatchStatus.FAILED) and not confirmed:
            raise NeedsConfirmation(
                f"batch {job.batch_id} is {job.batch.status}: deleting job {job.pk} means its depositor is never "
                "told about it; confirm to delete"
            )
        return J.DELETED
    if verb == "priority":
        return job.status
    raise ValueError(f"unknown job verb {verb!r}: use {', '.join(JOB_VERBS)}")


class NeedsConfirmation(IllegalTransition):
    """A delete the seed asks to confirm (the batch is not complete): refused until confirmed."""


@dataclass
class BatchJobAdminXCommand(XCommand):
    """An admin verb on a job, under its object key, checked again here: release, resume, requeue, delete, priority."""

    job_id: int
    verb: str
    key: str = ""
    priority: int | None = None
    confirmed: bool = False
    actor: str = ""

    def job_key(self) -> str:
        """The object's key: after anything queued for the job."""
        return self.key or f"batch-job:{self.job_id}"

    def load_state(self) -> None:
        """The job, locked."""
        self.job = load_job(self.job_id, lock=True)

    def verify_precondition(self) -> None:
        """The verb still applies (the job may have moved since the request)."""
        try:
            self.target = check_job_verb(self.job, self.verb, confirmed=self.confirmed)
        except IllegalTransition as exc:
            raise PreconditionFailed(str(exc)) from exc
        if self.job.dispatched and self.verb != "priority":
            raise PreconditionFailed(f"job {self.job.pk} has a stage running")

    def execute(self) -> dict[str, Any]:
        """Move the job; a resumed or requeued one counts again in its batch's operation while that runs."""
        from batches.dispatch import fill_after_commit
        from operations.services import reopen_job

        job = self.job
        who = f" by {self.actor}" if self.actor else ""
        if self.verb == "priority":
            old = job.priority
            BatchJob.objects.filter(pk=job.pk).update(
                priority=self.priority, history=appended(job.history, history_entry(
                    job.status, job.status, f"priority {old} -> {self.priority}{who}"))
            )
            fill_after_commit()
            return {"job": job.pk, "priority": self.priority}
        fields: dict[str, Any] = {}
        if self.verb in ("resume", "requeue"):
            fields["retry_count"] = job.retry_count + 1
            fields["error"] = ""
            if job.batch.operation_id is not None:
                reopen_job(job.batch.operation_id, str(job.pk))
        if self.verb == "requeue":
            fields.update(last_successful_status="", files=[] if job.payload_type == "manifest-of-manifests" else [
                {k: v for k, v in f.items() if k not in ("done", "computed")} for f in job.files
            ], space_needed=None)
        move(job, self.target, note=f"{self.verb}{who}", fields=fields)  # a deletion ends its operation job too
        fill_after_commit()
        return {"job": job.pk, "verb": self.verb, "to": self.target}

