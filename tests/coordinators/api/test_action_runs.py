"""The runs of an action in the native API and the admin: one workflow job per launch, reruns included."""

from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User
from django.test import Client

from coordinators.models import CoordinatorAction
from coordinators.services import rerun_job, submit_coordinator
from statusservice.tasks import input_checks
from tests.coordinators.api.factories import api
from tests.support.coordinator_apps import coordinator_xml
from tests.support.engine import run_pending_commands
from workflows import runner
from workflows.models import WorkflowNode

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Commands run in process, doorbells go to the private Redis."""


def failed_then_rerun(owner: User) -> CoordinatorAction:
    """Action 1 ran examples.fail (run 0 FAILED), was rerun and launched again (run 1, queued)."""
    job = submit_coordinator(coordinator_xml("examples.fail"), {}, owner=owner)
    run_pending_commands()
    input_checks()
    run_pending_commands()
    action = job.actions.get(number=1)
    node = WorkflowNode.objects.get(workflow_id=action.external_id)
    runner.run_node(node.id, 1, "w1@host")
    run_pending_commands()
    rerun_job(job.id, actor=owner, rerun_type="action", scope="1")
    run_pending_commands()
    input_checks()
    run_pending_commands()
    return CoordinatorAction.objects.get(pk=action.pk)


def test_the_action_detail_lists_its_runs(ann: User) -> None:
    """`runs`: each launch's workflow job with run number, status, times, Celery task ids and error, oldest first."""
    action = failed_then_rerun(ann)
    body = api(ann).get(f"/api/v1/coordinator-actions/{action.id}/").json()
    first, second = body["runs"]
    assert (first["run"], first["status"], second["run"], second["status"]) == (0, "FAILED", 1, "RUNNING")
    assert second["id"] == action.external_id == body["external_id"] and first["id"] != second["id"]
    assert first["error_message"].startswith("RuntimeError: example failure") and first["ended_at"]
    assert first["task_ids"] == WorkflowNode.objects.get(workflow_id=first["id"]).task_ids and len(first["task_ids"]) == 1
    assert second["error_message"] == "" and second["ended_at"] is None
    listed = api(ann).get("/api/v1/coordinator-actions/", {"job": action.job_id}).json()
    assert "runs" not in listed["results"][0]  # lists stay light: the detail has them


def test_the_admin_action_page_shows_the_runs(ann: User, client: Client) -> None:
    """The action's admin page has a table of its workflow runs (ids and statuses)."""
    action = failed_then_rerun(ann)
    operator = User.objects.create_superuser("operator", "operator@example.com", "pw")
    client.force_login(operator)
    page = client.get(f"/admin/coordinators/coordinatoraction/{quote(action.pk)}/change/").content.decode()
    runs = list(action.workflow_runs.order_by("run").values_list("id", flat=True))
    assert len(runs) == 2 and all(run_id in page for run_id in runs)
    assert "Workflow runs" in page and "FAILED" in page
