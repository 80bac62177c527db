"""Workflow runtime tests: a coordinator whose first action is launched (SUBMITTED, its node PREP).

The helpers (`coordinator_xml`, `prop`, `node_of`) are in tests/support/coordinator_apps.py and
tests/support/workflow_nodes.py.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User

from coordinators.choices import ActionStatus
from coordinators.models import CoordinatorAction
from coordinators.services import submit_coordinator
from statusservice.tasks import input_checks
from tests.support.coordinator_apps import coordinator_xml
from tests.support.engine import run_pending_commands


@pytest.fixture
def launched(in_process_engine: None) -> Callable[..., CoordinatorAction]:
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
