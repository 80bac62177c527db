"""Start and materialize: a job becomes RUNNING and creates its actions, idempotently."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db.models import Max
from django.utils import timezone

from coordinators.bulk import ActionWriter, gc_paused
from coordinators.choices import JOB_MATERIALIZING, ActionStatus, JobStatus
from coordinators.commands.actions import CoordJobStatusXCommand
from coordinators.commands.base import JobCommand
from coordinators.models import CoordinatorAction, CoordinatorJob, StatusChange, record_changes
from coordinators.plan import ActionPlanner, ResolvedCoordinator
from coordinators.preparation import load_resolved
from coordinators.sla.evaluate import plan_sla
from coordinators.sla.service import register_actions
from datasets.timeline import count_before, iter_nominal_times, nominal_time
from oozie.definitions import DefinitionError
from xcommands.errors import PreconditionFailed
from xcommands.queue import enqueue


def lookahead() -> timedelta:
    """How far ahead of now actions are created (they then wait for their time and inputs)."""
    return timedelta(seconds=int(settings.COORD_MATERIALIZATION_LOOKAHEAD_SECONDS))


def chunk_size() -> int:
    """Actions created by one materialize command; more means another command follows."""
    return int(settings.COORD_MATERIALIZATION_CHUNK)


def recompute_progress(
    job: CoordinatorJob, resolved: ResolvedCoordinator | None = None, *, last_number: int | None = None
) -> None:
    """Derive done_materializing and next_materialize_at from the last action and the end (caller saves).

    last_action_number is taken from the actions that exist, so revoked look-ahead actions
    (change of end or pause time) are created again if the window later allows them.
    """
    resolved = resolved or load_resolved(job)
    if last_number is None:
        last_number = job.actions.aggregate(last=Max("number"))["last"] or 0
    job.last_action_number = last_number
    total = count_before(resolved.start, job.end_time, resolved.frequency, resolved.tz)
    job.done_materializing = job.last_action_number >= total
    job.next_materialize_at = (
        None if job.done_materializing
        else nominal_time(resolved.start, job.last_action_number, resolved.frequency, resolved.tz)
    )


def throttle_room(job: CoordinatorJob, wanted: int) -> int:
    """How many more WAITING actions the job's throttle allows; when that is more than `wanted`,
    possibly a lower bound of it (which decides exactly as the count would).

    A job has at most last_action_number actions (numbers run from 1 without gaps), so at most
    that many WAITING: when throttle minus that already leaves room for more than `wanted`, the
    count (up to `throttle` rows, again for every chunk of a long catch-up) cannot change anything.
    """
    bound = job.throttle - job.last_action_number
    if bound > wanted:
        return bound
    # Counting stops at the throttle: a long backlog costs no more than a full one.
    waiting = job.actions.filter(status=ActionStatus.WAITING)[: max(0, job.throttle)].count()
    return max(0, job.throttle - waiting)


@dataclass
class CoordStartXCommand(JobCommand):
    """PREP -> RUNNING; the first materialization follows in the same transaction."""

    job_id: str

    def verify_precondition(self) -> None:
        """Only a PREP job starts."""
        if self.job.status != JobStatus.PREP:
            self.job.pending = False
            self.job.save(update_fields=["pending"])
            raise PreconditionFailed(f"job {self.job_id} is {self.job.status}, not PREP")

    def execute(self) -> dict[str, str]:
        """Mark running and queue materialization."""
        self.job.transition_to(JobStatus.RUNNING)
        self.job.next_materialize_at = self.job.start_time
        self.job.save(update_fields=["status", "next_materialize_at", "pending"])
        enqueue(CoordMaterializeXCommand(job_id=self.job_id))
        return {"status": self.job.status}


@dataclass
class CoordMaterializeXCommand(JobCommand):
    """Create the job's due actions (nominal time before now + lookahead, before end), within throttle.

    Idempotent: numbers continue from last_action_number and (job, number) is unique, so a
    retried or duplicated command never creates an action twice. Catch-up of past start
    times happens in chunks: when more are due, another materialize command is queued.
    """

    job_id: str

    def verify_precondition(self) -> None:
        """Only running jobs materialize; nothing while suspended or paused."""
        if self.job.status not in JOB_MATERIALIZING or self.job.done_materializing:
            self.job.pending = False
            self.job.save(update_fields=["pending"])
            raise PreconditionFailed(f"job {self.job_id} is {self.job.status}; not materializing")

    def execute(self) -> dict[str, int]:
        """Create up to a chunk of actions, bounded by throttle and the lookahead."""
        job = self.job
        resolved = load_resolved(job)
        now = timezone.now()
        horizon = min(job.end_time, now + lookahead())
        if job.pause_time is not None:
            horizon = min(horizon, job.pause_time)
        due_total = count_before(resolved.start, horizon, resolved.frequency, resolved.tz)
        due_left = max(0, due_total - job.last_action_number)
        room = throttle_room(job, min(chunk_size(), due_left))
        wanted = min(chunk_size(), room, due_left)
        created = []
        first_index = job.last_action_number  # 0-based index of the next action
        # From the job's start, skipping what exists: a later nominal time taken as a start would
        # move again (endOf*), drift (month ends) or lose its cron DST shift.
        times = (
            iter_nominal_times(
                resolved.start, horizon, resolved.frequency, resolved.tz, limit=wanted, first_index=first_index
            )
            if wanted
            else []
        )
        flags = {event.name: resolved.datasets[event.dataset].done_flag for event in resolved.app.input_events}
        failed = 0
        planner = ActionPlanner(resolved)  # what is the same for every action of the job, computed once
        made, with_sla = 0, resolved.app.sla is not None
        # Each row goes to the database as soon as it is planned (ActionWriter): all or none of
        # them commit with this command's transaction.
        with gc_paused(), ActionWriter() as writer:
            for offset, nominal in enumerate(times):
                number = first_index + offset + 1
                try:
                    plan = planner.plan(number, now=now, nominal=nominal)
                except DefinitionError as exc:
                    # An input that can never be right at this nominal time (a reversed range, a start
                    # out of phase): the action exists, FAILED with the reason, and never runs (issue 16).
                    broken = CoordinatorAction(
                        id=CoordinatorAction.action_id(job.id, number), job=job, number=number,
                        nominal_time=nominal, created_time=now, error_message=str(exc)[:4000],
                    )
                    broken.transition_to(ActionStatus.FAILED)
                    writer.add(broken)
                    created.append(broken)
                    made += 1
                    failed += 1
                    continue
                waits_from = max(nominal, now)  # Oozie: waiting time counts from max(nominal, created)
                values = dict(
                    id=CoordinatorAction.action_id(job.id, number), job_id=job.id, number=number,
                    nominal_time=nominal, created_time=now, data_in=plan.data_in, data_out=plan.data_out,
                    run_conf={"app_path": plan.app_path, **plan.configuration},
                    # (uri, flag) pairs are stored as the same JSON arrays as lists would be; tuples of
                    # strings leave the garbage collector's care, so a chunk of them is not rescanned by
                    # every full collection while it is built (ADR 0024).
                    missing_dependencies=[(uri, flags[name]) for name, uris in plan.data_in.items() for uri in uris],
                    next_check_at=nominal,
                    timeout_at=None if job.timeout < 0 else waits_from + timedelta(minutes=job.timeout),
                    sla=plan_sla(resolved, plan, now),
                )
                made += 1
                if with_sla:  # SLA registration wants the actions themselves
                    action = CoordinatorAction(**values)
                    writer.add(action)
                    created.append(action)
                else:  # no model object: the row goes straight to the writer (ADR 0024)
                    writer.add_values(values)
        for action in created:  # inserted in bulk: record what the broken ones went through (WAITING -> FAILED)
            changes = action.__dict__.pop("_changes", [])
            record_changes(StatusChange.Kind.ACTION, action.id, job.id,
                           [(old, new, at, why or action.error_message) for old, new, at, why in changes])
        if resolved.app.sla is not None:
            register_actions(job, created, now=now)
        # Numbers continue without gaps from last_action_number; the unique (job, number) holds it.
        recompute_progress(job, resolved, last_number=job.last_action_number + made)
        more_due = not job.done_materializing and job.last_action_number < due_total and room > made
        job.pending = more_due
        job.save(update_fields=["last_action_number", "done_materializing", "next_materialize_at", "pending"])
        if more_due:
            enqueue(CoordMaterializeXCommand(job_id=self.job_id))
        if failed:
            enqueue(CoordJobStatusXCommand(job_id=self.job_id))  # RUNNINGWITHERROR, as for any failed action
        return {"created": made, "last_action_number": job.last_action_number}
