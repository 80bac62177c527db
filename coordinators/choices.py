"""Coordinator job and action statuses: enums, groups and explicit transition tables (spec 6.1.2, 6.1.3.2)."""

from __future__ import annotations

from django.db import models

# Re-exported: every coordinator module takes its table helpers from here.
from kernel.statemachine import IllegalTransition as IllegalTransition
from kernel.statemachine import check_transition as check_transition
from kernel.statemachine import transition_path as transition_path


class JobStatus(models.TextChoices):
    """Status of a coordinator job."""

    PREP = "PREP"
    RUNNING = "RUNNING"
    RUNNINGWITHERROR = "RUNNINGWITHERROR"
    PREPSUSPENDED = "PREPSUSPENDED"
    SUSPENDED = "SUSPENDED"
    SUSPENDEDWITHERROR = "SUSPENDEDWITHERROR"
    PREPPAUSED = "PREPPAUSED"
    PAUSED = "PAUSED"
    PAUSEDWITHERROR = "PAUSEDWITHERROR"
    SUCCEEDED = "SUCCEEDED"
    DONEWITHERROR = "DONEWITHERROR"
    KILLED = "KILLED"
    FAILED = "FAILED"
    IGNORED = "IGNORED"


class ActionStatus(models.TextChoices):
    """Status of a coordinator action."""

    WAITING = "WAITING"
    READY = "READY"
    SUBMITTED = "SUBMITTED"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    SUCCEEDED = "SUCCEEDED"
    KILLED = "KILLED"
    FAILED = "FAILED"
    TIMEDOUT = "TIMEDOUT"
    SKIPPED = "SKIPPED"
    IGNORED = "IGNORED"


J, A = JobStatus, ActionStatus

JOB_TERMINAL = frozenset({J.SUCCEEDED, J.DONEWITHERROR, J.KILLED, J.FAILED, J.IGNORED})
JOB_SUSPENDED = frozenset({J.PREPSUSPENDED, J.SUSPENDED, J.SUSPENDEDWITHERROR})
JOB_PAUSED = frozenset({J.PREPPAUSED, J.PAUSED, J.PAUSEDWITHERROR})
JOB_MATERIALIZING = frozenset({J.RUNNING, J.RUNNINGWITHERROR})  # only these create actions
#: Jobs whose WAITING actions have their inputs checked: a suspended (or ended) job's actions cause no command.
JOB_CHECKING_INPUTS = JOB_MATERIALIZING | JOB_PAUSED

ACTION_TERMINAL = frozenset({A.SUCCEEDED, A.KILLED, A.FAILED, A.TIMEDOUT, A.SKIPPED, A.IGNORED})
ACTION_ACTIVE = frozenset({A.SUBMITTED, A.RUNNING, A.SUSPENDED})  # count against concurrency
ACTION_PENDING = frozenset({A.WAITING, A.READY})
ACTION_RERUNNABLE = frozenset({A.TIMEDOUT, A.SUCCEEDED, A.KILLED, A.FAILED, A.IGNORED})  # DG_CommandLineTool -rerun
ACTION_IGNORABLE = frozenset({A.FAILED, A.KILLED, A.TIMEDOUT})  # CoordActionsIgnoreXCommand
JOB_IGNORABLE = frozenset({J.FAILED, J.KILLED})  # CoordChangeXCommand status=IGNORED (and not pending)

