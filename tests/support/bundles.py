"""Bundle test helpers: the `make_bundle` fixture, and loops running commands, services and actions in process.

A plugin (tests/conftest.py `pytest_plugins`): every test may ask for `make_bundle`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from bundles import services
from bundles.models import BundleJob
from statusservice import bundles as bundle_services
from statusservice import coordinators as coordinator_services
from tests.bundles.factories import bundle_xml, window, write_coordinator
from tests.support.engine import run_pending_commands
from workflows.choices import NodeStatus
from workflows.models import WorkflowNode
from workflows.runner import run_node


def settle(rounds: int = 6) -> None:
    """Run queued commands and the services (bundle statuses, input checks, job statuses) until nothing changes."""
    for _ in range(rounds):
        ran = run_pending_commands()
        now = timezone.now()
        queued = bundle_services.statuses(now) + coordinator_services.input_checks(now)
        queued += coordinator_services.job_statuses(now)
        if not ran and not queued:
            return


def run_actions() -> int:
    """Run launched actions' tasks in this process (as a worker would) and settle, until none is left; how many ran."""
    ran = 0
    while True:
        queued = list(WorkflowNode.objects.filter(status=NodeStatus.PREP).values_list("pk", "attempt"))
        if not queued:
            return ran
        for node_id, attempt in queued:
            run_node(node_id, attempt, "test")
            ran += 1
        settle()


@pytest.fixture
def make_bundle(tmp_path: Path, in_process_engine: None) -> Callable[..., BundleJob]:
    """Submit a bundle of coordinators written to tmp_path; `tasks` names each coordinator's task."""

    def make(
        tasks: dict[str, str] | None = None, *, owner: User | None = None, start: bool = True,
        critical: tuple[str, ...] = (), window_minutes: tuple[int, int] = (3, 60), **kwargs: Any,
    ) -> BundleJob:
        tasks = tasks or {"hourly": "examples.noop", "daily": "examples.noop"}
        owner = owner or User.objects.get_or_create(username="ann")[0]
        paths = [(name, write_coordinator(tmp_path, name, task=task)) for name, task in tasks.items()]
        back, ahead = window_minutes
        bundle = services.submit_bundle(
            bundle_xml(paths, critical=critical, **kwargs), window(back, ahead), owner=owner, start=start
        )
        settle()
        return BundleJob.objects.get(pk=bundle.pk)

    return make
