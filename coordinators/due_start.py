"""Due start: at their nominal time, check and start the due actions of many jobs in one transaction (ADR 0026).

The per-job path (the input-check service queues one `CoordActionInputCheckXCommand` per job)
costs a command, a transaction and a doorbell per job: 500 jobs due in the same second wait
seconds in the queues. This service does what those commands would do, for every job it
can take, in a few statements per chunk: one storage lookup for all inputs, the execution
policy and concurrency per job, one bulk insert of the runs, one bulk update of the actions,
the runs' messages sent after commit.

It takes a job only when the job's own commands would do exactly the same:

- the job row is locked here (`FOR UPDATE SKIP LOCKED`): every job command locks it first
  (`JobCommand.load_state`), so none of the job's commands runs meanwhile, and a job whose
  command holds it is left to the command path;
- the job's key has no active command (pending, running, rolling back or parked): what was
  queued before this moment runs first, as per-key FIFO wants; such jobs go the command path;
- the job is one the fast path understands: running or paused (so it both checks and
  starts), execution FIFO or LIFO (LAST_ONLY and NONE skip by the clock and need the
  resolved job), no `<input-logic>`, and an action whose inputs still hold
  `coord:latest/future` (phase 3) stays on the command path.

Everything else falls through to the per-job commands, unchanged.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from celery import current_app as app  # project.celery's app, set up by this process
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from coordinators.choices import (
    ACTION_ACTIVE,
    JOB_CHECKING_INPUTS,
    JOB_MATERIALIZING,
    ActionStatus,
    JobStatus,
)
from coordinators.commands.actions import (
    CoordJobStatusXCommand,
    check_backoff,
    has_storage_functions,
    stale_after,
)
from coordinators.launchers import launch_many
from coordinators.models import CoordinatorAction, CoordinatorJob, StatusChange
from datasets.availability import still_missing
from kernel.locking import skip_locked
from xcommands.choices import ACTIVE_STATUSES
from xcommands.models import Command
from xcommands.queue import enqueue

log = logging.getLogger(__name__)

#: Who the status history names for the changes made here.
ACTOR = "coordinators.due-start (service)"
#: Jobs that both have inputs checked and actions started (CHECKING and STARTING statuses alike).
FAST_JOB_STATUSES = sorted(JOB_MATERIALIZING | {JobStatus.PAUSED, JobStatus.PAUSEDWITHERROR})
FAST_EXECUTIONS = ("FIFO", "LIFO")
ACTION_FIELDS = [
    "status", "pending", "missing_dependencies", "check_count", "next_check_at", "error_message",
    "external_id", "ready_at", "submitted_at", "started_at", "ended_at", "last_modified",
]


def enabled() -> bool:
    """COORD_DUE_START (default on): false leaves every due action to the per-job input-check commands."""
    return bool(settings.COORD_DUE_START)


def chunk_size() -> int:
    """Jobs taken per transaction: a chunk commits (and its runs are sent) before the next is read."""
    return max(1, int(settings.COORD_DUE_START_CHUNK))


@dataclass
class DueStart:
    """What one run did: actions checked, started, left waiting, timed out; jobs left to their commands."""

    checked: int = 0
    submitted: int = 0
    ready: int = 0
    waiting: int = 0
    timedout: int = 0
    jobs: int = 0
    left_to_commands: set[str] = field(default_factory=set)
    #: The last job id a chunk took: the next chunk reads after it (jobs are taken in id order).
    after: str = ""

    def as_dict(self) -> dict[str, int]:
        """The figures, for the tick's result and the log."""
        return {
            "checked": self.checked, "submitted": self.submitted, "ready": self.ready, "waiting": self.waiting,
            "timedout": self.timedout, "jobs": self.jobs, "left_to_commands": len(self.left_to_commands),
        }


def due_actions(now: datetime) -> Any:
    """WAITING actions whose check is due and whose time has come, not marked for a queued command (or long stale)."""
    return CoordinatorAction.objects.filter(
        status=ActionStatus.WAITING, next_check_at__lte=now, nominal_time__lte=now,
        job__status__in=sorted(JOB_CHECKING_INPUTS),  # a suspended job's actions wait for its resume
    ).filter(Q(pending=False) | Q(last_modified__lt=now - stale_after()))


def start_due(now: datetime | None = None, *, max_chunks: int = 40) -> DueStart:
    """Check and start due actions chunk by chunk until no job this path may take is left; what it did.

    Several of these may run at once (`fan_out`): each takes other jobs, skipping locked rows.
    """
    report = DueStart()
    if not enabled():
        return report
    precheck(now or timezone.now())
    for _ in range(max_chunks):
        if not _chunk(now or timezone.now(), report):
            break
    if report.checked:
        log.info("due start: %s", report.as_dict())
    return report


def precheck(now: datetime) -> int:
    """Ask storage about the inputs of the due actions before any job is locked; how many inputs were asked.

    Positive answers are recorded (`AvailableInstance`) in their own short transaction, so the
    chunks find them with one query and insert nothing: two passes whose jobs read the same
    input would otherwise wait for each other's uncommitted insert of it.
    """
    return _record_available(due_jobs_actions(now), now)


