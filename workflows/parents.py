"""Who hears when a workflow job starts and ends: its parent's app registers here.

Workflows know nothing of coordinators (imports flow from coordinators to workflows); the
coordinators app registers what a start and an end mean for the action that launched the
run. Hooks run in the transaction that records the event, so a parent's reaction (a
command on its key) commits exactly when the event does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workflows.models import WorkflowJob, WorkflowNode

Hook = Callable[[WorkflowJob, WorkflowNode], None]

_started: list[Hook] = []
_start_statements: list[Callable[[], list[str]]] = []
_ended: list[Hook] = []
_held: list[Callable[[WorkflowJob, bool], None]] = []


def on_started(hook: Hook) -> None:
    """Call hook(workflow, node) when a worker starts running a node (after its claim committed)."""
    if hook not in _started:
        _started.append(hook)


#: True in a claim's statements only when this claim took the node (see `on_started_statements`).
CLAIMED = (
    "EXISTS (SELECT 1 FROM workflows_workflownode WHERE id = %(node)s AND status = 'RUNNING'"
    " AND worker = %(worker)s AND started_at = %(now)s)"
)


def on_started_statements(statements: Callable[[], list[str]]) -> None:
    """Run these SQL statements in the claim's own batch when a worker starts a run's node (kernel.sqlbatch).

    They may use %(workflow)s (the run's id), %(now)s (the claim's time) and %(worker)s, and
    must change nothing unless `CLAIMED` holds: a claim that took nothing runs them too. They
    are the fast twin of an `on_started` hook, for the worker's claim; other starts call the hook.
    """
    if statements not in _start_statements:
        _start_statements.append(statements)


def start_statements() -> list[str]:
    """Every registered parent's statements for a claim (see `on_started_statements`)."""
    return [statement for statements in _start_statements for statement in statements()]


#: True in an end report's statements only when this report ended the workflow (see `on_ended_statements`).
ENDED = (
    "EXISTS (SELECT 1 FROM workflows_workflowjob WHERE id = %(workflow)s AND status = %(workflow_status)s"
    " AND ended_at = %(now)s)"
)

#: What a parent does in Python after its end statements ran: (the workflow, its node, each statement's rows).
AfterEnd = Callable[[WorkflowJob, WorkflowNode, list[list[tuple[Any, ...]]]], None]
_end_statements: list[tuple[Callable[[], list[str]], AfterEnd]] = []


def on_ended_statements(statements: Callable[[], list[str]], after: AfterEnd) -> None:
    """The fast twin of an `on_ended` hook, for a worker's report of a one-node run (kernel.sqlbatch).

    The statements run in the report's own batch and may use %(workflow)s, %(now)s,
    %(workflow_status)s (how the run ended) and %(error_message)s (its error); they must change
    nothing unless `ENDED` holds. `after(workflow, node, rows)` then runs in the same transaction
    with their rows, and does what the hook would have done for whatever they did not.
    """
    if (statements, after) not in _end_statements:
        _end_statements.append((statements, after))


def end_statements() -> list[tuple[list[str], AfterEnd]] | None:
    """Every registered parent's end statements (built now) and what follows them; None if a parent has only a hook."""
    if len(_end_statements) != len(_ended):
        return None
    return [(statements(), after) for statements, after in _end_statements]


def on_ended(hook: Hook) -> None:
    """Call hook(workflow, node) in the transaction that records a workflow's end."""
    if hook not in _ended:
        _ended.append(hook)


def on_suspended_or_resumed(hook: Callable[[WorkflowJob, bool], None]) -> None:
    """Call hook(workflow, suspended) in the transaction that suspends (True) or resumes (False) a workflow."""
    if hook not in _held:
        _held.append(hook)


def suspended_or_resumed(workflow: WorkflowJob, suspended: bool) -> None:
    """Tell every registered parent hook that the workflow was suspended or resumed."""
    for hook in _held:
        hook(workflow, suspended)


def started(workflow: WorkflowJob, node: WorkflowNode) -> None:
    """Tell every registered parent hook that the node started."""
    for hook in _started:
        hook(workflow, node)


def ended(workflow: WorkflowJob, node: WorkflowNode) -> None:
    """Tell every registered parent hook that the workflow ended (its status and error are set)."""
    for hook in _ended:
        hook(workflow, node)
