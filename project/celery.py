"""The Celery app: JSON only, late acks, one message per worker slot, queues and routes.

Queues are declared here and nowhere else. Every task is routed by its name:

- ``commands``: XCommand doorbells (``<app>.<Command>XCommand``), one per runnable key head.
- ``services``: the periodic services driven by celery beat (``statusservice.*``, ``xcommands.sweep``).
- ``actions``: work launched by coordinator actions and batches (user tasks); a workflow
  node's ``workflows.run`` message goes to the queue its task is routed to.
- ``default``: everything else.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from typing import Any

from celery import Celery
from celery.concurrency import asynpool
from celery.signals import after_setup_logger, celeryd_init, task_postrun, task_prerun
from django.conf import settings
from django.db import close_old_connections, connections
from kombu import Exchange, Queue

from kernel import capture, processes
from project.broker import TRANSPORT
from project.worker_watchdog import ConsumptionWatchdog

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

QUEUE_NAMES: tuple[str, ...] = ("commands", "services", "actions", "default")
# The anonymous exchange routes straight to the list named by the routing key. Named
# exchanges route through `_kombu.binding.*` sets in Redis, which a Redis restarted empty
# (or FLUSHALL) loses: publishes would then fail until every process re-declared its queues.
TASK_QUEUES = tuple(Queue(name, Exchange(""), routing_key=name) for name in QUEUE_NAMES)


def route_task(name: str, args: Any, kwargs: Any, options: Any, task: Any = None, **kw: Any) -> dict[str, str]:
    """Route a task by its name: commands, periodic services, launched actions, default."""
    if name.endswith("XCommand"):
        return {"queue": "commands"}
    if name.startswith(("statusservice.", "xcommands.service.", "workflows.service.")):
        return {"queue": "services"}
    if name.startswith("actions.") or name.startswith("examples."):
        return {"queue": "actions"}
    return {"queue": "default"}


app = Celery("project")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    # Security: JSON only, never pickle.
    task_serializer="json",
    result_serializer="json",
    accept_content=["json"],
    result_accept_content=["json"],
    # Durability: a message is acknowledged after the task ran, and given back if the
    # worker process dies; one message per process slot so nothing sits in a dead prefetch.
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_track_started=True,
    result_expires=24 * 3600,
    # Task events cost several Redis publishes per task. Flower turns them on at runtime
    # (enable_events) while it runs; CELERY_TASK_EVENTS=true keeps them on always.
    worker_send_task_events=os.environ.get("CELERY_TASK_EVENTS", "").lower() in {"1", "true", "yes"},
    task_send_sent_event=os.environ.get("CELERY_TASK_EVENTS", "").lower() in {"1", "true", "yes"},
    # A broker outage never ends a worker or beat for good: retry connecting forever, at
    # start-up and after a connection was lost (Celery's default gives up after 100 tries
    # and the worker exits), and treat channel errors (an error reply such as OOM, or
    # READONLY from a replica after a failover) as a reason to reconnect, not to exit.
    broker_connection_retry=True,
    broker_connection_retry_on_startup=True,
    broker_connection_max_retries=None,
    broker_channel_error_retry=True,
    # Publishing must not hang a request when Redis is down: the transactional outbox
    # keeps the command and the recovery sweep rings its doorbell later.
    task_publish_retry=True,
    task_publish_retry_policy={
        "max_retries": 2,
        "interval_start": 0,
        "interval_step": 0.2,
        "interval_max": 0.5,
    },
    task_queues=TASK_QUEUES,
    task_default_queue="default",
    task_routes=(route_task,),
    timezone="UTC",
    enable_utc=True,
)


def _apply_broker_options() -> None:
    """Apply Redis transport options that depend on settings (the visibility timeout)."""
    lease = int(settings.COMMAND_LEASE_SECONDS)
    visibility = max(int(settings.BROKER_VISIBILITY_TIMEOUT), lease * 10)
    options = {
        "visibility_timeout": visibility,
        "socket_connect_timeout": 2,
        "socket_timeout": 10,
        "health_check_interval": 30,
    }
    app.conf.broker_transport_options = options
    # kombu's Redis transport can kill a worker while it closes a connection Redis dropped;
    # project.broker's cannot (see there). Only for redis:// URLs: rediss:// gets its TLS
    # defaults from kombu by that transport name, and CELERY_BROKER_TRANSPORT still wins.
    broker_url = str(settings.CELERY_BROKER_URL or "")
    if broker_url.startswith("redis://") and not getattr(settings, "CELERY_BROKER_TRANSPORT", None):
        app.conf.broker_transport = TRANSPORT
    # Storing a task's result gives up after 5 s while Redis is down rather than hold a
    # worker slot; the task and the worker carry on. Commands keep their outcome in the
    # database, and a result stored just before Redis restarts empty is lost either way.
    app.conf.result_backend_transport_options = {"retry_policy": {"timeout": 5.0}}
    app.conf.redis_socket_connect_timeout = 2
    app.conf.redis_socket_timeout = 10


_apply_broker_options()


def _check_pool_processes_often() -> None:
    """Let the worker notice a dead pool process within WORKER_POOL_CHECK_SECONDS (Celery: 5 s).

    The prefork pool finds a child that died (SIGKILL, the OOM killer) by its `maintain_pool`
    timer: its exit sentinel stays open in the sibling processes that inherited it. The message
    the child held is then requeued, and the claim of the requeued message gives the dead
    process's lease up at once (workflows.runner, xcommands.engine). A faster timer makes that
    recovery take about a second instead of five; maintain_pool costs one pass over the pool.
    """
    seconds = float(settings.WORKER_POOL_CHECK_SECONDS)
    asynpool.AsynPool.timers = property(lambda pool: {pool.maintain_pool: seconds})  # type: ignore[assignment,method-assign]


_check_pool_processes_often()
# A worker that stopped taking work while work waits stops itself, for its supervisor to restart.
app.steps["consumer"].add(ConsumptionWatchdog)
# Celery's Django fix-up closes every database connection around every task unless this is
# set: a new PostgreSQL connection per command costs more than the command. Reuse
# connections and close only broken or expired ones (CONN_MAX_AGE), as Django does per request.
app.conf["CELERY_DB_REUSE_MAX"] = 1_000_000_000


#: Tasks that run whether or not there is work (ADR 0017): their routine INFO lines are dropped.
PERIODIC_TASKS = frozenset({"statusservice.tick", "statusservice.wakeup"})
#: Where Celery logs "Sending due task" (beat), "received" and "succeeded" (worker), at INFO.
ROUTINE_LOGGERS = ("celery.beat", "celery.worker.strategy", "celery.app.trace")


class QuietPeriodicTasks(logging.Filter):
    """Drops INFO (and lower) records about PERIODIC_TASKS, so an idle service logs nothing; LOG_PERIODIC_TASKS keeps them."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep warnings and errors, records about other tasks, and everything when LOG_PERIODIC_TASKS is on."""
        if record.levelno > logging.INFO:
            return True
        if settings.LOG_PERIODIC_TASKS:
            return True
        args = record.args
        named = [args.get("name")] if isinstance(args, Mapping) else list(args or ())
        return not any(isinstance(name, str) and name in PERIODIC_TASKS for name in named)


