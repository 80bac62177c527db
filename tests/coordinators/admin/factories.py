"""Builders for the operator pages' tests: many jobs and actions written directly (bulk_create), with known times."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.utils import timezone

from coordinators.choices import ActionStatus, JobStatus
from coordinators.models import CoordinatorAction, CoordinatorJob
from datasets.timeline import format_datetime
from workflows.models import WorkflowJob, WorkflowNode

A = ActionStatus
#: The status of action n (1-based) of a grid job: mostly succeeded, a few errors, the newest still going.
PATTERN = [A.SUCCEEDED] * 6 + [A.FAILED] + [A.SUCCEEDED] * 3 + [A.KILLED] + [A.SUCCEEDED] * 4 + [A.TIMEDOUT]


def hour(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def action_status(number: int, total: int) -> str:
    """Action `number` of `total`: the last is WAITING, the one before RUNNING, the rest follow PATTERN."""
    if number == total:
        return A.WAITING
    if number == total - 1:
        return A.RUNNING
    return PATTERN[(number - 1) % len(PATTERN)]


def definition(name: str, start: datetime, end: datetime) -> str:
    """An hourly coordinator running the no-op task (so reruns and changes can load it)."""
    return f"""<coordinator-app name="{name}" frequency="${{coord:hours(1)}}" start="{format_datetime(start)}"
        end="{format_datetime(end)}" timezone="UTC" xmlns="uri:oozie:coordinator:0.4">
      <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
    </coordinator-app>"""


def make_jobs(
    count: int, actions: int, *, owner: User | None = None, name: str = "grid-job", start: datetime | None = None,
    statuses: Sequence[str] = (JobStatus.RUNNING, JobStatus.RUNNINGWITHERROR, JobStatus.SUCCEEDED),
    wait: timedelta = timedelta(seconds=30), run: timedelta = timedelta(minutes=2, seconds=5),
) -> list[CoordinatorJob]:
    """`count` hourly jobs with `actions` actions each: created a minute before their nominal time, submitted
    `wait` after creation, started a second later and ended `run` after that (the last two still going)."""
    owner = owner or User.objects.get_or_create(username="ann")[0]
    start = start or hour(timezone.now()) - timedelta(hours=actions)
    now = timezone.now()
    stamp = now.strftime("%y%m%d%H%M%S%f")[:15]
    jobs = CoordinatorJob.objects.bulk_create(
        CoordinatorJob(
            id=f"{9000000 + i:07d}-{stamp}-C", app_name=f"{name}-{i:03d}",
            definition=definition(f"{name}-{i:03d}", start, start + timedelta(days=30)),
            configuration={}, owner=owner, status=statuses[i % len(statuses)], frequency="60", time_unit="MINUTE",
            timezone="UTC", start_time=start, end_time=start + timedelta(days=30), last_action_number=actions,
            next_materialize_at=start + timedelta(hours=actions),
        )
        for i in range(count)
    )
    rows = []
    for job in jobs:
        for n in range(1, actions + 1):
            nominal = start + timedelta(hours=n - 1)
            status = action_status(n, actions)
            created = nominal - timedelta(minutes=1)
            launched = status != A.WAITING and status != A.TIMEDOUT
            submitted = created + wait if launched else None
            started = submitted + timedelta(seconds=1) if submitted else None
            ended = started + run if started and status != A.RUNNING else None
            if status == A.TIMEDOUT:
                ended = created + timedelta(minutes=50)
            rows.append(CoordinatorAction(
                id=CoordinatorAction.action_id(job.pk, n), job=job, number=n, nominal_time=nominal,
                created_time=created, status=status, submitted_at=submitted, started_at=started, ended_at=ended,
                missing_dependencies=[[f"file:///data/raw/{nominal:%Y/%m/%d/%H}", "_SUCCESS"]]
                if status == A.WAITING else [],
            ))
    CoordinatorAction.objects.bulk_create(rows, batch_size=2000)
    return jobs


#: The status of a workflow node in a run whose action has the given status (the first node always succeeded).
NODE_STATUS: dict[str, tuple[str, str]] = {A.SUCCEEDED: ("OK", "OK"), A.FAILED: ("OK", "ERROR"), A.KILLED: ("OK", "KILLED"),
               A.RUNNING: ("OK", "RUNNING")}


def add_workflow_runs(job: CoordinatorJob, nodes: Sequence[str] = ("extract", "load")) -> list[WorkflowJob]:
    """A workflow run (a workflow application: start, its action nodes, end) for every launched action of `job`."""
    runs, rows = [], []
    for action in job.actions.exclude(status__in=[A.WAITING, A.TIMEDOUT]).order_by("number"):
        run = WorkflowJob(
            id=f"{job.pk.split('-')[0]}-{action.number:06d}-W", app_name=f"{job.app_name}-wf", app_path="file:///apps/wf",
            owner_id=job.owner_id, coord_action=action, run=action.run_count, nominal_time=action.nominal_time,
            status="SUCCEEDED", created_at=action.started_at or action.created_time,
        )
        runs.append(run)
        rows.append(WorkflowNode(id=f"{run.id}@:start:", workflow=run, name=":start:", type=":START:", status="OK"))
        statuses = NODE_STATUS.get(action.status, ("OK", "OK"))
        for i, name in enumerate(nodes):
            rows.append(WorkflowNode(
                id=f"{run.id}@{name}", workflow=run, name=name, status=statuses[min(i, len(statuses) - 1)],
                task_name="examples.noop", queue="default", task_id=f"t-{run.id}-{name}",
                started_at=(action.started_at or action.created_time) + timedelta(seconds=i),
            ))
    WorkflowJob.objects.bulk_create(runs)
    WorkflowNode.objects.bulk_create(rows)
    return runs
