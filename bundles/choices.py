"""Bundle job statuses: the enum, its groups and the transition table (seed 000 and BundleFunctionalSpec 4.2)."""

from __future__ import annotations

from django.db import models

from coordinators.choices import JobStatus


class BundleStatus(models.TextChoices):
    """Status of a bundle job (the spec's 4.1 list)."""

    PREP = "PREP"
    PREPSUSPENDED = "PREPSUSPENDED"
    PREPPAUSED = "PREPPAUSED"
    RUNNING = "RUNNING"
    RUNNINGWITHERROR = "RUNNINGWITHERROR"
    SUSPENDED = "SUSPENDED"
    SUSPENDEDWITHERROR = "SUSPENDEDWITHERROR"
    PAUSED = "PAUSED"
    PAUSEDWITHERROR = "PAUSEDWITHERROR"
    SUCCEEDED = "SUCCEEDED"
    DONEWITHERROR = "DONEWITHERROR"
    KILLED = "KILLED"
    FAILED = "FAILED"


B = BundleStatus

BUNDLE_TERMINAL = frozenset({B.SUCCEEDED, B.DONEWITHERROR, B.KILLED, B.FAILED})
BUNDLE_PREP = frozenset({B.PREP, B.PREPSUSPENDED, B.PREPPAUSED})
BUNDLE_STARTED = frozenset(set(B) - BUNDLE_PREP - BUNDLE_TERMINAL)  # its coordinators exist (or are being submitted)

BUNDLE_TRANSITIONS: dict[str, frozenset[str]] = {
    # BundleFunctionalSpec 4.2, which is the seed's table with its rows merged ...
    B.PREP: frozenset({B.PREPSUSPENDED, B.PREPPAUSED, B.RUNNING, B.KILLED}),
    B.RUNNING: frozenset({B.RUNNINGWITHERROR, B.SUSPENDED, B.PAUSED, B.SUCCEEDED, B.KILLED, B.FAILED}),
    B.RUNNINGWITHERROR: frozenset(
        {B.RUNNING, B.SUSPENDEDWITHERROR, B.PAUSEDWITHERROR, B.DONEWITHERROR, B.FAILED, B.KILLED}
    ),
    B.PREPSUSPENDED: frozenset({B.PREP, B.KILLED}),
    B.SUSPENDED: frozenset({B.RUNNING, B.SUSPENDEDWITHERROR, B.KILLED}),
    B.SUSPENDEDWITHERROR: frozenset({B.RUNNINGWITHERROR, B.KILLED}),
    B.PREPPAUSED: frozenset({B.PREP, B.KILLED}),
    B.PAUSED: frozenset({B.SUSPENDED, B.RUNNING, B.PAUSEDWITHERROR, B.KILLED}),
    B.PAUSEDWITHERROR: frozenset({B.SUSPENDEDWITHERROR, B.RUNNINGWITHERROR, B.KILLED}),
    # ... plus rerun (spec 8: a rerun bundle is RUNNING again) of a finished one.
    B.SUCCEEDED: frozenset({B.RUNNING}),
    B.DONEWITHERROR: frozenset({B.RUNNINGWITHERROR}),
    B.KILLED: frozenset(),
    B.FAILED: frozenset(),
}

# Derivation from the coordinators (bundles.status) may move a started bundle to any started
# or ended status: coordinators suspended or paused one by one, errors rerun away, all ended.
BUNDLE_DERIVED_TRANSITIONS: dict[str, frozenset[str]] = {
    status: BUNDLE_TRANSITIONS[status] | ((BUNDLE_STARTED | BUNDLE_TERMINAL) - {status})
    for status in BUNDLE_STARTED
}

# Bundle actions mirror their coordinator job's status (PREP until it is submitted).
BundleActionStatus = JobStatus
ACTION_TERMINAL = frozenset({JobStatus.SUCCEEDED, JobStatus.DONEWITHERROR, JobStatus.KILLED, JobStatus.FAILED})
ACTION_ERRORS = frozenset({JobStatus.FAILED, JobStatus.KILLED, JobStatus.DONEWITHERROR, JobStatus.RUNNINGWITHERROR})

SUSPEND_TARGET = {
    B.PREP: B.PREPSUSPENDED, B.RUNNING: B.SUSPENDED, B.RUNNINGWITHERROR: B.SUSPENDEDWITHERROR,
    B.PAUSED: B.SUSPENDED, B.PAUSEDWITHERROR: B.SUSPENDEDWITHERROR,
}
RESUME_TARGET = {B.PREPSUSPENDED: B.PREP, B.SUSPENDED: B.RUNNING, B.SUSPENDEDWITHERROR: B.RUNNINGWITHERROR}
PAUSE_TARGET = {B.PREP: B.PREPPAUSED, B.RUNNING: B.PAUSED, B.RUNNINGWITHERROR: B.PAUSEDWITHERROR}
UNPAUSE_TARGET = {B.PREPPAUSED: B.PREP, B.PAUSED: B.RUNNING, B.PAUSEDWITHERROR: B.RUNNINGWITHERROR}
