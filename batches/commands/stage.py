"""A job's stages in the slots: the stage command, and the slot hand-off that queues it.

A job waiting in a stage's queue is taken when a slot frees (`batches.dispatch` says which
job goes next): the stage that ends hands its slot over in the same transaction, a beat
service fills any slot left free by a race. `BatchJobStageXCommand` runs under the job's
object key (its primary identifier when the submitter gave one, else its local id, else
the job itself), so two versions of one object never interleave.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import Any, ClassVar

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from batches.choices import QUEUES
from batches.choices import JobStatus as J
from batches.config import settings_read_once, slots
from batches.dispatch import (
    hand_over_statements,
    head_columns,
    keeps_slot,
    locked_with_head_statement,
    runnable_head,
    runnable_jobs,
)
from batches.lifecycle import Step, advance, applied, ended_statements, ends, transition, waited
from batches.models import Batch, BatchJob, Collection, IngestSettings, Profile, Slot
from batches.stages import STAGE_FUNCTIONS, Outcome, StageFailed
from kernel import sqlbatch, tries
from kernel.capture import Capture, capturing
from kernel.history import act_as, status_rows
from kernel.models import TaskTry
from xcommands.base import XCommand
from xcommands.engine import worker_identity
from xcommands.errors import PreconditionFailed
from xcommands.queue import enqueue_statements, enqueued

log = logging.getLogger(__name__)


def load_job(job_id: int, *, lock: bool = False) -> BatchJob:
    """The job with its batch, profile and collection."""
    query = BatchJob.objects.select_related("batch__profile", "batch__collection")
    if lock:
        query = query.select_for_update(of=("self",))
    return query.get(pk=job_id)


#: Stages with long work outside the database (downloads, the profile's task): what ran before
#: one of them is recorded before it starts, so a restart after a crash in it begins at it.
RECORDED_BEFORE = frozenset({J.DOWNLOADING, J.PROCESSING})
#: Stages run in a row are recorded at least this often (and the slot's owner looked at again).
RECORD_EVERY_SECONDS = 0.25


def recorded_before(job: BatchJob, stage: str) -> bool:
    """Whether what ran before `stage` is recorded first: before long work (downloads, the task, a callback)."""
    return stage in RECORDED_BEFORE or (stage == J.NOTIFY and bool(job.batch.profile.callback_url))


@dataclass
class Ran:
    """A stage that ran (its outcome, what it logged, its times), not yet recorded."""

    stage: str
    outcome: Outcome
    capture: Capture | None
    started: datetime
    ended: datetime
    waited_since: datetime | None = None


@cache
def _load_state_sql() -> str:
    """`BatchJobStageXCommand.load_state`'s statement: the job, its batch, profile, collection, the ingest settings,
    its slot, its earlier tries, the head.

    `Planned`: the head's subqueries read the partial index of runnable jobs.
    """
    return sqlbatch.Planned(
        f"SELECT {sqlbatch.columns(BatchJob, 'j')}, {sqlbatch.columns(Batch, 'b')}, {sqlbatch.columns(Profile, 'p')},"  # noqa: S608 - constant SQL
        f" {sqlbatch.columns(Collection, 'c')}, {sqlbatch.columns(IngestSettings, 'i')},"
        " (SELECT s.number FROM batches_slot s WHERE s.job_id = j.id),"
        " EXISTS (SELECT 1 FROM kernel_tasktry t WHERE t.object_id = %(object)s AND t.kind = 'stage' AND t.run = %(token)s),"
        f" {head_columns()}"
        " FROM batches_batchjob j JOIN batches_batch b ON b.id = j.batch_id JOIN batches_profile p ON p.id = b.profile_id"
        " JOIN batches_collection c ON c.id = b.collection_id"
        " LEFT JOIN batches_ingestsettings i ON i.id = (SELECT MIN(f.id) FROM batches_ingestsettings f)"
        " WHERE j.id = %(job)s"
    )


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
        """The job as it is now, the number of the slot it holds, whether this dispatch tried any stage before.

        One statement, written once (`kernel.sqlbatch`): the job with its batch, profile and
        collection, as `load_job` reads them, the ingest settings its stages read
        (`settings_read_once`), and the best runnable job (`best_runnable`).
        """
        rows = sqlbatch.run([_load_state_sql()], {"job": self.job_id, "object": str(self.job_id), "token": self.token,
                                                  "now": timezone.now()})[0]
        if not rows:
            raise BatchJob.DoesNotExist(f"batch job {self.job_id} does not exist")
        row = rows[0]
        width = [len(model._meta.concrete_fields) for model in (BatchJob, Batch, Profile, Collection, IngestSettings)]
        starts = [sum(width[:index]) for index in range(len(width) + 1)]
        self.job = sqlbatch.load(BatchJob, row[starts[0]:starts[1]])
        batch = sqlbatch.load(Batch, row[starts[1]:starts[2]])
        batch.profile = sqlbatch.load(Profile, row[starts[2]:starts[3]])
        batch.collection = sqlbatch.load(Collection, row[starts[3]:starts[4]])
        self.job.batch = batch
        # None until the row is first created (`batches.config`): then read there.
        self.ingest = None if row[starts[4]] is None else sqlbatch.load(IngestSettings, row[starts[4]:starts[5]])
        self.slot_number: int | None = row[-4]
        self.tried_before: bool = bool(row[-3])
        self._saw_head(row[-2], row[-1])
        # Queued by the dispatcher, never by a user: its status changes are recorded under its
        # name without looking up who queued it.
        act_as(type(self).command_name)

    def _saw_head(self, priority: int | None, job_id: int | None) -> None:
        """The best runnable job (priority, id) as just read, or none: kept for BATCH_CHAIN_HEAD_SECONDS."""
        self.head = None if job_id is None else (int(priority or 0), int(job_id))
        self.head_read = time.monotonic()

    def best_runnable(self) -> tuple[int, int] | None:
        """The best runnable job (priority, id) before a chained stage: as read last, or read again once it is older
        than BATCH_CHAIN_HEAD_SECONDS (the job's load and each record read it with what they read anyway).
        """
        if time.monotonic() - self.head_read > float(settings.BATCH_CHAIN_HEAD_SECONDS):
            self.head = runnable_head()
            self.head_read = time.monotonic()
        return self.head

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
        """The stage, then its outcome (next queue, or a wait); the next stages too while no better job waits.

        Stages run in a row and are recorded together (one transaction: a transition, history
        line, status record and try each, one compare-and-set), before a stage with long
        outside work (`recorded_before`), when the job ends or waits, and at least every
        RECORD_EVERY_SECONDS. A crash before a record runs those stages again: they are the
        quick, repeatable ones (reading a manifest, sizes, free space, the inventory's
        once-per-job write, a callback with its idempotency key). Before each next stage the
        slot goes to a better runnable job if there is one (a lower priority number, or the
        same and older; what ran is recorded then), else the job keeps it and runs on: no
        dispatch and no queued command per stage (BATCH_CHAIN_STAGES).
        """
        ran: list[str] = []
        job = self.job
        with settings_read_once(self.ingest):
            while self._run_stages(job, ran):
                pass  # recorded, and the job read back under its lock: it goes on from where it is
        return {"job": job.pk, "token": self.token, "stages": ran}

    def _run_stages(self, job: BatchJob, names: list[str]) -> bool:
        """Run the job's stages until they must be recorded, record them; whether the job keeps its slot.

        Each run of a stage is a try (kernel.tries): what it logged and printed and its error's
        traceback are kept with how it ended, in the transaction that records it.
        """
        done: list[Ran] = []
        stage, queued = job.status, job.queued_at
        since = time.monotonic()
        while True:
            started = timezone.now()
            with capturing() as capture:
                try:
                    outcome = STAGE_FUNCTIONS[stage](job)
                except StageFailed as exc:
                    capture.note_exception(exc)
                    failed = Ran(stage, Outcome(J.FAILED, {"error": str(exc)[:8000]}, note=str(exc)), capture,
                                 started, timezone.now(), queued)
                    self._record(job, [*done, failed], names)
                    return False
                except Exception as exc:  # storage or network trouble: kept, then the command's retry
                    capture.note_exception(exc)
                    self._record(job, done, names, retry=(Ran(stage, Outcome(None), capture, started,
                                                              timezone.now()), exc))
                    raise
            done.append(Ran(stage, outcome, capture, started, timezone.now(), queued))
            to = outcome.status
            if (to is None or to not in QUEUES or recorded_before(job, to)
                    or time.monotonic() - since > RECORD_EVERY_SECONDS):
                return self._record(job, done, names)
            for name, value in outcome.fields.items():  # the next stage sees what this one found
                setattr(job, name, value)
            if not (settings.BATCH_CHAIN_STAGES and keeps_slot(job, self.slot_number, self.best_runnable())):
                return self._record(job, done, names)  # a better job waits: this one gives its slot up
            stage, queued = to, done[-1].ended

    def _record(self, job: BatchJob, done: list[Ran], names: list[str],
                retry: tuple[Ran, Exception] | None = None) -> bool:
        """Record the stages that ran (and a try that will be retried): whether the job keeps its slot for the next.

        One transaction: their tries, their transitions with a compare-and-set on the status
        the job was loaded in and this dispatch's token, then the slot (kept, or handed over).
        """
        steps: list[Step] = []
        kept: list[tuple[Ran, str, str, str]] = []
        waits: tuple[str, datetime] | None = None
        for ran in done:
            outcome = ran.outcome
            if outcome.status is None:  # wait in this queue (provisioning): looked at again later
                waits = (outcome.note, timezone.now() + timedelta(seconds=outcome.wait_seconds))
                # A wait comes back every few seconds: kept as a try only when it warned.
                if ran.capture is not None and ran.capture.highest >= logging.WARNING:
                    kept.append((ran, "WAITS", "", ""))
                continue
            fields = dict(outcome.fields)
            if ran.stage != J.PENDING and outcome.status not in (J.FAILED, J.HELD):
                fields["last_successful_status"] = ran.stage  # the seed: pending is no success yet
            steps.append(Step(outcome.status, outcome.note, fields,
                              {"started": ran.started, "waited_since": ran.waited_since, "at": ran.ended}))
            failed = outcome.status == J.FAILED
            kept.append((ran, outcome.status, "StageFailed" if failed else "", outcome.note if failed else ""))
        if retry is not None:
            kept.append((retry[0], "RETRY", type(retry[1]).__name__, str(retry[1])))
        recorded = [ran for ran in done if ran.outcome.status is not None]
        if retry is None and waits is None and steps:
            return self._record_fast(job, steps, kept, recorded, names)  # the hot path
        with transaction.atomic():
            self._keep_tries(kept)
            if not steps and waits is None:
                return False  # a retry before any stage of this run ended: the slot stays with the job
            moved = False
            also = {} if retry is not None else {"dispatched": False}
            if steps:
                moved = advance(job, steps, expect_status=job.status, expect_token=self.token,
                                refill=fill_after_commit, waits=waits, also=also)
            elif waits is not None:  # it waits where it is: no transition
                moved = bool(BatchJob.objects.filter(pk=job.pk, status=job.status, stage_token=self.token).update(
                    not_before=waits[1], history=waited(job.history, job.status, waits[0]), **also,
                ))
            names.extend(f"{ran.stage}->{step.to}" + ("" if moved else " (not recorded)")
                         for ran, step in zip(recorded, steps, strict=True))
            if waits is not None:
                names.append(f"{job.status} (waits)")
            if not moved or retry is not None:
                return False  # not recorded: someone else moved the job; a retry keeps its slot
            release(job.pk, cleared=True)
        return False

    def _record_fast(self, job: BatchJob, steps: list[Step], kept: list[tuple[Ran, str, str, str]],
                     recorded: list[Ran], names: list[str]) -> bool:
        """`_record` for stages that ended (no wait, no retry), in raw statements sent in batches (`kernel.sqlbatch`).

        In one transaction, as `_record` does it through the ORM in twice the round trips and a
        compile each. Stages that end in the next stage's queue: the tries and the job's locked
        read with the best runnable job (with the transaction's BEGIN on PostgreSQL), then the
        transitions and their status records (the compare-and-set cannot miss: the row is locked
        in the status and token it was read in). A job that ends or is held: the tries, the
        compare-and-set and the records (written only if it matched), one batch. Then COMMIT; the
        slot is kept, or handed over as in `_record`, and an end does what ends do (`applied`).
        """
        onward = steps[-1].to in QUEUES
        statements: list[str] = []
        params: dict[str, Any] = {"job": job.pk, "status": job.status, "token": self.token, "now": timezone.now()}
        tries = self._try_rows(kept)
        if tries:
            statements, values = sqlbatch.insert_rows(tries, prefix="_try")
            params.update(values)
        with transaction.atomic():
            keeps = False
            if onward:
                rows = sqlbatch.run([*statements, locked_with_head_statement()], params)[-1]
                statements = []
                if not rows:  # someone else moved the job (a verb, or a newer dispatch): nothing of it is written
                    names.extend(f"{ran.stage}->{step.to} (not recorded)" for ran, step in zip(recorded, steps, strict=True))
                    return False
                history, job.priority, job.blocked_by_id, best_priority, best_id = rows[0]
                job.history = sqlbatch.converted(BatchJob, "history", history)
                for step in steps:
                    job.priority = step.fields.get("priority", job.priority)
                self._saw_head(best_priority, best_id)
                keeps = keeps_slot(job, self.slot_number, self.head)
            planned = transition(job, steps, also={} if keeps else {"dispatched": False})
            sets, values = sqlbatch.update_set(BatchJob, planned.values, planned.now)
            params.update(values, moved=planned.now)
            statements.append(f"UPDATE batches_batchjob SET {sets} WHERE id = %(job)s AND status = %(status)s"  # noqa: S608 - names from the model
                              " AND stage_token = %(token)s RETURNING id")
            at = len(statements) - 1
            # Onward, the update cannot miss; else what follows it is written only where it moved the job.
            where = "" if onward else (
                "EXISTS (SELECT 1 FROM batches_batchjob WHERE id = %(job)s AND stage_token = %(token)s"
                " AND queued_at = %(moved)s)")
            records = status_rows(planned.changes)
            if records:
                inserts, values = sqlbatch.insert_rows(records, prefix="_rec", where=where)
                statements += inserts
                params.update(values)
            ending = len(statements)
            ending_now = ends(job, planned)
            if ending_now:  # its operation's outcome, newer jobs of its object let go: in the same batch
                endings, values = ended_statements(job, planned, where)
                statements += endings
                params.update(values)
            handing = len(statements)
            if not keeps:  # its slot and the next job for it, read and locked in the same batch
                statements += hand_over_statements(where or "1 = 1")
            answers = sqlbatch.run(statements, params)
            moved = bool(answers[at])
            names.extend(f"{ran.stage}->{step.to}" + ("" if moved else " (not recorded)")
                         for ran, step in zip(recorded, steps, strict=True))
            if not moved:
                return False
            applied(job, planned, fill_after_commit, ended_in_batch=answers[ending:handing] if ending_now else None)
            if keeps:
                return True
            hand_over(job.pk, answers[handing], answers[handing + 1])
        return False

    def _keep_tries(self, kept: list[tuple[Ran, str, str, str]]) -> None:
        """These runs of stages as tries of the job (caller's transaction, one INSERT); `run` is the dispatch."""
        rows = self._try_rows(kept)
        if rows:
            TaskTry.objects.bulk_create(rows)

    def _try_rows(self, kept: list[tuple[Ran, str, str, str]]) -> list[TaskTry]:
        """These runs of stages as tries of the job, unsaved; `run` is the dispatch.

        A try's attempt counts the earlier tries of its stage in this dispatch: none when the
        dispatch had tried nothing before this command's run (each stage runs once in a run),
        else counted.
        """
        rows = []
        for ran, status, code, error in kept:
            earlier = 0 if not self.tried_before else TaskTry.objects.filter(
                kind=TaskTry.Kind.STAGE, object_id=str(self.job_id), name=ran.stage, run=self.token).count()
            rows.append(tries.build(
                TaskTry.Kind.STAGE, str(self.job_id), ran.capture, status=status, ended_at=ran.ended,
                started_at=ran.started, job_id=str(self.job.batch_id), name=ran.stage, run=self.token,
                attempt=earlier + 1, worker=worker_identity(), error_code=code, error_message=error,
            ))
        return rows

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
        self.job = load_job(self.job_id)
        if self.job.status != stage:
            return
        self.slot_number, self.tried_before = None, True
        now = timezone.now()
        message = f"{stage}: {reason}"
        self._record(self.job, [Ran(stage, Outcome(J.FAILED, {"error": message[:8000]}, note=message), None, now, now,
                                    self.job.queued_at)], [])


# ---- the slot hand-off -------------------------------------------------------------------------


def _take(slot: Slot) -> BatchJob | None:
    """Give the slot (locked by the caller) to the next runnable job, queue that job's stage; the job, or None."""
    job = runnable_jobs().select_for_update(skip_locked=True, of=("self",)).only(
        "pk", "status", "object_key", "stage_token", "priority",
    ).first()
    if job is None:
        return None
    _give(slot.pk, job.pk, job.status, job.object_key, job.stage_token)
    return job


def _give(slot_id: int, job_id: int, status: str, key: str, token: int) -> None:
    """The slot to this runnable job (both locked by the caller): the job dispatched under a new token, its stage queued.

    One batch in the caller's transaction: the job, the slot, the command (`enqueue_statements`).
    """
    command = BatchJobStageXCommand(job_id=job_id, stage=status, token=token + 1, key=key)
    queued, params = enqueue_statements(command)
    answers = sqlbatch.run([
        "UPDATE batches_batchjob SET dispatched = %(yes)s, stage_token = %(token)s, last_modified = %(now)s"
        " WHERE id = %(taken)s",
        "UPDATE batches_slot SET job_id = %(taken)s, since = %(now)s WHERE id = %(slot)s",
        *queued,
    ], {"yes": True, "token": token + 1, "now": timezone.now(), "taken": job_id, "slot": slot_id, **params})
    enqueued(command, answers[-1])


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


def release(job_id: int, *, hand_over: bool = True, cleared: bool = False) -> None:
    """The job's stage ended: free its slot and (in the same transaction) give it to the next job.

    `cleared`: the caller has already written the job's `dispatched = False` in this transaction.
    """
    slot = Slot.objects.select_for_update().filter(job_id=job_id).first()
    if not cleared:
        BatchJob.objects.filter(pk=job_id).update(dispatched=False)
    if slot is None:
        return
    if hand_over and slot.number <= slots() and _take(slot) is not None:
        return  # the slot went straight to the next job (one write)
    slot.job_id = None
    slot.since = None
    slot.save(update_fields=["job", "since"])


def hand_over(job_id: int, slot_rows: list[tuple[Any, ...]], next_rows: list[tuple[Any, ...]]) -> None:
    """`release(job_id, cleared=True)` from what `hand_over_statements` read and locked in the caller's batch.

    The slot (if the job held one) goes to the next runnable job and its stage is queued, unless
    none waits or the slot is above BATCH_SLOTS (draining): then it is freed.
    """
    if not slot_rows:
        return
    slot_id, number = slot_rows[0]
    if next_rows and number <= slots():
        _give(slot_id, *next_rows[0])
        return
    sqlbatch.run(["UPDATE batches_slot SET job_id = NULL, since = NULL WHERE id = %(slot)s"], {"slot": slot_id})


def fill_after_commit() -> None:
    """Fill free slots once the caller's transaction commits (new runnable jobs)."""
    transaction.on_commit(lambda: _fill_quietly())


def _fill_quietly() -> None:
    try:
        fill_slots()
    except Exception:  # the beat's dispatch fills them a second later
        log.warning("filling batch slots failed; the dispatch service will", exc_info=True)
