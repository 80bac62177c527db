"""The services' clock: one beat message per tick, the periodic services run inside it, wake-ups for what is due sooner.

Idle costs one message per SERVICE_TICK_SECONDS (ADR 0017). Each tick runs, in this worker,
every service whose period has come (a Redis `SET NX PX` per service makes "its period has
come" hold cluster-wide, so two ticks at once or many workers do not multiply the scans).
Work due before the next tick is not left waiting for it: the tick (and the commands that
create such work: materialization, input checks) arms one `statusservice.wakeup` message
per kind, with an ETA at the work's due time. A wake-up runs its service and arms the next
one while work stays due before the next tick, never closer than the kind's spacing (the
old per-second periods: COORD_INPUT_TICK_SECONDS, BUNDLE_KICKOFF_SECONDS,
BATCH_DISPATCH_SECONDS). Wake-ups are an optimisation: a lost one (a worker killed, Redis
emptied) only means the next tick does the work.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import redis
from celery import current_app as app  # project.celery's app, set up by this process
from django.conf import settings
from django.utils import timezone

from batches.choices import QUEUES
from batches.models import BatchJob
from bundles.choices import BundleStatus
from bundles.models import BundleJob
from coordinators.choices import JOB_CHECKING_INPUTS, ActionStatus
from coordinators.models import CoordinatorAction
from coordinators.sla.models import NotifyStatus, SLAEvent
from coordinators.sla.service import check
from kernel import tries
from statusservice import batches, bundles, coordinators, operations, purge
from statusservice.common import setting_seconds, tick_seconds
from workflows.recovery import recover
from xcommands.recovery import purge_finished, sweep

log = logging.getLogger(__name__)

PREFIX = "statusservice:"
TICK_TASK = "statusservice.tick"
WAKEUP_TASK = "statusservice.wakeup"
SLA_NOTIFY_TASK = "statusservice.sla_notifications"
#: Commands after which the waiting actions' next checks may be due before the next tick.
ARMING_COMMANDS = frozenset({"coordinators.CoordMaterializeXCommand", "coordinators.CoordActionInputCheckXCommand"})


# --- the services ---------------------------------------------------------------------------


def _sweep(now: datetime) -> Any:
    report = sweep()
    return {"leases_expired": report.leases_expired, "rung": report.rung}


def _recover_workflows(now: datetime) -> Any:
    return recover(now)


def _purge_commands(now: datetime) -> Any:
    return purge_finished(now, timedelta(days=int(settings.COMMAND_HISTORY_DAYS)))


def _purge_tries(now: datetime) -> Any:
    return tries.purge(now)


def _purge_jobs(now: datetime) -> Any:
    """Ended jobs past their ages, in small batches, for at most PURGE_PASS_SECONDS (the next hour takes the rest)."""
    return purge.purge(now, budget_seconds=float(settings.PURGE_PASS_SECONDS)).as_dict()


def _coordinator(name: str) -> Callable[[datetime], Any]:
    def run(now: datetime) -> Any:
        if name == "recovery":
            return coordinators.recover_launches(now) + coordinators.stuck_ready(now)
        return getattr(coordinators, name)(now)

    run.__name__ = name
    return run


def _bundles(now: datetime) -> Any:
    return {"kicked_off": bundles.kickoffs(now), "paused": bundles.pause_times(now), "derived": bundles.statuses(now)}


def _bundle_kickoffs(now: datetime) -> Any:
    return bundles.kickoffs(now)


def _operations(now: datetime) -> Any:
    return operations.lost_completions(now)


def _batch_dispatch(now: datetime) -> Any:
    return batches.dispatch(now)


def _batch_housekeeping(now: datetime) -> Any:
    return batches.housekeeping(now)


def _sla_checks(now: datetime) -> Any:
    return check(now)


def _sla_notifications(now: datetime) -> Any:
    """Send the SLA deliveries as their own task, and only when some are due: a slow mail server never holds the tick."""
    if not SLAEvent.objects.filter(notify_status=NotifyStatus.PENDING, next_attempt_at__lte=now).exists():
        return 0
    app.send_task(SLA_NOTIFY_TASK, queue="services", expires=tick_seconds(), ignore_result=True)
    return 1


@dataclass(frozen=True)
class Service:
    """A periodic service: what it runs, and the setting naming its period (None: every tick)."""

    name: str
    run: Callable[[datetime], Any]
    period_setting: str | None = None
    default_period: float = 0

    def period(self) -> float:
        """Seconds between two runs (0: every tick)."""
        return setting_seconds(self.period_setting, self.default_period) if self.period_setting else self.default_period


#: In the order a tick runs them: recovery of the engine first, deliveries last.
SERVICES: tuple[Service, ...] = (
    Service("xcommands.sweep", _sweep, "COMMAND_SWEEP_SECONDS", 15),
    Service("workflows.recover", _recover_workflows, "COMMAND_SWEEP_SECONDS", 15),
    Service("coordinators.materialization_trigger", _coordinator("materialization_trigger"), "STATUS_SERVICE_SECONDS", 10),
    Service("coordinators.input_checks", _coordinator("input_checks")),
    Service("coordinators.look_ahead", _coordinator("look_ahead")),
    Service("coordinators.pause_times", _coordinator("pause_times"), "STATUS_SERVICE_SECONDS", 10),
    Service("coordinators.timeouts", _coordinator("timeouts"), "STATUS_SERVICE_SECONDS", 10),
    Service("coordinators.job_statuses", _coordinator("job_statuses"), "STATUS_SERVICE_SECONDS", 10),
    Service("coordinators.recovery", _coordinator("recovery"), "STATUS_SERVICE_SECONDS", 10),
    Service("bundles.kickoffs", _bundle_kickoffs),
    Service("bundles.services", _bundles, "STATUS_SERVICE_SECONDS", 10),
    Service("operations.lost_completions", _operations, "STATUS_SERVICE_SECONDS", 10),
    Service("batches.dispatch", _batch_dispatch),
    Service("batches.housekeeping", _batch_housekeeping, "STATUS_SERVICE_SECONDS", 10),
    Service("sla.checks", _sla_checks, "STATUS_SERVICE_SECONDS", 10),
    Service("sla.notifications", _sla_notifications, "STATUS_SERVICE_SECONDS", 10),
    Service("xcommands.purge", _purge_commands, None, 3600),
    Service("kernel.tries.purge", _purge_tries, None, 3600),
    Service("jobs.purge", _purge_jobs, None, 3600),
)


# --- Redis: who ran when, which wake-up is armed ----------------------------------------------

_clients: dict[str, Any] = {}

# Arm a wake-up unless one is armed at or before the wanted time; the key lives until shortly after it.
_ARM = """
local current = redis.call('GET', KEYS[1])
if current and tonumber(current) <= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""
# A wake-up that runs forgets itself (only itself: an earlier one armed meanwhile stays).
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def _redis() -> Any:
    """A client of the broker's Redis (the one the tick came through), or None when the broker is not Redis."""
    url = str(app.conf.broker_url or "")
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return None
    client = _clients.get(url)
    if client is None:
        client = _clients[url] = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5)
    return client


