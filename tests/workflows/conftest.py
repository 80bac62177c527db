"""Workflow runtime tests: a coordinator whose first action is launched (SUBMITTED, its node PREP)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from coordinators.choices import ActionStatus
from coordinators.models import CoordinatorAction
from coordinators.services import submit_coordinator
from datasets.timeline import format_datetime
from statusservice.tasks import input_checks
from tests.coordinators.runtime.conftest import in_process_engine, run_pending_commands  # noqa: F401 - fixture
from workflows.models import WorkflowNode


def minute(offset: int) -> str:
    return format_datetime((timezone.now() + timedelta(minutes=offset)).replace(second=0, microsecond=0))


def coordinator_xml(task: str, *, actions: int = 1, properties: str = "", concurrency: int = 5) -> str:
    """A minute coordinator whose `actions` actions are all due now, running `task:<task>`."""
    configuration = f"<configuration>{properties}</configuration>" if properties else ""
    return f"""<coordinator-app name="wf" frequency="${{coord:minutes(1)}}" start="{minute(-actions - 1)}"
        end="{minute(-1)}" timezone="UTC" xmlns="uri:oozie:coordinator:0.4">
      <controls><concurrency>{concurrency}</concurrency></controls>
      <action><workflow><app-path>task:{task}</app-path>{configuration}</workflow></action>
    </coordinator-app>"""


def prop(name: str, value: str) -> str:
    return f"<property><name>{name}</name><value>{value}</value></property>"


@pytest.fixture
def launched(in_process_engine: None) -> Callable[..., CoordinatorAction]:  # noqa: F811
    """Submit a coordinator and run its commands until action 1 is launched; the action."""

    def launch(task: str = "examples.noop", properties: str = "", owner: str = "wf-owner") -> CoordinatorAction:
        user = User.objects.get_or_create(username=owner)[0]
        job = submit_coordinator(coordinator_xml(task, properties=properties), {}, owner=user)
        run_pending_commands()
        input_checks()
        run_pending_commands()
        action = job.actions.get(number=1)
        assert action.status == ActionStatus.SUBMITTED, action.status
        return action

    return launch


def node_of(action: CoordinatorAction) -> WorkflowNode:
    """The node of the action's current run."""
    action.refresh_from_db()
    return WorkflowNode.objects.select_related("workflow").get(workflow_id=action.external_id)
