"""The figures: read from the database at scrape time with a few bounded aggregate queries (ADR 0014)."""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Max, Min, Model, Q
from django.utils import timezone
from django.utils.module_loading import autodiscover_modules

from batches.choices import BatchStatus
from batches.choices import JobStatus as BatchJobStatus
from batches.models import Batch, BatchJob
from bundles.choices import BundleStatus
from bundles.models import BundleJob
from coordinators.choices import ACTION_ACTIVE, ACTION_PENDING, ActionStatus, JobStatus
from coordinators.models import CoordinatorAction, CoordinatorJob
from kernel.lookups import in_constants
from workflows.choices import WORKFLOW_TERMINAL, NodeStatus, WorkflowStatus
from workflows.models import WorkflowJob, WorkflowNode
from xcommands.base import registered_names
from xcommands.choices import ACTIVE_STATUSES, LEASED_STATUSES, CommandStatus
from xcommands.models import Command


def window_seconds() -> int:
    """How far back finished commands count for the time histograms (METRICS_WINDOW_SECONDS)."""
    return max(1, int(settings.METRICS_WINDOW_SECONDS))


def sample_size() -> int:
    """How many of the most recently enqueued commands the histograms look at (METRICS_COMMAND_SAMPLE)."""
    return max(1, int(settings.METRICS_COMMAND_SAMPLE))


@dataclass(frozen=True)
class CommandLoad:
    """One command class's share of the queue: commands waiting, leased and parked, and the oldest waiting."""

    queued: int = 0
    running: int = 0
    parked: int = 0
    oldest_queued_at: datetime | None = None


@dataclass(frozen=True)
class FinishedCommand:
    """One recently finished command: how long it waited for its first start, and ran (retries included)."""

    name: str
    status: str
    wait_seconds: float
    run_seconds: float
    finished_at: datetime


@dataclass(frozen=True)
class Figures:
    """Everything the monitoring endpoints show, as read at `computed_at`.

    `statuses` maps an entity (coordinator_jobs, coordinator_actions, bundle_jobs,
    workflow_jobs, batches, batch_jobs) to a count per status, every status of its enum
    present (zero included) so series never vanish.
    """

    computed_at: datetime
    window_seconds: int
    sample_size: int
    commands: Mapping[str, CommandLoad]
    finished: tuple[FinishedCommand, ...]
    statuses: Mapping[str, Mapping[str, int]]
    due_actions: Mapping[str, int]
    oldest_due_at: datetime | None
    workers: Mapping[str, datetime]

    def age(self, moment: datetime | None) -> float:
        """Seconds from `moment` to the computation (0 for None)."""
        return 0.0 if moment is None else max(0.0, (self.computed_at - moment).total_seconds())

    def finished_by_class(self) -> dict[str, list[FinishedCommand]]:
        """The recently finished commands grouped by command class."""
        grouped: dict[str, list[FinishedCommand]] = defaultdict(list)
        for command in self.finished:
            grouped[command.name].append(command)
        return dict(grouped)


def compute_figures(now: datetime | None = None) -> Figures:
    """Read the figures: aggregates over indexes or bounded ranges, ended actions counts reused a while (ADR 0014)."""
    now = now or timezone.now()
    window, sample = window_seconds(), sample_size()
    finished, seen = _recent_commands(now, window, sample)
    actions, due, oldest_due = _action_counts(now)
    return Figures(
        computed_at=now,
        window_seconds=window,
        sample_size=sample,
        commands=_command_load(extra_names={command.name for command in finished}),
        finished=tuple(finished),
        statuses={"coordinator_actions": actions, **_job_statuses()},
        due_actions=due,
        oldest_due_at=oldest_due,
        workers=_workers(seen),
    )


@functools.cache
def _import_commands() -> None:
    """Register every app's command classes, so each web process reports the same classes (zeros included)."""
    autodiscover_modules("commands")