for _name in ROUTINE_LOGGERS:
    logging.getLogger(_name).addFilter(QuietPeriodicTasks())


@celeryd_init.connect
def _remember_node_name(sender: str | None = None, **kwargs: Any) -> None:
    """The worker's node name (`w1@host`), before the pool forks: lease owners and the dashboard name
    workers as Flower does (kernel.processes)."""
    if sender:
        processes.set_node_name(str(sender))


@after_setup_logger.connect
def _keep_tries_logs(**kwargs: Any) -> None:
    """Once Celery set up the worker's logging: tasks' records at TRY_LOG_LEVEL reach each try's log (kernel.tries),
    while the worker's own log keeps its level."""
    capture.install(lower_root_level=True)


#: When this process's last task ended (time.monotonic()); None before its first.
_last_task_ended: float | None = None


@task_prerun.connect
def _before_task(**kwargs: Any) -> None:
    """Drop database connections that are broken or past CONN_MAX_AGE; skip the health check of a connection still warm.

    Django checks a connection with CONN_HEALTH_CHECKS (one `SELECT 1` round trip) before the
    first query of every task, which on PostgreSQL was a third of an action's claim. A
    connection the previous task used less than DB_HEALTH_CHECK_IDLE_SECONDS ago without a
    database error is trusted instead (ADR 0040): one that broke since fails its first query
    as it could after a check, and the runner's and the engine's retries reconnect. A
    connection that saw an error is still checked (Django's `errors_occurred`).
    """
    close_old_connections()
    idle = float(settings.DB_HEALTH_CHECK_IDLE_SECONDS)
    if _last_task_ended is None or time.monotonic() - _last_task_ended >= idle:
        return
    for conn in connections.all(initialized_only=True):
        if conn.connection is not None and not conn.errors_occurred:
            conn.health_check_done = True  # type: ignore[attr-defined]  # Django's, not in the stubs


@task_postrun.connect
def _after_task(**kwargs: Any) -> None:
    """Drop database connections that are broken or past CONN_MAX_AGE; remember when the task ended."""
    global _last_task_ended  # noqa: PLW0603  # one process-wide clock, set by Celery's signal
    close_old_connections()
    _last_task_ended = time.monotonic()


app.autodiscover_tasks()
