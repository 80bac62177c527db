"""Purge, as Oozie's PurgeService: ended jobs and everything that belongs to them go after configurable ages.

One pass (hourly, `jobs.purge` in statusservice.tick; `manage.py purge` by hand) takes, in
this order (ADR 0035):

1. bundles ended (terminal, not pending) more than PURGE_BUNDLE_DAYS ago whose coordinators all
   ended that long ago too, with their bundle actions and coordinators (a coordinator of a
   bundle goes with its bundle, never alone, as in Oozie);
2. standalone coordinators (no bundle) ended more than PURGE_COORDINATOR_DAYS ago;
3. standalone workflows (no coordinator action, no parent) ended more than PURGE_WORKFLOW_DAYS ago;
4. the old actions of any coordinator (Oozie's purge.old.coord.action): ended more than
   PURGE_COORDINATOR_DAYS ago, not among the job's last PURGE_KEEP_LAST_ACTIONS, and not the
   newest action of its status (so the status the job derives from its actions never changes).

With a job go its actions, their workflow runs, sub-workflows and nodes, the kernel tries, the
status history, SLA records and events. An age of 0 turns its kind off.

Never a running job: candidates are taken PURGE_BATCH at a time, each batch in its own
transaction; ended jobs' rows are locked with `skip_locked` (a job a command holds is skipped
until the next pass) and checked again in a new statement once locked (still ended, nothing
pending, no command queued on its key, every action and workflow ended): a rerun that got its
command in first keeps its job, and one that comes later waits for the lock and then finds the
job gone. Old actions of a job that may still run lock their own rows only, never the job's.

Deletes are bulk statements on id chunks, children first (one DELETE per table and chunk, no
rows loaded into Python): a dry run issues the same statements as COUNTs, so its figures are
exactly what a real pass deletes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, F, Model, OuterRef, Q, QuerySet

from bundles.choices import BUNDLE_TERMINAL
from bundles.models import BUNDLE_KIND, BundleAction, BundleJob
from coordinators.choices import ACTION_TERMINAL, JOB_TERMINAL
from coordinators.commands import (
    CoordActionsIgnoreXCommand,
    CoordIgnoreXCommand,
    CoordRerunXCommand,
)
from coordinators.models import (
    CoordinatorAction,
    CoordinatorJob,
    SLAEvent,
    SLARegistration,
    StatusChange,
)
from kernel.locking import skip_locked
from kernel.lookups import in_constants
from kernel.models import StatusRecord, TaskTry
from workflows.choices import WORKFLOW_TERMINAL
from workflows.models import NODE_KIND, WORKFLOW_KIND, WorkflowJob, WorkflowNode
from xcommands.choices import ACTIVE_STATUSES
from xcommands.models import Command

#: What a pass reports, in the order it deletes them (children before parents).
KINDS = (
    "bundles", "bundle_actions", "coordinators", "coordinator_actions", "workflows", "workflow_nodes",
    "sla_registrations", "sla_events", "status_changes", "status_records", "tries",
)
#: Ids per IN list: fewer round trips, within the database's limit on parameters (SQLite: 999).
CHUNK = 5000
#: Commands that act on a job's ended actions: while one is queued, none of its old actions goes.
ACTION_VERBS = tuple(sorted({
    CoordRerunXCommand.command_name, CoordActionsIgnoreXCommand.command_name, CoordIgnoreXCommand.command_name,
}))

M = TypeVar("M", bound=Model)


@dataclass(frozen=True)
class Policy:
    """A pass's ages as cut-off times (None: that kind is not purged), its batch size and what it keeps."""

    workflows: datetime | None
    coordinators: datetime | None
    bundles: datetime | None
    keep_last_actions: int = 100
    old_actions: bool = True
    batch: int = 100
    deadline: float | None = None  # time.monotonic() after which no new batch starts

    @classmethod
    def from_settings(cls, now: datetime, *, budget_seconds: float | None = None) -> Policy:
        """PURGE_WORKFLOW_DAYS, PURGE_COORDINATOR_DAYS, PURGE_BUNDLE_DAYS (0: off), PURGE_KEEP_LAST_ACTIONS, PURGE_BATCH."""

        def cutoff(name: str) -> datetime | None:
            days = int(getattr(settings, name))
            return now - timedelta(days=days) if days > 0 else None

        return cls(
            workflows=cutoff("PURGE_WORKFLOW_DAYS"), coordinators=cutoff("PURGE_COORDINATOR_DAYS"),
            bundles=cutoff("PURGE_BUNDLE_DAYS"), keep_last_actions=max(0, int(settings.PURGE_KEEP_LAST_ACTIONS)),
            old_actions=bool(settings.PURGE_OLD_COORD_ACTIONS), batch=max(1, int(settings.PURGE_BATCH)),
            deadline=time.monotonic() + budget_seconds if budget_seconds else None,
        )


