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


def on_started(hook: Hook) -> None:
    """Call hook(workflow, node) when a worker starts running a node (after its claim committed)."""
    if hook not in _started:
        _started.append(hook)


def on_ended(hook: Hook) -> None:
    """Call hook(workflow, node) in the transaction that records a workflow's end."""
    if hook not in _ended:
        _ended.append(hook)


def started(workflow: WorkflowJob, node: WorkflowNode) -> None:
    """Tell every registered parent hook that the node started."""
    for hook in _started:
        hook(workflow, node)


def ended(workflow: WorkflowJob, node: WorkflowNode) -> None:
    """Tell every registered parent hook that the workflow ended (its status and error are set)."""
    for hook in _ended:
        hook(workflow, node)
