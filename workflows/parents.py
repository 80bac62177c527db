"""Who hears when a workflow job starts and ends: its parent's app registers here.

Workflows know nothing of coordinators (imports flow from coordinators to workflows); the
coordinators app registers what a start and an end mean for the action that launched the
run. Hooks run in the transaction that records the event, so a parent's reaction (a
command on its key) commits exactly when the event does.
"""

from __future__ import annotations

from collections.abc import Callable

from workflows.models import WorkflowJob, WorkflowNode

Hook = Callable[[WorkflowJob, WorkflowNode], None]

_started: list[Hook] = []
_ended: list[Hook] = []
_held: list[Callable[[WorkflowJob, bool], None]] = []


def on_started(hook: Hook) -> None:
    """Call hook(workflow, node) when a worker starts running a node (after its claim committed)."""
    if hook not in _started:
        _started.append(hook)


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