def claim_run(service: Service, tick: float) -> bool:
    """Whether this tick runs the service: once per period cluster-wide (at-least-once when Redis cannot say)."""
    period = service.period()
    if period <= tick:
        return True
    client = _redis()
    if client is None:
        return True
    # Ticks jitter: half a tick of slack keeps a 15 s service on a 10 s tick at 20 s, never 30 s.
    ttl_ms = max(1, int((period - tick / 2) * 1000))
    try:
        return bool(client.set(f"{PREFIX}ran:{service.name}", "1", nx=True, px=ttl_ms))
    except redis.RedisError:
        return True


def run_tick(now: datetime | None = None) -> dict[str, Any]:
    """Run every service whose period came, then arm the wake-ups due before the next tick; what each returned."""
    now = now or timezone.now()
    tick = tick_seconds()
    results: dict[str, Any] = {}
    for service in SERVICES:
        if not claim_run(service, tick):
            continue
        try:
            results[service.name] = service.run(now)
        except Exception:  # one broken service must not stop the others; the next tick tries again
            log.exception("periodic service %s failed", service.name)
            results[service.name] = "failed"
    for kind in WAKEUPS.values():
        arm(kind, timezone.now())
    return results


# --- wake-ups -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Wakeup:
    """Work that may fall due between ticks: when it is next due, how to run it, how close two runs may be."""

    name: str
    next_due: Callable[[datetime], datetime | None]
    run: Callable[[datetime], Any]
    spacing_setting: str

    def spacing(self) -> float:
        """The shortest time between two wake-ups of this kind (its old beat period)."""
        return max(0.0, setting_seconds(self.spacing_setting, 1))


