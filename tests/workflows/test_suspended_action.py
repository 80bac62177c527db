"""A suspended workflow makes its coordinator action SUSPENDED, and resume makes it RUNNING again (issue 24, item 7).

Oozie shows a coordinator action SUSPENDED while its workflow is. The action still counts
against the job's concurrency; its run's end, held while the workflow is suspended, settles it
after resume; a kill while suspended ends it KILLED. Each change is in the action's history.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from coordinators.choices import ACTION_ACTIVE, ActionStatus
from coordinators.models import CoordinatorAction, StatusChange
from tests.support.coordinator_apps import prop
from tests.support.engine import run_pending_commands
from tests.support.workflow_nodes import node_of
from workflows import parents, runner
from workflows.choices import NodeStatus, WorkflowStatus
from workflows.services import request_control

pytestmark = pytest.mark.django_db(transaction=True)

Launch = Callable[..., CoordinatorAction]


def verb(action: CoordinatorAction, name: str) -> None:
    assert request_control(action.external_id, name, check=lambda workflow: None)
    run_pending_commands()
    action.refresh_from_db()


def history(action: CoordinatorAction) -> list[tuple[str, str]]:
    changes = StatusChange.objects.filter(kind=StatusChange.Kind.ACTION, object_id=action.id).order_by("id")
    return [(change.from_status, change.to_status) for change in changes]


def test_suspend_and_resume_of_the_run_show_on_the_action(launched: Launch, tmp_path: Path) -> None:
    action = launched("examples.record", properties=prop("log", f"file://{tmp_path / 'ran.jsonl'}"))
    node = node_of(action)
    claimed = runner.claim(node.id, 1, "w1@host:1")
    assert claimed is not None
    parents.started(claimed.workflow, claimed)  # the worker's start report: RUNNING

    verb(action, "suspend")
    assert action.status == ActionStatus.SUSPENDED and ActionStatus.SUSPENDED in ACTION_ACTIVE
    assert action.started_at is not None

    # The task ends while the workflow is suspended: its end is held, the action stays SUSPENDED.
    outcome = runner.Outcome(NodeStatus.OK)
    assert runner.record(node.id, 1, outcome) == NodeStatus.OK
    run_pending_commands()
    action.refresh_from_db()
    assert action.status == ActionStatus.SUSPENDED

    verb(action, "resume")
    assert action.status == ActionStatus.SUCCEEDED  # resumed (RUNNING), then its held end settled it
    assert history(action)[-3:] == [(ActionStatus.RUNNING, ActionStatus.SUSPENDED),
                                    (ActionStatus.SUSPENDED, ActionStatus.RUNNING),
                                    (ActionStatus.RUNNING, ActionStatus.SUCCEEDED)]


def test_a_resumed_action_runs_on_and_a_killed_suspended_one_is_killed(launched: Launch) -> None:
    action = launched()
    verb(action, "suspend")  # suspended before any worker claimed its node
    assert action.status == ActionStatus.SUSPENDED
    verb(action, "resume")
    assert action.status == ActionStatus.RUNNING
    verb(action, "suspend")
    verb(action, "kill")
    assert action.status == ActionStatus.KILLED
    assert node_of(action).workflow.status == WorkflowStatus.KILLED