def look_ahead(now: datetime, until: datetime) -> int:
    """Ask storage now about the inputs of actions that fall due before `until`; how many inputs were asked.

    What exists is recorded (`AvailableInstance`), so when their time comes the pass finds
    their inputs with one query and asks storage nothing (inputs, once there, stay: Oozie's
    datasets are immutable). Nothing is decided early: an action still becomes READY only at
    its nominal time. Run once per tick for the tick ahead, so each input is asked about at
    most once before its action is due.
    """
    if not enabled():
        return 0
    ahead = CoordinatorAction.objects.filter(
        status=ActionStatus.WAITING, pending=False, next_check_at__gt=now, next_check_at__lte=until,
        job__status__in=FAST_JOB_STATUSES, job__execution__in=FAST_EXECUTIONS,
    )
    return _record_available(ahead, now)


def _record_available(actions: Any, now: datetime, limit: int = 10_000) -> int:
    """Ask storage once about every distinct input the actions wait for (phase-3 expressions aside); how many."""
    wanted: set[tuple[str, str]] = set()
    for deps in actions.values_list("missing_dependencies", flat=True)[:limit]:
        wanted.update((str(dep[0]), str(dep[1])) for dep in deps if not str(dep[0]).startswith("${"))
    if wanted:
        with transaction.atomic():
            still_missing(sorted(wanted), now)
    return len(wanted)


def due_jobs_actions(now: datetime) -> Any:
    """The due actions of jobs this path may take."""
    return due_actions(now).filter(job__status__in=FAST_JOB_STATUSES, job__execution__in=FAST_EXECUTIONS)


def parallel() -> int:
    """COORD_DUE_START_PARALLEL: how many worker processes may share one moment's due jobs (default 2)."""
    return max(1, int(settings.COORD_DUE_START_PARALLEL))


