"""Every try is shown where operators and clients look: the admin's action and workflow pages (with a download),
the native API's `tries`, Oozie's `show=log` and `show=errorlog`, and `manage.py job -log`."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from kernel.models import TaskTry
from tests.oozieapi.client import Oozie
from tests.support.users import staff
from tests.support.workflow_nodes import failed_action

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]


def test_the_api_lists_each_try_with_its_traceback(ann: User) -> None:
    _, action, node = failed_action(ann)
    api = APIClient()
    api.force_authenticate(ann)
    by_action = api.get(f"/api/v1/coordinator-actions/{action.id}/tries/").json()
    by_workflow = api.get(f"/api/v1/workflows/{node.workflow_id}/tries/").json()
    assert by_action["results"] == by_workflow["results"] and len(by_action["results"]) == 1
    (kept,) = by_action["results"]
    assert (kept["status"], kept["object_id"], kept["error_code"]) == ("ERROR", node.id, "RuntimeError")
    assert "in _give_up" in kept["traceback"] and "examples.fail: nothing usable for" in kept["log"]
    assert api.get("/api/v1/coordinator-actions/nope@1/tries/").status_code == 404


def test_oozie_logs_carry_each_try_and_its_traceback(ann: User) -> None:
    job, action, node = failed_action(ann)
    oozie = Oozie(ann)
    workflow_log = oozie.get(f"job/{node.workflow_id}", show="log").content.decode()
    assert f"ACTION[{node.id}] examples.fail: nothing usable for" in workflow_log
    assert re.search(rf"ERROR WorkflowNode - .*ACTION\[{re.escape(node.id)}\] attempt 1 on w1@host:\d+: ERROR: RuntimeError",
                     workflow_log)
    errors = oozie.get(f"job/{node.workflow_id}", show="errorlog").content.decode()
    assert "Traceback (most recent call last)" in errors and "in _give_up" in errors
    assert "nothing usable" not in errors  # a printed line is not an error
    coordinator_log = oozie.get(f"job/{job.id}", show="log").content.decode()
    assert f"ACTION[{action.id}] attempt 1 on w1@host" in coordinator_log and "in _give_up" in coordinator_log
    out = io.StringIO()
    call_command("job", "-log", job.id, "-user", "ann", stdout=out)
    assert f"ACTION[{action.id}] attempt 1 on w1@host" in out.getvalue() and "in _give_up" in out.getvalue()


def test_the_admin_pages_show_and_download_each_try(ann: User, settings: Any) -> None:
    _, action, node = failed_action(ann)
    operator = staff("op", "coordinators.view_coordinatoraction", "workflows.view_workflowjob")
    for url in (f"/admin/coordinators/coordinatoraction/{action.pk}/change/",
                f"/admin/workflows/workflowjob/{node.workflow_id}/change/"):
        page = operator.get(url).content.decode()
        assert 'id="tries"' in page and "in _give_up" in page and "examples.fail: nothing usable for" in page
    kept = TaskTry.objects.get(object_id=node.id)
    download = operator.get(f"/admin/tries/{kept.pk}/download/")
    assert download.status_code == 200 and "attachment;" in download["Content-Disposition"]
    body = download.content.decode()
    assert body.startswith(f"node {node.id} (task)") and "--- traceback ---" in body and "--- log ---" in body
    assert Client().get(f"/admin/tries/{kept.pk}/download/").status_code == 302  # to the login page
    settings.COORD_RESTRICT_READS = True
    assert operator.get(f"/admin/tries/{kept.pk}/download/").status_code == 403
