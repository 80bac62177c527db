"""Periodic services (celery beat): one tick runs them all when due (`statusservice.tick`, ADR 0017).

Thin tasks: the services themselves live in `statusservice.coordinators`, `.bundles` ...; the
tick and its wake-ups in `statusservice.tick`. The per-service tasks below remain for running
one service by hand (`celery call statusservice.timeouts`) and for tests.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from celery.signals import task_postrun
from django.utils import timezone

from coordinators.due_start import start_due
from statusservice import batches, bundles, coordinators, operations
from statusservice import tick as clock


@shared_task(name=clock.TICK_TASK, ignore_result=True)
def tick() -> dict[str, Any]:
    """Run every periodic service whose period came, and arm wake-ups for work due before the next tick."""
    return clock.run_tick()


@shared_task(name=clock.WAKEUP_TASK, ignore_result=True)
def wakeup(kind: str, stamp: str) -> Any:
    """Run one kind of due work (input checks, kick-offs, batch dispatch) at its due time, between ticks."""
    return clock.run_wakeup(kind, stamp)


@task_postrun.connect
def _arm_after_commands(sender: Any = None, **kwargs: Any) -> None:
    """New actions or a short backoff may make input checks due before the next tick: arm a wake-up for them."""
    name = getattr(sender, "name", "")
    if name in clock.ARMING_COMMANDS:
        clock.after_command(name)


@shared_task(name="statusservice.materialization_trigger", ignore_result=True)
def materialization_trigger() -> int:
    """Queue a materialize command for every running job whose next action is within the lookahead."""
    return coordinators.materialization_trigger(timezone.now())


@shared_task(name="statusservice.input_checks", ignore_result=True)
def input_checks() -> int:
    """Queue input checks for jobs with waiting actions whose check is due (nominal time reached, backoff over)."""
    return coordinators.input_checks(timezone.now())


@shared_task(name="statusservice.due_start", ignore_result=True)
def due_start() -> dict[str, int]:
    """A helper of the input checks' due start: takes chunks of due jobs beside it (ADR 0026)."""
    return start_due(timezone.now()).as_dict()


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