def fan_out(now: datetime) -> int:
    """When more jobs are due than one chunk, send helpers (`statusservice.due_start`) to take chunks beside this one.

    They run on other worker processes of the services queue; a lost helper costs nothing (this
    process takes what is left). How many were sent.
    """
    if parallel() <= 1 or not enabled():
        return 0
    jobs = due_jobs(now).count()
    helpers = min(parallel() - 1, -(-jobs // chunk_size()) - 1)
    if helpers <= 0:
        return 0

    sent = 0
    for _ in range(helpers):
        try:
            app.send_task(DUE_START_TASK, queue="services", expires=30, ignore_result=True)
            sent += 1
        except Exception as exc:  # the broker is down: this process does it all
            log.warning("due start helper not sent: %s", exc)
            break
    return sent


DUE_START_TASK = "statusservice.due_start"


def due_jobs(now: datetime) -> Any:
    """Jobs this path may take that have due actions (unlocked ones are then locked by the caller)."""
    due = due_actions(now).filter(job_id=OuterRef("pk"))
    return CoordinatorJob.objects.filter(status__in=FAST_JOB_STATUSES, execution__in=FAST_EXECUTIONS).filter(Exists(due))


def _chunk(now: datetime, report: DueStart) -> int:
    """One transaction: lock up to a chunk of jobs (skipping locked ones), check their due actions, start what is ready.

    How many jobs it locked (0: none is left that no one else holds). It reads only jobs after
    the last one the pass took (`report.after`): reading from the first id again made each
    chunk step over every job the earlier chunks had done, a quadratic pass. A job held at
    that moment (by another pass, or by its command) is not read again by this pass: its
    holder does it, or this tick's input checks give it its command.
    """
    with transaction.atomic():
        taken_rows = list(
            skip_locked(due_jobs(now).filter(pk__gt=report.after)).defer("definition").order_by("pk")[: chunk_size()]
        )
        if not taken_rows:
            return 0
        report.after = taken_rows[-1].pk  # the database's order (its collation), not Python's
        jobs = {job.pk: job for job in taken_rows}
        taken = len(jobs)
        busy = set(Command.objects.filter(key__in=list(jobs), status__in=sorted(ACTIVE_STATUSES)).values_list("key", flat=True))
        logic = set(
            CoordinatorJob.objects.filter(pk__in=list(jobs), definition__contains="input-logic").values_list("pk", flat=True)
        )
        for job_id in busy | logic:
            report.left_to_commands.add(job_id)
            jobs.pop(job_id, None)
        if not jobs:
            return taken  # all left to their commands: the next chunk reads other jobs
        # Locked after their jobs (the order every command takes): the due actions, and the rows competing for slots.
        rows = list(
            CoordinatorAction.objects.select_for_update()
            .filter(job_id__in=list(jobs))
            .filter(Q(status__in=sorted(ACTION_ACTIVE | {ActionStatus.READY})) | Q(pk__in=due_actions(now).values("pk")))
            .defer("data_out", "sla")
        )
        due = [a for a in rows if a.status == ActionStatus.WAITING]
        phase3 = {a.job_id for a in due if has_storage_functions(a)}
        for job_id in phase3:  # coord:latest/future are resolved by the job's command
            report.left_to_commands.add(job_id)
            jobs.pop(job_id)
        due = [a for a in due if a.job_id in jobs]
        wanted = sorted({(str(dep[0]), str(dep[1])) for action in due for dep in action.missing_dependencies})
        missing_now = set(still_missing(wanted, now))
        changes: list[StatusChange] = []
        touched: list[CoordinatorAction] = []
        timed_out: set[str] = set()
        for action in due:
            outcome = _decide(action, now, missing_now, changes)
            report.checked += 1
            if outcome == "timedout":
                report.timedout += 1
                timed_out.add(action.job_id)
            elif outcome == "waiting":
                report.waiting += 1
            touched.append(action)
        started = _start(jobs, [a for a in rows if a.job_id in jobs], now, changes)
        report.submitted += len(started)
        report.ready += sum(1 for a in due if a.status == ActionStatus.READY)
        report.jobs += len(jobs)
        seen = {a.pk for a in touched}
        write_actions(touched + [a for a in started if a.pk not in seen], ACTION_FIELDS)
        StatusChange.objects.bulk_create(changes, batch_size=500)
        for job_id in sorted(timed_out):
            enqueue(CoordJobStatusXCommand(job_id=job_id))  # RUNNINGWITHERROR, as the command path does
        return taken


def write_actions(actions: list[CoordinatorAction], fields: list[str]) -> None:
    """UPDATE each action's fields by primary key in one executemany (Django's bulk_update builds a CASE per field
    and row: 1.9 s for 500 rows, against tens of milliseconds here)."""
    if not actions:
        return
    meta = CoordinatorAction._meta
    quote = connection.ops.quote_name
    columns: list[Any] = [meta.get_field(name) for name in fields]
    table, key = str(meta.db_table), str(meta.pk.column if meta.pk is not None else "id")
    # Identifiers from the model's metadata (quoted); every value is a parameter.
    assignments = ", ".join(f"{quote(f.column)} = %s" for f in columns)
    sql = f"UPDATE {quote(table)} SET {assignments} WHERE {quote(key)} = %s"  # noqa: S608
    params = [
        [f.get_db_prep_save(getattr(action, f.attname), connection) for f in columns] + [action.pk]
        for action in actions
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


def _change(action: CoordinatorAction, target: str, changes: list[StatusChange], reason: str = "") -> None:
    """Move the action (the transition table decides) and record the change for the bulk history insert."""
    action.transition_to(target, reason=reason)
    for old, new, at, why in action.__dict__.pop("_changes", []):  # recorded in bulk by the caller, not by save()
        changes.append(StatusChange(
            kind=StatusChange.Kind.ACTION, object_id=action.id, job_id=action.job_id, from_status=old, to_status=new,
            at=at, by=ACTOR, reason=(why or (action.error_message if new == ActionStatus.TIMEDOUT else ""))[:4000],
        ))


def _decide(action: CoordinatorAction, now: datetime, missing_now: set[Any], changes: list[StatusChange]) -> str:
    """As the input-check command decides an action without input logic: ready, timed out, or checked again later."""
    action.pending = False
    action.last_modified = now
    missing = [dep for dep in action.missing_dependencies if (str(dep[0]), str(dep[1])) in missing_now]
    action.missing_dependencies = missing
    action.check_count += 1
    if not missing:
        action.next_check_at = None
        _change(action, ActionStatus.READY, changes)
        return "ready"
    if action.timeout_at is not None and now >= action.timeout_at:
        action.next_check_at = None
        action.error_message = f"timed out waiting for {len(missing)} input(s)"
        _change(action, ActionStatus.TIMEDOUT, changes)
        return "timedout"
    action.next_check_at = now + check_backoff(action.check_count - 1)
    if action.timeout_at is not None:
        action.next_check_at = min(action.next_check_at, action.timeout_at)
    return "waiting"


def _start(
    jobs: dict[str, CoordinatorJob], rows: list[CoordinatorAction], now: datetime, changes: list[StatusChange]
) -> list[CoordinatorAction]:
    """Per job: READY actions in policy order up to concurrency, all jobs' runs launched together; those submitted."""
    by_job: dict[str, list[CoordinatorAction]] = {}
    for action in rows:
        by_job.setdefault(action.job_id, []).append(action)
    chosen_all: list[tuple[CoordinatorJob, list[CoordinatorAction]]] = []
    for job_id, actions in by_job.items():
        job = jobs[job_id]
        running = sum(1 for a in actions if a.status in ACTION_ACTIVE)
        ready = sorted((a for a in actions if a.status == ActionStatus.READY),
                       key=lambda a: a.nominal_time, reverse=job.execution == "LIFO")
        chosen = ready if job.concurrency < 0 else ready[: max(0, job.concurrency - running)]
        if chosen:
            chosen_all.append((job, chosen))
    started = [(job, action) for job, chosen in chosen_all for action in chosen]
    launch_many(started, now)
    for _, action in started:
        action.last_modified = now
        _change(action, ActionStatus.SUBMITTED, changes)
    return [action for _, action in started]