JOB_TRANSITIONS: dict[str, frozenset[str]] = {
    # The table of spec 6.1.2, verbatim ...
    J.PREP: frozenset({J.PREPSUSPENDED, J.PREPPAUSED, J.RUNNING, J.KILLED}),
    J.RUNNING: frozenset({J.RUNNINGWITHERROR, J.SUSPENDED, J.PAUSED, J.SUCCEEDED, J.KILLED}),
    J.RUNNINGWITHERROR: frozenset(
        {J.RUNNING, J.SUSPENDEDWITHERROR, J.PAUSEDWITHERROR, J.DONEWITHERROR, J.KILLED, J.FAILED}
    ),
    J.PREPSUSPENDED: frozenset({J.PREP, J.KILLED}),
    J.SUSPENDED: frozenset({J.RUNNING, J.KILLED}),
    J.SUSPENDEDWITHERROR: frozenset({J.RUNNINGWITHERROR, J.KILLED}),
    J.PREPPAUSED: frozenset({J.PREP, J.KILLED}),
    J.PAUSED: frozenset({J.SUSPENDED, J.RUNNING, J.KILLED}),
    J.PAUSEDWITHERROR: frozenset({J.SUSPENDEDWITHERROR, J.RUNNINGWITHERROR, J.KILLED}),
    # ... plus rerun (DG_CoordinatorRerun: rerunning actions of a finished job revives it).
    J.SUCCEEDED: frozenset({J.RUNNING}),
    J.DONEWITHERROR: frozenset({J.RUNNINGWITHERROR}),
    # ... and `-change status=RUNNING` (DG_CommandLineTool) of FAILED, KILLED and IGNORED jobs.
    J.FAILED: frozenset({J.IGNORED, J.RUNNINGWITHERROR, J.RUNNING}),
    J.KILLED: frozenset({J.IGNORED, J.RUNNINGWITHERROR, J.RUNNING}),
    J.IGNORED: frozenset({J.RUNNING}),
}

ACTION_TRANSITIONS: dict[str, frozenset[str]] = {
    # The table of spec 6.1.3.2, verbatim ...
    A.WAITING: frozenset({A.READY, A.TIMEDOUT, A.SKIPPED, A.KILLED, A.FAILED}),
    A.READY: frozenset({A.SUBMITTED, A.SKIPPED, A.KILLED}),
    A.SUBMITTED: frozenset({A.RUNNING, A.KILLED, A.FAILED, A.SUSPENDED}),
    A.RUNNING: frozenset({A.SUCCEEDED, A.KILLED, A.FAILED, A.SUSPENDED}),
    # ... plus SUSPENDED while its workflow is (Oozie's CoordActionStatus; its run's end waits for resume).
    A.SUSPENDED: frozenset({A.RUNNING, A.KILLED, A.FAILED, A.SUCCEEDED}),
    A.FAILED: frozenset({A.IGNORED, A.WAITING}),
    A.KILLED: frozenset({A.IGNORED, A.WAITING}),
    A.TIMEDOUT: frozenset({A.IGNORED, A.WAITING}),
    A.IGNORED: frozenset({A.WAITING}),
    # ... plus rerun of SUCCEEDED actions (DG_CoordinatorRerun pre-conditions), and WAITING ->
    # FAILED when an input cannot be resolved at start (coord:latest(1) computed), as Oozie fails it.
    A.SUCCEEDED: frozenset({A.WAITING}),
    A.SKIPPED: frozenset(),
}


def job_status_from_actions(statuses: list[str], *, materialization_done: bool, current: str) -> str:
    """The job status implied by its actions (spec 6.1.2), for a job that is running or finished.

    IGNORED actions do not count, as in Oozie's CoordStatusTransitXCommand (it reads the
    "unignored" actions only): a job whose other actions all failed is FAILED, and one whose
    actions were all ignored is SUCCEEDED.
    """
    statuses = [s for s in statuses if s != A.IGNORED]
    if materialization_done and not statuses:
        return J.SUCCEEDED  # nothing to run (an end moved before the start): done, as Oozie does
    finished = statuses and all(s in ACTION_TERMINAL for s in statuses)
    errors = {A.KILLED, A.FAILED, A.TIMEDOUT}
    has_error = any(s in errors for s in statuses)
    if materialization_done and finished:
        # SKIPPED (LAST_ONLY, NONE) is not an error: it counts with SUCCEEDED.
        if all(s in (A.SUCCEEDED, A.SKIPPED) for s in statuses):
            return J.SUCCEEDED
        if all(s == A.FAILED for s in statuses):
            return J.FAILED
        if all(s == A.KILLED for s in statuses):
            return J.KILLED
        return J.DONEWITHERROR  # any mix with KILLED/FAILED/TIMEDOUT, or all TIMEDOUT
    if current in (J.RUNNING, J.RUNNINGWITHERROR):
        # Errors gone (their actions rerun) take the job back to RUNNING (Oozie's StatusTransitService).
        return J.RUNNINGWITHERROR if has_error else J.RUNNING
    return current
