"""Periodic services (celery beat): materialization trigger, input re-checks, pause, timeouts, status, recovery.

Thin tasks: the services themselves live in `statusservice.coordinators`.
"""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from statusservice import batches, bundles, coordinators, operations


@shared_task(name="statusservice.materialization_trigger", ignore_result=True)
def materialization_trigger() -> int:
    """Queue a materialize command for every running job whose next action is within the lookahead."""
    return coordinators.materialization_trigger(timezone.now())


@shared_task(name="statusservice.input_checks", ignore_result=True)
def input_checks() -> int:
    """Queue input checks for jobs with waiting actions whose check is due (nominal time reached, backoff over)."""
    return coordinators.input_checks(timezone.now())


@shared_task(name="statusservice.pause_times", ignore_result=True)
def pause_times() -> int:
    """Pause jobs whose pause time came; unpause those whose pause time was reset or moved."""
    return coordinators.pause_times(timezone.now())


@shared_task(name="statusservice.timeouts", ignore_result=True)
def timeouts() -> int:
    """Time out waiting actions past their timeout (after one last look at their inputs)."""
    return coordinators.timeouts(timezone.now())


@shared_task(name="statusservice.job_statuses", ignore_result=True)
def job_statuses() -> int:
    """Finish running jobs whose actions are all done (derive SUCCEEDED, DONEWITHERROR ...)."""
    return coordinators.job_statuses(timezone.now())


@shared_task(name="statusservice.recovery", ignore_result=True)
def recovery() -> int:
    """Recover lost work: launch reports from task states, relaunches, READY actions nobody started."""
    now = timezone.now()
    return coordinators.recover_launches(now) + coordinators.stuck_ready(now)


@shared_task(name="statusservice.bundles", ignore_result=True)
def bundle_services() -> dict[str, int]:
    """Bundles: start those whose kick-off time came, pause and unpause, derive statuses from coordinators."""
    now = timezone.now()
    return {"kicked_off": bundles.kickoffs(now), "paused": bundles.pause_times(now), "derived": bundles.statuses(now)}


@shared_task(name="statusservice.bundle_kickoffs", ignore_result=True)
def bundle_kickoffs() -> int:
    """Bundles: start those whose kick-off time came (every BUNDLE_KICKOFF_SECONDS; the bundle services also do)."""
    return bundles.kickoffs(timezone.now())


@shared_task(name="statusservice.operations", ignore_result=True)
def operation_services() -> int:
    """Operations: complete those whose jobs all ended but whose completion was lost."""
    return operations.lost_completions(timezone.now())


@shared_task(name="statusservice.batch_dispatch", ignore_result=True)
def batch_dispatch() -> int:
    """Batches: free slots go to the best runnable jobs (every BATCH_DISPATCH_SECONDS)."""
    return batches.dispatch(timezone.now())


@shared_task(name="statusservice.batch_housekeeping", ignore_result=True)
def batch_housekeeping() -> dict[str, int]:
    """Batches: leaked slots freed, leftover working directories removed, expired batches deleted."""
    return batches.housekeeping(timezone.now())