def _command_load(extra_names: Iterable[str]) -> dict[str, CommandLoad]:
    """Active commands per class (the partial index on active commands bounds the scan to the backlog)."""
    _import_commands()
    rows = (
        Command.objects.filter(in_constants("status", ACTIVE_STATUSES))
        .values("name", "status")
        .annotate(n=Count("id"), oldest=Min("enqueued_at"))
        .order_by()
    )
    counts: dict[str, dict[str, Any]] = {
        name: {"queued": 0, "running": 0, "parked": 0, "oldest_queued_at": None}
        for name in {*registered_names(), *extra_names}
    }
    for row in rows:
        entry = counts.setdefault(row["name"], {"queued": 0, "running": 0, "parked": 0, "oldest_queued_at": None})
        if row["status"] == CommandStatus.PENDING:
            entry["queued"] += row["n"]
            entry["oldest_queued_at"] = row["oldest"]
        elif row["status"] in LEASED_STATUSES:
            entry["running"] += row["n"]
        else:
            entry["parked"] += row["n"]
    return {name: CommandLoad(**entry) for name, entry in sorted(counts.items())}


def _recent_commands(
    now: datetime, window: int, sample: int
) -> tuple[list[FinishedCommand], dict[str, datetime]]:
    """Commands finished in the window among the `sample` last enqueued (a primary key range), and
    who ran them: the worker of each one's last attempt, with when it ended."""
    # The id of the sample-th newest command: the range [floor, max] is read through the primary key.
    floor = next(iter(Command.objects.order_by("-id").values_list("id", flat=True)[sample - 1:sample]), None)
    rows = Command.objects.filter(
        finished_at__gte=now - timedelta(seconds=window), started_at__isnull=False
    ).values_list("name", "status", "enqueued_at", "started_at", "finished_at", "history")
    if floor is not None:
        rows = rows.filter(id__gte=floor)
    finished: list[FinishedCommand] = []
    seen: dict[str, datetime] = {}
    for name, status, enqueued_at, started_at, finished_at, history in rows:
        if started_at is None or finished_at is None:  # excluded by the filter; keeps the types honest
            continue
        finished.append(
            FinishedCommand(
                name=name,
                status=status,
                wait_seconds=max(0.0, (started_at - enqueued_at).total_seconds()),
                run_seconds=max(0.0, (finished_at - started_at).total_seconds()),
                finished_at=finished_at,
            )
        )
        last = history[-1] if isinstance(history, list) and history else {}
        worker = last.get("worker") if isinstance(last, dict) else None
        if isinstance(worker, str) and worker:
            _see(seen, worker, finished_at)
    return finished, seen


def _see(seen: dict[str, datetime], worker: str, moment: datetime | None) -> None:
    if moment is not None and (worker not in seen or seen[worker] < moment):
        seen[worker] = moment


def _workers(seen: dict[str, datetime]) -> dict[str, datetime]:
    """When each worker was last heard of: lease heartbeats of what it runs now (each renewal sets
    `lease_expires_at` to now + the lease), else the end of its last recent command."""
    seen = dict(seen)
    command_lease = timedelta(seconds=int(settings.COMMAND_LEASE_SECONDS))
    leased = (
        Command.objects.filter(in_constants("status", LEASED_STATUSES), lease_expires_at__isnull=False)
        .exclude(lease_owner="")
        .values("lease_owner")
        .annotate(last=Max("lease_expires_at"))
        .order_by()
    )
    for row in leased:
        _see(seen, row["lease_owner"], row["last"] - command_lease)
    node_lease = timedelta(seconds=int(settings.WORKFLOW_LEASE_SECONDS))
    nodes = (
        WorkflowNode.objects.filter(status=NodeStatus.RUNNING, lease_expires_at__isnull=False)
        .exclude(worker="")
        .values("worker")
        .annotate(last=Max("lease_expires_at"))
        .order_by()
    )
    for node in nodes:
        _see(seen, node["worker"], node["last"] - node_lease)
    return dict(sorted(seen.items()))


def _status_counts(model: type[Model], choices: Iterable[str]) -> dict[str, int]:
    """A count per status (GROUP BY over the model's status index), zero for statuses no row has."""
    counts = {str(status): 0 for status in choices}
    for row in model._default_manager.values("status").annotate(n=Count("pk")).order_by():
        counts[str(row["status"])] = int(row["n"])
    return counts


