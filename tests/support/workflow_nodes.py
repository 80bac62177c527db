"""The workflow node a coordinator action runs; an action whose run failed once."""

from __future__ import annotations

from django.contrib.auth.models import User

from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.services import submit_coordinator
from statusservice.tasks import input_checks
from tests.support.coordinator_apps import coordinator_xml
from tests.support.engine import run_pending_commands
from workflows import runner
from workflows.models import WorkflowNode


def node_of(action: CoordinatorAction) -> WorkflowNode:
    """The node of the action's current run."""
    action.refresh_from_db()
    return WorkflowNode.objects.select_related("workflow").get(workflow_id=action.external_id)


def failed_action(owner: User) -> tuple[CoordinatorJob, CoordinatorAction, WorkflowNode]:
    """A coordinator whose first action ran examples.fail once (in this process, as a worker runs it)."""
    job = submit_coordinator(coordinator_xml("examples.fail"), {}, owner=owner)
    run_pending_commands()
    input_checks()
    run_pending_commands()
    action = CoordinatorAction.objects.get(job=job, number=1)
    node = WorkflowNode.objects.get(workflow_id=action.external_id)
    runner.run_node(node.id, node.attempt, "w1@host")
    run_pending_commands()
    return job, action, node
