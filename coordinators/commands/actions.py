"""Action commands: input check (and timeout), ready (policies and launch), status reports."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from coordinators.choices import (
    ACTION_ACTIVE,
    ACTION_PENDING,
    ACTION_TERMINAL,
    JOB_CHECKING_INPUTS,
    JOB_MATERIALIZING,
    JOB_TRANSITIONS,
    ActionStatus,
    JobStatus,
    job_status_from_actions,
    transition_path,
)
from coordinators.commands.base import ActionCommand, JobCommand
from coordinators.launchers import launch_actions
from coordinators.models import CoordinatorAction, CoordinatorJob, save_actions
from coordinators.plan import (
    ActionPlan,
    ResolvedCoordinator,
    describe_waiting,
    logic_outcome,
    resolve_at_start,
    resolve_when_ready,
)
from coordinators.preparation import load_resolved
from datasets.availability import (
    announce,
    is_available,
    normalize_uri,
    on_storage,
    recorded,
    still_missing,
)
from datasets.timeline import count_before, nominal_time
from oozie.definitions import DefinitionError
from xcommands.errors import PreconditionFailed
from xcommands.queue import enqueue

CHECKING_JOB_STATUSES = JOB_CHECKING_INPUTS


def check_backoff(checks: int) -> timedelta:
    """Delay before the next input check: doubling from COORD_INPUT_CHECK_SECONDS up to the cap."""
    base = float(settings.COORD_INPUT_CHECK_SECONDS)
    cap = float(settings.COORD_INPUT_CHECK_MAX_SECONDS)
    return timedelta(seconds=min(cap, base * (2 ** min(checks, 20))))


STARTING_JOB_STATUSES = JOB_MATERIALIZING | {JobStatus.PAUSED, JobStatus.PAUSEDWITHERROR}


def stale_after() -> timedelta:
    """How long a pending flag or an unanswered launch may sit before recovery (or the due start) takes it again."""
    return timedelta(seconds=int(settings.COORD_RECOVERY_SECONDS))


def none_tolerance() -> timedelta:
    """execution NONE: how late an action may start (oozie.coord.execution.none.tolerance)."""
    return timedelta(minutes=int(settings.COORD_EXECUTION_NONE_TOLERANCE_MINUTES))


def skip_before(job: CoordinatorJob, now: datetime) -> datetime | None:
    """WAITING/READY actions with a nominal time before this are SKIPPED (LAST_ONLY, NONE), or None.

    LAST_ONLY: once the next action's nominal time has come; that is, every action before
    the latest nominal time not after now. NONE: once now is past nominal time + tolerance.
    """
    if job.execution == "NONE":
        return now - none_tolerance()
    if job.execution != "LAST_ONLY" or now < job.start_time:
        return None

    resolved = load_resolved(job)
    due = count_before(resolved.start, min(now + timedelta(microseconds=1), job.end_time), resolved.frequency, resolved.tz)
    return nominal_time(resolved.start, due - 1, resolved.frequency, resolved.tz) if due > 0 else None


READY_FIELDS = ["status", "pending", "missing_dependencies", "check_count", "next_check_at", "run_conf"]


def start_ready_actions(job: CoordinatorJob, now: datetime, fresh: Iterable[CoordinatorAction] = ()) -> dict[str, int]:
    """Skip what the execution policy discards, then submit READY actions in policy order up to concurrency.

    Runs under the job's key (from the input-check, ready and status commands); launches
    after commit. `fresh` are actions the caller just made READY and has not saved: they are
    saved here once, as SUBMITTED or READY.
    """
    fresh = list(fresh)
    skipped = 0
    cutoff = skip_before(job, now)
    if cutoff is not None:
        doomed = job.actions.select_for_update().filter(status__in=sorted(ACTION_PENDING), nominal_time__lt=cutoff)
        for action in doomed:
            action.transition_to(ActionStatus.SKIPPED)
            action.pending = False
            action.next_check_at = None
            action.save(update_fields=["status", "pending", "next_check_at"])
            skipped += 1
        fresh = [a for a in fresh if a.nominal_time >= cutoff]
    # One query for the slots in use and the READY queue (rows of a job: bounded by throttle).
    rows = list(
        job.actions.select_for_update()
        .filter(status__in=sorted(ACTION_ACTIVE | {ActionStatus.READY}))
        .exclude(pk__in=[a.pk for a in fresh])
        .defer("data_in", "data_out", "missing_dependencies", "sla")
    )
    running = sum(1 for a in rows if a.status in ACTION_ACTIVE)
    slots = None if job.concurrency < 0 else max(0, job.concurrency - running)
    ready = sorted(
        [a for a in rows if a.status == ActionStatus.READY] + fresh,
        key=lambda a: a.nominal_time, reverse=job.execution in ("LIFO", "LAST_ONLY"),
    )
    chosen = ready if slots is None else ready[:slots]
    fresh_ids = {a.pk for a in fresh}
    launch_actions(job, chosen, now)
    for action in chosen:
        action.transition_to(ActionStatus.SUBMITTED)
    # Saved together (as many as concurrency lets in): one UPDATE and one INSERT of changes per kind of row.
    save_actions([a for a in chosen if a.pk in fresh_ids], [*READY_FIELDS, "external_id"])
    save_actions([a for a in chosen if a.pk not in fresh_ids], ["status", "external_id"])
    chosen_ids = {a.pk for a in chosen}
    save_actions([a for a in fresh if a.pk not in chosen_ids], READY_FIELDS)
    if skipped:
        enqueue(CoordJobStatusXCommand(job_id=job.id))
    return {"submitted": len(chosen), "skipped": skipped}


def has_storage_functions(action: CoordinatorAction) -> bool:
    """Whether some input still waits for coord:latest/coord:future to be resolved (phase 3).

    The inputs say it even when the missing list does not (with `<input-logic>` that list
    names only what the logic still waits for).
    """
    return any(str(dep[0]).startswith("${") for dep in action.missing_dependencies) or any(
        str(uri).startswith("${") for uris in action.data_in.values() for uri in uris
    )


def check_chunk() -> int:
    """Waiting actions one input-check command looks at; more means another command follows."""
    return int(settings.COORD_INPUT_CHECK_CHUNK)


@dataclass
class CoordActionInputCheckXCommand(JobCommand):
    """Check the inputs of a job's waiting actions: READY (and started, room permitting), TIMEDOUT, or later.

    `numbers` names the actions (dataset events, reruns, timeouts); empty means every
    WAITING action marked pending or due (the beat's tick). One command per job checks
    each URI once however many actions share it, and applies the execution policy once
    to all that became ready, so FIFO/LIFO/LAST_ONLY hold on a backlog.
    """

    job_id: str
    numbers: list[int] = field(default_factory=list)

    def verify_precondition(self) -> None:
        """Only live jobs have inputs checked."""
        if self.job.status not in CHECKING_JOB_STATUSES:
            self._waiting().filter(pending=True).update(pending=False)
            raise PreconditionFailed(f"job {self.job_id} is {self.job.status}; inputs are not checked")

    def _waiting(self) -> QuerySet[CoordinatorAction]:
        waiting = self.job.actions.filter(status=ActionStatus.WAITING)
        if self.numbers:
            return waiting.filter(number__in=self.numbers)
        return waiting.filter(Q(pending=True) | Q(next_check_at__lte=timezone.now()))

    def execute(self) -> dict[str, Any]:
        """Ask storage once for everything missing; decide each action; start what is ready."""
        job, now = self.job, timezone.now()
        actions = list(self._waiting().select_for_update().order_by("nominal_time")[: check_chunk() + 1])
        more = len(actions) > check_chunk()
        actions = actions[: check_chunk()]
        cutoff = skip_before(job, now)
        due = [a for a in actions if a.nominal_time <= now and not (cutoff is not None and a.nominal_time < cutoff)]
        failed = 0
        for action in [a for a in due if has_storage_functions(a)]:
            if not self._resolve_at_start(action, now):
                due.remove(action)
                actions.remove(action)
                failed += 1
        wanted = {tuple(dep) for action in due for dep in self._dependencies(action)}
        missing_now = set(still_missing(sorted(wanted), now))  # type: ignore[arg-type]
        outcome = {"ready": 0, "timedout": 0, "waiting": 0}
        fresh = []
        for action in actions:
            decision = self._decide(action, now, cutoff, missing_now)
            if decision == "failed":
                failed += 1
                continue
            outcome[decision] += 1
            if decision == "ready":
                fresh.append(action)
        if outcome["timedout"] or failed:
            enqueue(CoordJobStatusXCommand(job_id=job.id))
        if more:
            enqueue(CoordActionInputCheckXCommand(job_id=job.id, numbers=self.numbers))
        started: dict[str, int] = {}
        if (fresh or cutoff is not None) and job.status in STARTING_JOB_STATUSES:
            started = start_ready_actions(job, now, fresh)
        else:
            for action in fresh:
                action.save(update_fields=READY_FIELDS)
        return {**outcome, "failed": failed, **started}

    def _resolved_job(self) -> ResolvedCoordinator:
        """The job's resolved definition, loaded once per command."""
        if not hasattr(self, "_resolved"):
            self._resolved = load_resolved(self.job)
        return self._resolved

    def _logic_job(self) -> ResolvedCoordinator | None:
        """The resolved job when it has `<input-logic>` (spec 6.10), else None (every input is required)."""
        if "input-logic" not in self.job.definition:
            return None  # no need to parse the definition: the common case
        resolved = self._resolved_job()
        return resolved if resolved.logic is not None else None

    def _dependencies(self, action: CoordinatorAction) -> list[list[str]]:
        """What to ask storage about: the missing list, or with input logic every input the logic reads.

        The logic needs the whole picture each time (an <or> can be satisfied by a data-in it
        was not waiting for a minute ago); stored positive answers keep this cheap.
        """
        resolved = self._logic_job()
        if resolved is None or resolved.logic is None:
            return list(action.missing_dependencies)
        flags = _flags(resolved)
        return [[uri, flags[name]] for name in resolved.logic.referenced() for uri in action.data_in.get(name, [])]

    def _resolve_at_start(self, action: CoordinatorAction, now: datetime) -> bool:
        """Phase 3: coord:latest/coord:future against storage; False when the action failed (bad arguments)."""
        resolved = self._resolved_job()
        configuration = {k: str(v) for k, v in action.run_conf.items() if k != "app_path"}
        plan = ActionPlan(
            action.number, action.nominal_time, action.data_in, action.data_out,
            str(action.run_conf.get("app_path", "")), configuration,
        )
        try:
            result = resolve_at_start(
                resolved, plan, actual_time=action.created_time,
                is_available=lambda uri, flag: is_available(uri, flag, now),
                recorded=recorded, on_storage=lambda uri, flag: on_storage(uri, flag, now),
            )
        except DefinitionError as exc:
            action.transition_to(ActionStatus.FAILED)
            action.pending, action.next_check_at, action.error_message = False, None, str(exc)[:4000]
            action.save(update_fields=["status", "pending", "next_check_at", "error_message"])
            return False
        flags = {event.name: resolved.datasets[event.dataset].done_flag for event in resolved.app.input_events}
        action.data_in = result.data_in
        action.run_conf = {"app_path": result.app_path, **result.configuration}
        # Instances found by latest/future are available by construction; what is still
        # unresolved waits as its expressions.
        action.missing_dependencies = [
            dep for dep in action.missing_dependencies if not str(dep[0]).startswith("${")
        ] + [[text, flags[name]] for name in result.unresolved for text in result.data_in[name]]
        action.save(update_fields=["data_in", "run_conf", "missing_dependencies"])
        return True

    def _decide(self, action: CoordinatorAction, now: datetime, cutoff: datetime | None, missing_now: set[Any]) -> str:
        action.pending = False
        if now < action.nominal_time:  # inputs are checked from the nominal time on (Oozie)
            action.next_check_at = action.nominal_time
            action.save(update_fields=["pending", "next_check_at"])
            return "waiting"
        if cutoff is not None and action.nominal_time < cutoff:  # LAST_ONLY / NONE: skipped by the policy
            action.save(update_fields=["pending"])
            return "waiting"
        resolved = self._logic_job()
        if resolved is not None:
            return self._decide_by_logic(action, now, resolved, missing_now)
        missing = [dep for dep in action.missing_dependencies if tuple(dep) in missing_now]
        action.missing_dependencies = missing
        action.check_count += 1
        if not missing:
            action.transition_to(ActionStatus.READY)
            action.next_check_at = None
            return "ready"  # saved by execute(): once, as READY or straight on as SUBMITTED
        if action.timeout_at is not None and now >= action.timeout_at:
            action.transition_to(ActionStatus.TIMEDOUT)
            action.next_check_at = None
            action.error_message = f"timed out waiting for {len(missing)} input(s)"
            action.save(update_fields=["status", "pending", "missing_dependencies", "check_count", "next_check_at", "error_message"])
            return "timedout"
        action.next_check_at = now + check_backoff(action.check_count - 1)
        if action.timeout_at is not None:
            action.next_check_at = min(action.next_check_at, action.timeout_at)
        action.save(update_fields=["pending", "missing_dependencies", "check_count", "next_check_at"])
        return "waiting"


    def _decide_by_logic(
        self, action: CoordinatorAction, now: datetime, resolved: ResolvedCoordinator, missing_now: set[Any]
    ) -> str:
        """`<input-logic>`: READY as soon as the logic is satisfied, coord:dataIn of its names resolved then.

        While it is not, the missing list is what the logic still waits for (during a wait:
        that data-in only), and the next check comes no later than the end of a running wait.
        """
        def available(uri: str, flag: str) -> bool:
            return (uri, flag) not in missing_now

        waits_from = max(action.nominal_time, action.created_time)  # Oozie: the later of the two
        outcome = logic_outcome(resolved, action.data_in, is_available=available, waited=now - waits_from)
        flags = _flags(resolved)
        action.check_count += 1
        if outcome.satisfied:
            configuration = {k: str(v) for k, v in action.run_conf.items() if k != "app_path"}
            plan = ActionPlan(
                action.number, action.nominal_time, action.data_in, action.data_out,
                str(action.run_conf.get("app_path", "")), configuration,
            )
            try:
                result = resolve_when_ready(resolved, plan, actual_time=action.created_time, is_available=available)
            except DefinitionError as exc:
                action.transition_to(ActionStatus.FAILED)
                action.next_check_at, action.error_message = None, str(exc)[:4000]
                action.save(update_fields=["status", "pending", "next_check_at", "error_message", "check_count"])
                return "failed"
            action.run_conf = {"app_path": result.app_path, **result.configuration}
            action.missing_dependencies = []
            action.transition_to(ActionStatus.READY)
            action.next_check_at = None
            return "ready"  # saved by execute(), run_conf included (READY_FIELDS)
        action.missing_dependencies = [[uri, flags[event]] for event, uri in outcome.waiting_for]
        if action.timeout_at is not None and now >= action.timeout_at:
            action.transition_to(ActionStatus.TIMEDOUT)
            action.next_check_at = None
            reason = describe_waiting(outcome, resolved.logic) if resolved.logic is not None else "input logic"
            action.error_message = f"timed out: {reason}"[:4000]
            action.save(update_fields=["status", "pending", "missing_dependencies", "check_count", "next_check_at", "error_message"])
            return "timedout"
        action.next_check_at = now + check_backoff(action.check_count - 1)
        if outcome.wake_after is not None:  # look again as soon as the running wait is over
            action.next_check_at = min(action.next_check_at, waits_from + timedelta(minutes=outcome.wake_after))
        if action.timeout_at is not None:
            action.next_check_at = min(action.next_check_at, action.timeout_at)
        action.save(update_fields=["pending", "missing_dependencies", "check_count", "next_check_at"])
        return "waiting"


def _flags(resolved: ResolvedCoordinator) -> dict[str, str]:
    """The done-flag of each input event's dataset."""
    return {event.name: resolved.datasets[event.dataset].done_flag for event in resolved.app.input_events}


@dataclass
class CoordActionReadyXCommand(JobCommand):
    """Apply the execution policy to READY actions and launch as many as concurrency allows."""

    job_id: str

    def verify_precondition(self) -> None:
        """Nothing starts while the job is suspended or finished (a paused job only stops creating actions)."""
        if self.job.status not in STARTING_JOB_STATUSES:
            raise PreconditionFailed(f"job {self.job_id} is {self.job.status}; nothing starts")

    def execute(self) -> dict[str, Any]:
        """Skip what the policy discards, then submit in policy order up to concurrency."""
        return start_ready_actions(self.job, timezone.now())


REPORT_ALLOWED_FROM: dict[str, tuple[str, ...]] = {
    ActionStatus.RUNNING: (ActionStatus.SUBMITTED,),
    ActionStatus.SUCCEEDED: (ActionStatus.SUBMITTED, ActionStatus.RUNNING, ActionStatus.SUSPENDED),
    ActionStatus.FAILED: (ActionStatus.SUBMITTED, ActionStatus.RUNNING, ActionStatus.SUSPENDED),
    ActionStatus.KILLED: (ActionStatus.SUBMITTED, ActionStatus.RUNNING, ActionStatus.SUSPENDED),
}


@dataclass
class CoordActionStatusXCommand(ActionCommand):
    """Record how the action's run ended (SUCCEEDED, FAILED, KILLED), once, if the action still waits for that run."""

    job_id: str
    number: int
    status: str
    error: str = ""
    workflow_id: str = ""

    def verify_precondition(self) -> None:
        """Late or duplicated reports (after kill, twice) and reports of an earlier run (after rerun) are skipped."""
        if self.action.status not in REPORT_ALLOWED_FROM.get(self.status, ()):
            raise PreconditionFailed(f"action {self.action.id} is {self.action.status}; report {self.status} ignored")
        if self.workflow_id and self.action.external_id != self.workflow_id:
            raise PreconditionFailed(
                f"action {self.action.id} now runs {self.action.external_id or 'nothing'}; "
                f"report {self.status} of {self.workflow_id} ignored"
            )

    def execute(self) -> dict[str, str]:
        """Apply the report; a finished action frees a slot and may change the job's status."""
        action = self.action
        result: dict[str, Any] = {"status": self.status}
        woken = apply_run_outcome(action, self.status, self.error, timezone.now())
        if woken is not None:
            result["outputs_woken"] = woken
        if action.status in ACTION_TERMINAL:
            # Under the job's key already: free the slot and settle the job here, not in two more commands.
            if self.job.status in STARTING_JOB_STATUSES:
                result.update(start_ready_actions(self.job, timezone.now()))
            if self.job.status in JOB_MATERIALIZING:
                result["job_status"] = derive_job_status(self.job)
        return result


@dataclass
class CoordJobStatusXCommand(JobCommand):
    """Derive the job's status from its actions (spec 6.1.2)."""

    job_id: str


    def verify_precondition(self) -> None:
        """Only running jobs change by their actions."""
        if self.job.status not in JOB_MATERIALIZING:
            raise PreconditionFailed(f"job {self.job_id} is {self.job.status}")

    def execute(self) -> dict[str, str]:
        """Compute and store the derived status."""
        return {"status": derive_job_status(self.job)}


def apply_run_outcome(action: CoordinatorAction, status: str, error: str, now: datetime) -> int | None:
    """Move a launched action to its run's outcome (through RUNNING if it never got there) and save it.

    A SUCCEEDED action's outputs are announced: how many waiting actions that woke (None
    otherwise). The report command and the run's own settle (run_events.settle_action) share it.
    """
    if status in (ActionStatus.SUCCEEDED, ActionStatus.FAILED) and action.status == ActionStatus.SUBMITTED:
        action.transition_to(ActionStatus.RUNNING)
    action.transition_to(status)
    action.error_message = (error or "")[:4000]
    action.save(update_fields=["status", "error_message"])
    return announce_outputs(action, now) if status == ActionStatus.SUCCEEDED else None


def announce_outputs(action: CoordinatorAction, now: datetime) -> int:
    """A succeeded action's data-out instances are available: record them as a dataset event would; actions woken.

    The action's success is the producer's word that it wrote them (ADR 0018), so every
    consumer waiting for one is checked at once instead of at its next backoff.
    """
    uris = sorted({uri for uris in action.data_out.values() for uri in uris if uri and not str(uri).startswith("${")})
    for uri in uris:
        announce(uri, now, source="output")
    return wake_waiting_actions(uris, now)


def wake_waiting_actions(uris: Iterable[str], now: datetime) -> int:
    """Queue an input check now for every WAITING action (of any job) missing one of these URIs; how many.

    Waiting actions are few (bounded by throttle per job): a text match narrows them, the
    exact comparison decides. Actions already marked pending are woken too: their check may be
    running now, on a snapshot taken before this announcement commits.
    """
    wanted = {normalize_uri(uri) for uri in uris}
    if not wanted:
        return 0
    text_match = Q()
    for uri in wanted:
        text_match |= Q(deps__contains=uri)
    candidates = (
        CoordinatorAction.objects.filter(status=ActionStatus.WAITING)
        .annotate(deps=Cast("missing_dependencies", TextField()))
        .filter(text_match)
        .values_list("pk", "job_id", "number", "missing_dependencies")
    )
    woken = [(pk, job_id, number) for pk, job_id, number, deps in candidates
             if any(dep and dep[0] in wanted for dep in deps)]
    CoordinatorAction.objects.filter(pk__in=[pk for pk, _, _ in woken]).update(
        pending=True, next_check_at=now, last_modified=now
    )
    by_job: dict[str, list[int]] = {}
    for _, job_id, number in woken:
        by_job.setdefault(job_id, []).append(number)
    for job_id, numbers in sorted(by_job.items()):
        enqueue(CoordActionInputCheckXCommand(job_id=job_id, numbers=sorted(numbers)))
    return len(woken)


def derive_job_status(job: CoordinatorJob) -> str:
    """Store the status a running job's actions imply (spec 6.1.2); the job row must be locked (under its key)."""
    statuses = list(job.actions.values_list("status", flat=True).distinct())
    target = job_status_from_actions(statuses, materialization_done=job.done_materializing, current=job.status)
    if target != job.status:
        # e.g. RUNNING -> RUNNINGWITHERROR -> DONEWITHERROR: the table passes through it.
        for step in transition_path(JOB_TRANSITIONS, job.status, target) or [target]:
            job.transition_to(step)
        job.save(update_fields=["status"])
    return job.status