def _workflow_statuses() -> dict[str, int]:
    """Workflow runs by status: the live ones at every call (a range of the status index), the ended ones, which
    only grow (one per coordinator action: millions), by one GROUP BY reused as the ended actions' counts are."""
    counts = {str(status): 0 for status in WorkflowStatus.values}
    live = WorkflowJob.objects.filter(status__in=sorted(set(counts) - WORKFLOW_TERMINAL)).values("status").annotate(n=Count("pk")).order_by()
    counts.update({str(row["status"]): int(row["n"]) for row in live})
    reuse = ended_actions_seconds()
    ended: dict[str, int] | None = cache.get(ENDED_WORKFLOWS_CACHE_KEY) if reuse else None
    if ended is None:
        rows = WorkflowJob.objects.filter(status__in=sorted(WORKFLOW_TERMINAL)).values("status").annotate(n=Count("pk")).order_by()
        ended = {str(row["status"]): int(row["n"]) for row in rows}
        if reuse:
            cache.set(ENDED_WORKFLOWS_CACHE_KEY, ended, reuse)
    counts.update(ended)
    return counts


def _job_statuses() -> dict[str, dict[str, int]]:
    """Jobs, bundles, workflow runs, batches and batch jobs by status (each table has an index leading with status)."""
    return {
        "coordinator_jobs": _status_counts(CoordinatorJob, JobStatus.values),
        "bundle_jobs": _status_counts(BundleJob, BundleStatus.values),
        "workflow_jobs": _workflow_statuses(),
        "batches": _status_counts(Batch, BatchStatus.values),
        "batch_jobs": _status_counts(BatchJob, BatchJobStatus.values),
    }


ENDED_ACTIONS_CACHE_KEY = "monitoring:ended-actions"
ENDED_WORKFLOWS_CACHE_KEY = "monitoring:ended-workflows"


def ended_actions_seconds() -> int:
    """How long the counts of ended actions (a scan of the whole table) are reused (METRICS_ENDED_ACTIONS_SECONDS)."""
    return max(0, int(settings.METRICS_ENDED_ACTIONS_SECONDS))


def _action_counts(now: datetime) -> tuple[dict[str, int], dict[str, int], datetime | None]:
    """Actions by status, due actions (WAITING/READY whose nominal time passed) and the oldest due one's nominal time.

    Pending and running actions are counted at every scrape through their partial indexes
    (cost: the live actions); ended ones, which only grow, by one full GROUP BY reused for
    METRICS_ENDED_ACTIONS_SECONDS through Django's cache.
    """
    counts = {str(status): 0 for status in ActionStatus.values}
    due = {str(status): 0 for status in sorted(ACTION_PENDING)}
    oldest: datetime | None = None
    is_due = Q(nominal_time__lte=now)
    pending = (
        CoordinatorAction.objects.filter(in_constants("status", ACTION_PENDING))
        .values("status")
        .annotate(n=Count("pk"), due=Count("pk", filter=is_due), oldest=Min("nominal_time", filter=is_due))
        .order_by()
    )
    for row in pending:
        counts[str(row["status"])] = int(row["n"])
        due[str(row["status"])] = int(row["due"])
        if row["oldest"] is not None and (oldest is None or row["oldest"] < oldest):
            oldest = row["oldest"]
    active = CoordinatorAction.objects.filter(in_constants("status", ACTION_ACTIVE)).values("status").annotate(n=Count("pk")).order_by()
    for live in active:
        counts[str(live["status"])] = int(live["n"])
    reuse = ended_actions_seconds()
    ended: dict[str, int] | None = cache.get(ENDED_ACTIONS_CACHE_KEY) if reuse else None
    if ended is None:
        rows = (
            CoordinatorAction.objects.exclude(status__in=sorted(ACTION_PENDING | ACTION_ACTIVE))
            .values("status")
            .annotate(n=Count("pk"))
            .order_by()
        )
        ended = {str(row["status"]): int(row["n"]) for row in rows}
        if reuse:
            cache.set(ENDED_ACTIONS_CACHE_KEY, ended, reuse)
    counts.update(ended)
    return counts, due, oldest


