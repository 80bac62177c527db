"""`manage.py bench purge`: how long one purge pass takes over ended coordinators with their whole history.

Stores (bulk inserts, no commands) N ended coordinator jobs of M actions, each action with a
workflow run of two nodes, a node try each, its status changes and, every tenth action, an SLA
record and event; times a dry run and then the real pass; checks that both counted the same
rows and that nothing of theirs is left. `store_history` is the tests' builder too.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.utils import timezone

from coordinators.models import (
    CoordinatorAction,
    CoordinatorJob,
    SLAEvent,
    SLARegistration,
    StatusChange,
)
from kernel.models import TaskTry
from statusservice.purge import Policy, purge
from workflows.models import WorkflowJob, WorkflowNode

Log = Callable[[str], None]
T0 = datetime(2026, 1, 1, tzinfo=UTC)
NODES = 2


@dataclass
class History:
    """What `store_history` stored: the ids, to check what a pass left."""

    jobs: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    workflows: list[str] = field(default_factory=list)


def store_history(owner: Any, *, prefix: str, jobs: int, actions: int, ended: datetime, job_status: str = "SUCCEEDED",
                  action_status: str = "SUCCEEDED", run_status: str = "SUCCEEDED", bundle_id: str = "",
                  sla_every: int = 10) -> History:
    """Bulk-insert ended coordinators with actions, runs, nodes, tries, status history and SLA rows, all ended at `ended`."""
    made = History()
    job_rows: list[CoordinatorJob] = []
    action_rows: list[CoordinatorAction] = []
    runs: list[WorkflowJob] = []
    nodes: list[WorkflowNode] = []
    tries: list[TaskTry] = []
    changes: list[StatusChange] = []
    slas: list[SLARegistration] = []
    events: list[SLAEvent] = []
    for j in range(1, jobs + 1):
        job_id = f"{j:07d}-{prefix}-C"
        made.jobs.append(job_id)
        job_rows.append(CoordinatorJob(
            id=job_id, app_name=f"purge-{j % 10}", definition="<coordinator-app/>", owner=owner, frequency="60",
            time_unit="MINUTE", timezone="UTC", start_time=T0, end_time=T0 + timedelta(days=30), status=job_status,
            last_action_number=actions, done_materializing=True, bundle_id=bundle_id,
        ))
        changes.append(StatusChange(kind="job", object_id=job_id, job_id=job_id, from_status="RUNNING",
                                    to_status=job_status, at=ended))
        tries.append(TaskTry(kind="command", object_id=str(j), job_id=job_id, root_id=job_id, status="ERROR", ended_at=ended))
        for n in range(1, actions + 1):
            action_id, run_id = f"{job_id}@{n}", f"{j:07d}{n:05d}-{prefix}-W"
            made.actions.append(action_id)
            made.workflows.append(run_id)
            nominal = T0 + timedelta(hours=n)
            action_rows.append(CoordinatorAction(
                id=action_id, job_id=job_id, number=n, nominal_time=nominal, status=action_status, external_id=run_id,
                ended_at=ended,
            ))
            runs.append(WorkflowJob(id=run_id, app_name="purge", app_path="task:examples.noop", coord_action_id=action_id,
                                    status=run_status, created_at=ended, ended_at=ended, nominal_time=nominal))
            changes.append(StatusChange(kind="action", object_id=action_id, job_id=job_id, from_status="RUNNING",
                                        to_status=action_status, at=ended))
            for k in range(NODES):
                node_id = f"{run_id}@n{k}"
                nodes.append(WorkflowNode(id=node_id, workflow_id=run_id, name=f"n{k}", task_name="examples.noop",
                                          queue="actions", status="OK", task_id=uuid.uuid4().hex, ended_at=ended))
                tries.append(TaskTry(kind="node", object_id=node_id, job_id=run_id, action_id=action_id, root_id=job_id,
                                     status="OK", ended_at=ended, log="done\n"))
            if sla_every and n % sla_every == 0:
                slas.append(SLARegistration(action_id=action_id, job_id=job_id, version="0.2", app_name="purge",
                                            user=owner.username, nominal_time=nominal, closed=True))
                events.append(SLAEvent(registration_id=action_id, job_id=job_id, event_type="END_MISS",
                                       occurred_at=ended))
    CoordinatorJob.objects.bulk_create(job_rows, batch_size=2000)
    CoordinatorAction.objects.bulk_create(action_rows, batch_size=2000)
    WorkflowJob.objects.bulk_create(runs, batch_size=2000)
    WorkflowNode.objects.bulk_create(nodes, batch_size=2000)
    TaskTry.objects.bulk_create(tries, batch_size=2000)
    StatusChange.objects.bulk_create(changes, batch_size=2000)
    SLARegistration.objects.bulk_create(slas, batch_size=2000)
    SLAEvent.objects.bulk_create(events, batch_size=2000)
    # auto_now stamps "now" on insert: the history ended long ago.
    for chunk in range(0, len(made.jobs), 500):
        CoordinatorJob.objects.filter(pk__in=made.jobs[chunk:chunk + 500]).update(last_modified=ended)
    return made


def left_of(history: History) -> int:
    """Rows of this history still stored (jobs, actions, runs, their nodes)."""
    left = 0
    for start in range(0, len(history.workflows), 500):
        runs = history.workflows[start:start + 500]
        left += WorkflowJob.objects.filter(pk__in=runs).count() + WorkflowNode.objects.filter(workflow_id__in=runs).count()
    for start in range(0, len(history.actions), 500):
        left += CoordinatorAction.objects.filter(pk__in=history.actions[start:start + 500]).count()
    return left + CoordinatorJob.objects.filter(pk__in=history.jobs).count()


def run_purge_bench(jobs: int, actions: int, log: Log) -> dict[str, Any]:
    """Store the history, time a dry run and a real pass over it; their figures."""
    owner, _ = get_user_model().objects.get_or_create(username="bench-purge")
    prefix = uuid.uuid4().hex[:8]
    now = timezone.now()
    log(f"storing {jobs} ended coordinators x {actions} actions, each with a run of {NODES} nodes")
    started = time.perf_counter()
    history = store_history(owner, prefix=prefix, jobs=jobs, actions=actions, ended=now - timedelta(days=40))
    stored_s = time.perf_counter() - started
    policy = Policy(workflows=now - timedelta(days=30), coordinators=now - timedelta(days=7),
                    bundles=now - timedelta(days=7), batch=100)
    started = time.perf_counter()
    counted = purge(now, dry_run=True, policy=policy)
    dry_s = time.perf_counter() - started
    started = time.perf_counter()
    done = purge(now, policy=policy, progress=lambda phase, report: log(f"{phase}: batch {report.batches}"))
    purge_s = time.perf_counter() - started
    rows = sum(done.counts.values())
    if counted.counts != done.counts:
        raise RuntimeError(f"the dry run counted {counted.counts}, the pass deleted {done.counts}")
    if left_of(history):
        raise RuntimeError(f"{left_of(history)} rows of the purged history are left")
    return {
        "coordinators": jobs, "actions_per_coordinator": actions, "rows_deleted": rows, "store_s": round(stored_s, 2),
        "dry_run_s": round(dry_s, 2), "purge_s": round(purge_s, 2), "rows_per_s": round(rows / purge_s) if purge_s else None,
        **{f"deleted_{kind}": count for kind, count in done.counts.items()},
    }