@dataclass
class Report:
    """Rows deleted (or, in a dry run, that would be) per kind, and whether the pass ran out of time."""

    dry_run: bool = False
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    batches: int = 0
    stopped_early: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The counts, for the tick's results and the command's output."""
        return {**self.counts, "batches": self.batches, **({"stopped_early": True} if self.stopped_early else {})}


Progress = Callable[[str, Report], None]


def _chunks(ids: Sequence[str]) -> Iterator[list[str]]:
    limit = connection.features.max_query_params
    size = min(CHUNK, limit - 10) if limit else CHUNK
    for start in range(0, len(ids), size):
        yield list(ids[start:start + size])


def _live_commands(keys: Iterable[str], names: Sequence[str] = ()) -> set[str]:
    """The keys among these with a command still queued or running (of these names, when given)."""
    live: set[str] = set()
    for chunk in _chunks(sorted(set(keys))):
        rows = Command.objects.filter(in_constants("status", ACTIVE_STATUSES), key__in=chunk)
        if names:
            rows = rows.filter(name__in=names)
        live.update(rows.values_list("key", flat=True).distinct())
    return live


class _Tree:
    """Workflows and their sub-workflows, each under the owner it is purged with; which owners have a live one."""

    def __init__(self, top: Iterable[tuple[str, str, str]]) -> None:
        self.owner: dict[str, str] = {}
        self.levels: list[list[str]] = []
        self.live_owners: set[str] = set()
        level = self._add(top)
        while level:
            self.levels.append(level)
            below: list[tuple[str, str, str]] = []
            for chunk in _chunks(level):
                below += [(pk, self.owner[parent], status) for pk, parent, status in WorkflowJob.objects.filter(
                    parent_workflow_id__in=chunk).values_list("pk", "parent_workflow_id", "status")]
            level = self._add(below)
        # A sub-workflow's (and a standalone workflow's) commands are keyed on its own id.
        self.live_owners |= {self.owner[key] for key in _live_commands(self.owner)}

    def _add(self, rows: Iterable[tuple[str, str, str]]) -> list[str]:
        added = []
        for pk, owner, status in rows:
            if pk in self.owner:
                continue
            self.owner[pk] = owner
            added.append(pk)
            if status not in WORKFLOW_TERMINAL:
                self.live_owners.add(owner)
        return added

    def levels_of(self, owners: set[str]) -> list[list[str]]:
        """The levels (top first) of the workflows these owners keep."""
        return [kept for level in self.levels if (kept := [pk for pk in level if self.owner[pk] in owners])]


class _Pass:
    """One purge pass: deletes (or counts) children before parents, batch by batch, reporting progress."""

    def __init__(self, policy: Policy, *, dry_run: bool, progress: Progress | None) -> None:
        self.policy, self.dry_run, self.progress = policy, dry_run, progress
        self.report = Report(dry_run=dry_run)
        self.gone_coordinators: set[str] = set()  # a dry run's old actions skip jobs it counted whole

    # --- deleting ---------------------------------------------------------------------------

    def take(self, kind: str, queryset: QuerySet[M]) -> None:
        """Delete the rows in one statement (children are gone already: nothing cascades), or count them."""
        self.report.counts[kind] += queryset.count() if self.dry_run else queryset._raw_delete(queryset.db)

    def drop_workflows(self, levels: list[list[str]]) -> None:
        """Workflows, their nodes and tries (the node tries, and the commands keyed on a workflow's own id)."""
        ids = [pk for level in levels for pk in level]
        for chunk in _chunks(ids):
            self.take("tries", TaskTry.objects.filter(job_id__in=chunk, kind__in=[TaskTry.Kind.NODE, TaskTry.Kind.COMMAND]))
            self.take("status_records", StatusRecord.objects.filter(kind=WORKFLOW_KIND, object_id__in=chunk))
            self.take("status_records", StatusRecord.objects.filter(kind=NODE_KIND, parent_id__in=chunk))
            self.take("workflow_nodes", WorkflowNode.objects.filter(workflow_id__in=chunk))
        for level in reversed(levels):  # sub-workflows before their parents
            for chunk in _chunks(level):
                self.take("workflows", WorkflowJob.objects.filter(pk__in=chunk))

    def drop_coordinators(self, job_ids: list[str], tree: _Tree) -> None:
        """Whole coordinator jobs: runs, command tries, history, SLA records, actions, then the jobs."""
        self.drop_workflows(tree.levels_of(set(job_ids)))
        for chunk in _chunks(job_ids):
            self.take("tries", TaskTry.objects.filter(job_id__in=chunk, kind=TaskTry.Kind.COMMAND))
            self.take("status_changes", StatusChange.objects.filter(job_id__in=chunk))
            self.take("sla_events", SLAEvent.objects.filter(job_id__in=chunk))
            self.take("sla_registrations", SLARegistration.objects.filter(job_id__in=chunk))
            self.take("coordinator_actions", CoordinatorAction.objects.filter(job_id__in=chunk))
            self.take("coordinators", CoordinatorJob.objects.filter(pk__in=chunk))
        self.gone_coordinators.update(job_ids)

    def drop_actions(self, action_ids: list[str], tree: _Tree) -> None:
        """Old actions of a job that stays: their runs, history and SLA records, then the actions."""
        self.drop_workflows(tree.levels_of(set(action_ids)))
        for chunk in _chunks(action_ids):
            self.take("status_changes", StatusChange.objects.filter(object_id__in=chunk, kind=StatusChange.Kind.ACTION))
            self.take("sla_events", SLAEvent.objects.filter(registration_id__in=chunk))
            self.take("sla_registrations", SLARegistration.objects.filter(action_id__in=chunk))
            self.take("coordinator_actions", CoordinatorAction.objects.filter(pk__in=chunk))

    # --- checking ---------------------------------------------------------------------------

    def coordinators_ended(self, job_ids: list[str], cutoff: datetime) -> tuple[list[str], _Tree]:
        """Those of these jobs that ended before the cut-off with nothing of theirs live (one fresh look)."""
        live_action = CoordinatorAction.objects.filter(job=OuterRef("pk")).filter(
            Q(pending=True) | ~Q(status__in=sorted(ACTION_TERMINAL)))
        ended: list[str] = []
        for chunk in _chunks(job_ids):
            ended += CoordinatorJob.objects.filter(
                pk__in=chunk, status__in=sorted(JOB_TERMINAL), pending=False, last_modified__lt=cutoff,
            ).exclude(Exists(live_action)).values_list("pk", flat=True)
        busy = _live_commands(ended)
        ended = [pk for pk in ended if pk not in busy]
        runs: list[tuple[str, str, str]] = []
        for chunk in _chunks(ended):
            runs += WorkflowJob.objects.filter(coord_action__job_id__in=chunk).values_list(
                "pk", "coord_action__job_id", "status")
        tree = _Tree(runs)
        return [pk for pk in ended if pk not in tree.live_owners], tree

    # --- the passes -------------------------------------------------------------------------

    def in_batches(self, name: str, queryset: QuerySet[M], order: tuple[str, str], handle: Callable[[list[tuple[Any, ...]]], None],
                   *, extra: tuple[str, ...] = ()) -> None:
        """Hand pages of (pk, order value, *extra) rows, in keyset order, to `handle`: one transaction each, locked unless dry."""
        key, pk = order
        after: tuple[Any, Any] | None = None
        while True:
            if self.policy.deadline is not None and time.monotonic() > self.policy.deadline:
                self.report.stopped_early = True
                return
            with transaction.atomic():
                page = queryset
                if after is not None:
                    page = page.filter(Q(**{f"{key}__gt": after[0]}) | Q(**{key: after[0], f"{pk}__gt": after[1]}))
                page = page.order_by(key, pk)
                if not self.dry_run:
                    page = skip_locked(page)
                rows = list(page.values_list(pk, key, *extra)[:self.policy.batch])
                if not rows:
                    return
                after = (rows[-1][1], rows[-1][0])
                handle(rows)
            self.report.batches += 1
            if self.progress is not None:
                self.progress(name, self.report)

    def purge_bundles(self, cutoff: datetime) -> None:
        """Ended bundles whose coordinators all ended before the cut-off too, with everything theirs."""
        ended = BundleJob.objects.filter(status__in=sorted(BUNDLE_TERMINAL), pending=False, last_modified__lt=cutoff)

        def handle(rows: list[tuple[Any, ...]]) -> None:
            ids = list(ended.filter(pk__in=[row[0] for row in rows]).values_list("pk", flat=True))  # a fresh look
            busy = _live_commands(ids)
            members: dict[str, list[str]] = {pk: [] for pk in ids if pk not in busy}
            for coord, bundle in CoordinatorJob.objects.filter(bundle_id__in=list(members)).values_list("pk", "bundle_id"):
                members[bundle].append(coord)
            for coord, bundle in BundleAction.objects.filter(
                    bundle_id__in=list(members), coord_job__isnull=False).values_list("coord_job_id", "bundle_id"):
                if coord not in members[bundle]:
                    members[bundle].append(coord)
            coords = [coord for group in members.values() for coord in group]
            if not self.dry_run:  # only ended ones are locked; one a command holds keeps its bundle for the next pass
                locked = set(skip_locked(CoordinatorJob.objects.filter(
                    pk__in=coords, status__in=sorted(JOB_TERMINAL))).values_list("pk", flat=True))
                coords = [coord for coord in coords if coord in locked]
            ended_coords, tree = self.coordinators_ended(coords, cutoff)
            done = set(ended_coords)
            bundles = [pk for pk, group in members.items() if all(coord in done for coord in group)]
            for chunk in _chunks(bundles):
                self.take("tries", TaskTry.objects.filter(job_id__in=chunk, kind=TaskTry.Kind.COMMAND))
                self.take("bundle_actions", BundleAction.objects.filter(bundle_id__in=chunk))
                self.take("status_records", StatusRecord.objects.filter(kind=BUNDLE_KIND, object_id__in=chunk))
            self.drop_coordinators([coord for pk in bundles for coord in members[pk]], tree)
            for chunk in _chunks(bundles):
                self.take("bundles", BundleJob.objects.filter(pk__in=chunk))

        self.in_batches("bundles", ended, ("last_modified", "pk"), handle)

    def purge_coordinators(self, cutoff: datetime) -> None:
        """Ended coordinators of no bundle, with everything theirs."""
        ended = CoordinatorJob.objects.filter(
            status__in=sorted(JOB_TERMINAL), pending=False, last_modified__lt=cutoff, bundle_id="",
            bundle_action__isnull=True,
        )

        def handle(rows: list[tuple[Any, ...]]) -> None:
            ids, tree = self.coordinators_ended([row[0] for row in rows], cutoff)
            self.drop_coordinators(ids, tree)

        self.in_batches("coordinators", ended, ("last_modified", "pk"), handle)

    def purge_workflows(self, cutoff: datetime) -> None:
        """Ended workflows of no coordinator action and no parent, with their sub-workflows."""
        ended = WorkflowJob.objects.filter(
            coord_action__isnull=True, parent_workflow__isnull=True, status__in=sorted(WORKFLOW_TERMINAL),
            ended_at__lt=cutoff,
        )

        def handle(rows: list[tuple[Any, ...]]) -> None:
            fresh = ended.filter(pk__in=[row[0] for row in rows]).values_list("pk", "status")  # a fresh look
            tree = _Tree((pk, pk, status) for pk, status in fresh)
            self.drop_workflows(tree.levels_of(set(tree.owner.values()) - tree.live_owners))

        self.in_batches("workflows", ended, ("ended_at", "pk"), handle)

    def old_actions(self, cutoff: datetime) -> QuerySet[CoordinatorAction]:
        """Ended actions past the cut-off, outside their job's last N, each with a newer action of its status."""
        newer_alike = CoordinatorAction.objects.filter(
            job=OuterRef("job"), status=OuterRef("status"), nominal_time__gt=OuterRef("nominal_time"))
        return CoordinatorAction.objects.filter(
            in_constants("status", ACTION_TERMINAL), pending=False, ended_at__lt=cutoff,
            number__lte=F("job__last_action_number") - self.policy.keep_last_actions,
        ).filter(Exists(newer_alike))

    def purge_old_actions(self, cutoff: datetime) -> None:
        """The old actions of coordinators that stay (Oozie's purge.old.coord.action); the job's row is never locked."""
        old = self.old_actions(cutoff)

        def handle(rows: list[tuple[Any, ...]]) -> None:
            rows = [row for row in rows if row[2] not in self.gone_coordinators]
            busy = _live_commands({row[2] for row in rows}, ACTION_VERBS)
            candidates = [row[0] for row in rows if row[2] not in busy]
            ids = list(old.filter(pk__in=candidates).values_list("pk", flat=True)) if candidates else []  # a fresh look
            runs: list[tuple[str, str, str]] = []
            for chunk in _chunks(ids):
                runs += WorkflowJob.objects.filter(coord_action_id__in=chunk).values_list("pk", "coord_action_id", "status")
            tree = _Tree(runs)
            self.drop_actions([pk for pk in ids if pk not in tree.live_owners], tree)

        self.in_batches("old actions", old, ("ended_at", "pk"), handle, extra=("job_id",))

    def run(self) -> Report:
        """Bundles, coordinators, workflows, then old actions; each kind only when its age is set."""
        policy = self.policy
        if policy.bundles is not None:
            self.purge_bundles(policy.bundles)
        if policy.coordinators is not None:
            self.purge_coordinators(policy.coordinators)
        if policy.workflows is not None:
            self.purge_workflows(policy.workflows)
        if policy.coordinators is not None and policy.old_actions:
            self.purge_old_actions(policy.coordinators)
        return self.report


def purge(now: datetime, *, dry_run: bool = False, progress: Progress | None = None,
          policy: Policy | None = None, budget_seconds: float | None = None) -> Report:
    """One purge pass with the configured ages (or the policy given); what went (or, dry, would go) per kind."""
    return _Pass(policy or Policy.from_settings(now, budget_seconds=budget_seconds), dry_run=dry_run,
                 progress=progress).run()