def _next_input_check(horizon: datetime) -> datetime | None:
    return (  # a suspended job's actions arm no wake-up (idle is idle)
        CoordinatorAction.objects.filter(status=ActionStatus.WAITING, pending=False, next_check_at__lte=horizon,
                                         job__status__in=sorted(JOB_CHECKING_INPUTS))
        .order_by("next_check_at").values_list("next_check_at", flat=True).first()
    )


def _next_kickoff(horizon: datetime) -> datetime | None:
    return (
        BundleJob.objects.filter(status=BundleStatus.PREP, pending=False, kick_off_time__lte=horizon)
        .order_by("kick_off_time").values_list("kick_off_time", flat=True).first()
    )


def _next_batch_wakeup(horizon: datetime) -> datetime | None:
    return (
        BatchJob.objects.filter(
            status__in=sorted(QUEUES), dispatched=False, blocked_by__isnull=True,
            not_before__gt=timezone.now(), not_before__lte=horizon,
        ).order_by("not_before").values_list("not_before", flat=True).first()
    )


WAKEUPS: dict[str, Wakeup] = {
    wakeup.name: wakeup
    for wakeup in (
        Wakeup("input_checks", _next_input_check, _coordinator("input_checks"), "COORD_INPUT_TICK_SECONDS"),
        Wakeup("bundle_kickoffs", _next_kickoff, _bundle_kickoffs, "BUNDLE_KICKOFF_SECONDS"),
        Wakeup("batch_dispatch", _next_batch_wakeup, _batch_dispatch, "BATCH_DISPATCH_SECONDS"),
    )
}


def arm(kind: Wakeup, now: datetime, *, not_before: datetime | None = None) -> datetime | None:
    """Send one wake-up for the kind's next due work if it falls before the next tick; when it will run, or None.

    Nothing is sent when a wake-up of this kind is already armed at or before that time, when
    the broker is not Redis (the tick alone then bounds the delay), or on any error (logged).
    """
    tick = tick_seconds()
    try:
        due = kind.next_due(now + timedelta(seconds=tick))
        if due is None:
            return None
        at = max(due, not_before or now)
        client = _redis()
        if client is None:
            return None
        stamp = f"{at.timestamp():.3f}"
        keep_ms = int((max(0.0, (at - now).total_seconds()) + tick + 5) * 1000)
        if not client.eval(_ARM, 1, f"{PREFIX}wakeup:{kind.name}", stamp, keep_ms):
            return None
        app.send_task(
            WAKEUP_TASK, kwargs={"kind": kind.name, "stamp": stamp}, queue="services",
            eta=at if at > timezone.now() else None, expires=at + timedelta(seconds=tick), ignore_result=True,
        )
        return at
    except (redis.RedisError, OSError) as exc:
        log.warning("wake-up for %s not armed (the next tick does the work): %s", kind.name, exc)
    except Exception:
        log.exception("wake-up for %s not armed (the next tick does the work)", kind.name)
    return None


def run_wakeup(kind_name: str, stamp: str) -> Any:
    """Run the kind's service now, then arm the next wake-up (at least its spacing later) if work is due before the next tick."""
    kind = WAKEUPS.get(kind_name)
    if kind is None:
        log.error("unknown wake-up %r ignored", kind_name)
        return None
    client = _redis()
    if client is not None:
        try:
            client.eval(_RELEASE, 1, f"{PREFIX}wakeup:{kind.name}", stamp)
        except redis.RedisError:
            pass  # the key expires by itself shortly after its time
    now = timezone.now()
    result = kind.run(now)
    arm(kind, timezone.now(), not_before=now + timedelta(seconds=kind.spacing()))
    return result


def after_command(task_name: str) -> None:
    """After a command that may have made input checks due before the next tick (new actions, a backoff): arm one."""
    if task_name in ARMING_COMMANDS:
        arm(WAKEUPS["input_checks"], timezone.now())
