"""Counting what went wrong in a chaos run, from the database alone.

Coordinator actions: every action's probe rows (one per attempt that ran to its end) are
compared with its workflow node (the attempt that was committed, the attempts whose worker
was lost) and its status. Keyed jobs: their probes ran inside their command's transaction,
so the rows are exactly the committed runs.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection

from coordinators.choices import ACTION_TERMINAL, ActionStatus
from coordinators.models import CoordinatorAction, CoordinatorJob
from tooling.chaos.probe import TABLE
from workflows.models import WorkflowJob, WorkflowNode
from xcommands.choices import TERMINAL_STATUSES, CommandStatus
from xcommands.models import Command


@dataclass
class Counts:
    """What a chaos run counts, for actions and for commands (keyed jobs)."""

    total: int = 0
    succeeded: int = 0
    lost: int = 0
    run_twice: int = 0
    run_twice_unexplained: int = 0
    out_of_order: int = 0
    overlapping_beyond_concurrency: int = 0
    stuck: int = 0
    wrongly_failed: int = 0
    examples: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        """Keep a few examples of violations for the report."""
        if len(self.examples) < 10:
            self.examples.append(text)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _probes(kind: str) -> dict[str, list[tuple[int, float, float]]]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT ident, attempt, started, ended FROM {TABLE} WHERE kind = %s", [kind])  # noqa: S608
        rows = cursor.fetchall()
    found: dict[str, list[tuple[int, float, float]]] = defaultdict(list)
    for ident, attempt, started, ended in rows:
        found[ident].append((int(attempt), float(started), float(ended)))
    return found


def max_overlap(spans: list[tuple[float, float]]) -> int:
    """The most spans running at one instant (an end and a start at the same instant do not overlap)."""
    events = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans], key=lambda e: (e[0], e[1]))
    running = peak = 0
    for _, delta in events:
        running += delta
        peak = max(peak, running)
    return peak


def analyse_actions(job_ids: list[str], expected_per_job: int) -> Counts:
    """Lost, twice, out of order, overlapping, stuck and wrongly failed coordinator actions."""
    counts = Counts()
    probes = _probes("action")
    concurrency = dict(CoordinatorJob.objects.filter(pk__in=job_ids).values_list("pk", "concurrency"))
    actions = list(CoordinatorAction.objects.filter(job_id__in=job_ids).order_by("job_id", "number"))
    counts.total = len(job_ids) * expected_per_job
    counts.lost += max(0, counts.total - len(actions))  # never materialized
    runs = {run.coord_action_id: run for run in WorkflowJob.objects.filter(coord_action__job_id__in=job_ids, run=0)}
    nodes = {node.workflow_id: node for node in WorkflowNode.objects.filter(workflow__coord_action__job_id__in=job_ids)}
    committed: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for action in actions:
        node = nodes.get(action.external_id)
        rows = probes.get(node.id, []) if node is not None else []
        attempts = {attempt for attempt, _, _ in rows}
        if action.status not in ACTION_TERMINAL:
            counts.stuck += 1
            counts.note(f"stuck: {action.id} is {action.status}")
            continue
        if action.status == ActionStatus.SUCCEEDED:
            counts.succeeded += 1
            final = [(start, end) for attempt, start, end in rows if node is not None and attempt == node.attempt]
            if not final:
                counts.lost += 1
                counts.note(f"lost: {action.id} SUCCEEDED without its run having run")
            committed[action.job_id].extend(final[:1])
        else:
            counts.wrongly_failed += 1
            counts.note(f"wrongly failed: {action.id} {action.status}: {action.error_message[:200]}")
        if len(attempts) > 1 or len(rows) > len(attempts):
            counts.run_twice += 1
            lost_attempts = {entry.get("attempt") for entry in (node.history if node else []) if entry.get("outcome") == "LOST"}
            if len(rows) > len(attempts) or not (attempts - {node.attempt if node else 0}) <= lost_attempts:
                counts.run_twice_unexplained += 1
                counts.note(f"run twice without a lost worker: {action.id} attempts {sorted(attempts)}")
    for job_id, spans in committed.items():
        if max_overlap(spans) > concurrency.get(job_id, 1):
            counts.overlapping_beyond_concurrency += 1
            counts.note(f"overlap: job {job_id} ran {max_overlap(spans)} at once (concurrency {concurrency.get(job_id)})")
    # FIFO: first launches follow nominal order within each job.
    by_job: dict[str, list[tuple[Any, Any]]] = defaultdict(list)
    for action in actions:
        run = runs.get(action.id)
        if run is not None:
            by_job[action.job_id].append((action.nominal_time, run.created_at))
    for job_id, launches in by_job.items():
        launches.sort()
        inversions = sum(1 for (_, a), (_, b) in zip(launches, launches[1:], strict=False) if b < a)
        if inversions:
            counts.out_of_order += inversions
            counts.note(f"out of order: job {job_id} launched {inversions} action(s) before an older one")
    return counts


def analyse_keyed(keys: list[str], per_key: int) -> Counts:
    """Lost, twice, out of order, overlapping, stuck and wrongly failed keyed jobs (commands)."""
    counts = Counts(total=len(keys) * per_key)
    probes = _probes("keyed")
    commands = list(Command.objects.filter(key__in=keys).order_by("key", "seq"))
    counts.lost += max(0, counts.total - len(commands))
    for command in commands:
        ident = f"{command.key}#{command.params['kwargs']['configuration']['n']}"  # as the probe names it
        rows = probes.get(ident, [])
        if command.status not in TERMINAL_STATUSES:
            counts.stuck += 1
            counts.note(f"stuck: {command} ({command.last_error.strip().splitlines()[-1:] or ''})")
        elif command.status == CommandStatus.SUCCEEDED:
            counts.succeeded += 1
            if not rows:
                counts.lost += 1
                counts.note(f"lost: {command} SUCCEEDED without a committed run")
        else:
            counts.wrongly_failed += 1
            counts.note(f"wrongly failed: {command}: {command.last_error.strip()[-200:]}")
        if len(rows) > 1:
            counts.run_twice += 1
            counts.run_twice_unexplained += 1  # a committed run twice: the fence failed
            counts.note(f"committed twice: {command}")
    for key in keys:
        runs = sorted(
            (int(ident.rpartition("#")[2]), start, end)
            for ident, rows in probes.items() if ident.rpartition("#")[0] == key
            for _, start, end in rows
        )
        by_start = sorted(runs, key=lambda run: run[1])
        if [n for n, _, _ in by_start] != [n for n, _, _ in runs]:
            counts.out_of_order += 1
            counts.note(f"out of order: key {key} ran {[n for n, _, _ in by_start]}")
        for (_, _, end), (n, start, _) in zip(by_start, by_start[1:], strict=False):
            if start < end:
                counts.overlapping_beyond_concurrency += 1
                counts.note(f"overlap: key {key} job {n} started before its predecessor ended")
    return counts


def lost_attempts(job_ids: list[str]) -> list[dict[str, Any]]:
    """Every attempt of the run's actions declared lost: whose worker, from when, until when, relaunched when.

    Times are epoch seconds. `relaunched`: the start of the next attempt's probe (None when it
    never ran to its end).
    """
    probes = _probes("action")
    action_of = dict(CoordinatorAction.objects.filter(job_id__in=job_ids).values_list("external_id", "id"))
    out = []
    for node in WorkflowNode.objects.filter(workflow__coord_action__job_id__in=job_ids).only("id", "workflow_id", "history"):
        for entry in node.history:
            if entry.get("outcome") != "LOST":
                continue
            attempt = int(entry.get("attempt") or 0)
            later = [start for n, start, _ in probes.get(node.id, []) if n > attempt]
            out.append({
                "action": action_of.get(node.workflow_id, ""),
                "node": node.id,
                "attempt": attempt,
                "worker": entry.get("worker") or "",
                "started": _epoch(entry.get("started")) or _epoch(entry.get("ended")),
                "lost_at": _epoch(entry.get("ended")),
                "relaunched": min(later) if later else None,
            })
    return out


def _epoch(stamp: str | None) -> float:
    return datetime.fromisoformat(stamp).timestamp() if stamp else 0.0
