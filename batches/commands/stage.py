"""A job's stages in the slots: the stage command, and the slot hand-off that queues it.

A job waiting in a stage's queue is taken when a slot frees (`batches.dispatch` says which
job goes next): the stage that ends hands its slot over in the same transaction, a beat
service fills any slot left free by a race. `BatchJobStageXCommand` runs under the job's
object key (its primary identifier when the submitter gave one, else its local id, else
the job itself), so two versions of one object never interleave.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, ClassVar

from django.db import transaction
from django.utils import timezone

from batches.choices import QUEUES
from batches.choices import JobStatus as J
from batches.config import slots
from batches.dispatch import keeps_slot, runnable_jobs
from batches.lifecycle import appended, history_entry, move
from batches.models import BatchJob, Slot
from batches.stages import STAGE_FUNCTIONS, StageFailed
from kernel import tries
from kernel.capture import Capture, capturing
from kernel.models import TaskTry
from xcommands.base import XCommand
from xcommands.engine import worker_identity
from xcommands.errors import PreconditionFailed
from xcommands.queue import enqueue

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
        """Run one stage and record it: (where the job went, whether it keeps its slot for the next stage).

        Each run of a stage is a try (kernel.tries): what it logged and printed and its error's
        traceback are kept with how it ended, in the transaction that records it.
        """
        with capturing() as capture:
            try:
                outcome = STAGE_FUNCTIONS[stage](job)
            except StageFailed as exc:
                capture.note_exception(exc)
                self._record_failure(stage, str(exc), capture)
                return J.FAILED, False
            except Exception as exc:  # storage or network trouble: kept, then the command's retry
                capture.note_exception(exc)
                with transaction.atomic():
                    self._keep_try(stage, "RETRY", capture, type(exc).__name__, str(exc))
                raise
        with transaction.atomic():
            # A wait (provisioning: no space yet) comes back every few seconds: kept only when it warned.
            if outcome.status is not None or capture.highest >= logging.WARNING:
                self._keep_try(stage, outcome.status or "WAITS", capture, "", outcome.note if outcome.status == J.FAILED else "")
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
                expect_status=stage, expect_token=self.token, refill=fill_after_commit,
                started=self.started, waited_since=job.queued_at,
            )
            if not moved:
                return f"{outcome.status} (not recorded)", False
            if outcome.status in QUEUES and keeps_slot(job):
                return outcome.status, True
            release(job.pk)
        return outcome.status, False

    def _keep_try(self, stage: str, status: str, capture: Capture | None, code: str, error: str) -> None:
        """This run of the stage as a try of the job (caller's transaction); `run` is the dispatch."""
        earlier = TaskTry.objects.filter(kind=TaskTry.Kind.STAGE, object_id=str(self.job_id), name=stage,
                                         run=self.token).count()
        tries.store(
            TaskTry.Kind.STAGE, str(self.job_id), capture, status=status, ended_at=timezone.now(),
            started_at=self.started, job_id=str(self.job.batch_id), name=stage, run=self.token, attempt=earlier + 1,
            worker=worker_identity(), error_code=code or ("StageFailed" if error and status == J.FAILED else ""),
            error_message=error,
        )

    def _record_failure(self, stage: str, error: str, capture: Capture | None = None) -> None:
        job = load_job(self.job_id)
        with transaction.atomic():
            self._keep_try(stage, J.FAILED, capture, "StageFailed", error)
            if job.status != stage or job.stage_token != self.token:
                return
            moved = move(job, J.FAILED, note=error, fields={"error": error[:8000]},
                         expect_status=stage, expect_token=self.token, refill=fill_after_commit,
                         started=self.started)
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


# ---- the slot hand-off -------------------------------------------------------------------------


def _take(slot: Slot) -> BatchJob | None:
    """Give the slot (locked by the caller) to the next runnable job, queue that job's stage; the job, or None."""
    job = runnable_jobs().select_for_update(skip_locked=True, of=("self",)).only(
        "pk", "status", "object_key", "stage_token", "priority",
    ).first()
    if job is None:
        return None
    now = timezone.now()
    token = job.stage_token + 1
    BatchJob.objects.filter(pk=job.pk).update(dispatched=True, stage_token=token)
    slot.job_id = job.pk
    slot.since = now
    slot.save(update_fields=["job", "since"])
    enqueue(BatchJobStageXCommand(job_id=job.pk, stage=job.status, token=token, key=job.object_key))
    return job


def fill_slots(limit: int | None = None) -> int:
    """Hand free slots to runnable jobs, best first; how many jobs were taken."""
    taken = 0
    with transaction.atomic():
        free = list(
            Slot.objects.select_for_update(skip_locked=True).filter(job__isnull=True, number__lte=slots())
            .order_by("number")[: limit or slots()]
        )
        for slot in free:
            if _take(slot) is None:
                break
            taken += 1
    return taken


def release(job_id: int, *, hand_over: bool = True) -> None:
    """The job's stage ended: free its slot and (in the same transaction) give it to the next job."""
    slot = Slot.objects.select_for_update().filter(job_id=job_id).first()
    BatchJob.objects.filter(pk=job_id).update(dispatched=False)
    if slot is None:
        return
    slot.job_id = None
    slot.since = None
    slot.save(update_fields=["job", "since"])
    if hand_over and slot.number <= slots():
        _take(slot)


def fill_after_commit() -> None:
    """Fill free slots once the caller's transaction commits (new runnable jobs)."""
    transaction.on_commit(lambda: _fill_quietly())


def _fill_quietly() -> None:
    try:
        fill_slots()
    except Exception:  # the beat's dispatch fills them a second later
        log.warning("filling batch slots failed; the dispatch service will", exc_info=True)
