"""Bulk verbs with a real worker and Redis: Oozie's `PUT /jobs` answers with the jobs' new statuses; the CLI follows to the end."""

from __future__ import annotations

import base64
import io
import json
import urllib.request
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import pytest
from django.core.management import CommandError, call_command

from coordinators.choices import JobStatus
from coordinators.models import CoordinatorJob
from operations.choices import OperationStatus
from operations.models import Operation
from tests.coordinators.api.factories import bulk_jobs, user
from tests.support.processes import WorkerProcess

pytestmark = pytest.mark.integration

ENV = {"COMMAND_SWEEP_SECONDS": "1", "COMMAND_RING_STALE_SECONDS": "2", "STATUS_SERVICE_SECONDS": "1"}


def test_oozie_bulk_kill_answers_the_killed_page_and_the_cli_reports_failures(
    live_server: Any, live_workers: Callable[..., WorkerProcess], celery_to_test_redis: str,
) -> None:
    """Oozie's client sees the jobs KILLED in the answer (the operation ran meanwhile); `jobs -resume` prints progress and failures."""
    ann, bob = user("ann"), user("bob")
    mine = bulk_jobs(ann, 4)
    live_workers(name="w1", **ENV)

    query = urlencode({"action": "kill", "jobtype": "coordinator", "filter": "user=ann;status=RUNNING", "len": 3})
    request = urllib.request.Request(f"{live_server.url}/oozie/v2/jobs?{query}", method="PUT")  # noqa: S310 - the test's server
    request.add_header("Authorization", "Basic " + base64.b64encode(b"ann:ann-password-123").decode())
    with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
        assert response.status == 200
        body = json.loads(response.read())
    assert body["total"] == 4 and body["len"] == 3 and body["operationStatus"] == OperationStatus.SUCCEEDED
    assert [job["status"] for job in body["coordinatorjobs"]] == [JobStatus.KILLED] * 3
    assert body["ids"] == mine[:0:-1]  # newest first, as Oozie sorts
    assert CoordinatorJob.objects.get(pk=mine[0]).status == JobStatus.RUNNING

    # Bob resumes ann's jobs: the operation runs and every job fails with the reason; exit status 1.
    out = io.StringIO()
    with pytest.raises(CommandError, match="4 of 4 job"):
        call_command("jobs", "-resume", "-filter", "user=ann", "-user", bob.username, stdout=out)
    text = out.getvalue()
    operation = Operation.objects.order_by("-pk").first()
    assert operation is not None and operation.type == "bulk-resume"
    assert f"operation {operation.pk}: resume of 4 coordinator job(s) started" in text
    assert "4/4 done, 4 failed, 0 skipped" in text and f"FAILED {mine[0]}: " in text and "may not modify" in text
    assert f"operation {operation.pk} FAILED" in text


def test_the_readmes_bulk_suspend_over_ended_jobs_skips_them_and_exits_0(
    live_workers: Callable[..., WorkerProcess], celery_to_test_redis: str,
) -> None:
    """`jobs -suspend -filter 'user=ann'` with two running and one SUCCEEDED job: SKIPPED line, operation SUCCEEDED, exit 0."""
    ann = user("ann")
    ids = bulk_jobs(ann, 3)
    CoordinatorJob.objects.filter(pk=ids[0]).update(status=JobStatus.SUCCEEDED)
    live_workers(name="w1", **ENV)
    out = io.StringIO()
    call_command("jobs", "-suspend", "-filter", "user=ann", "-user", "ann", stdout=out)  # no CommandError: exit 0
    text = out.getvalue()
    assert "3/3 done, 0 failed, 1 skipped" in text, text
    assert f"SKIPPED {ids[0]}: " in text and "it is SUCCEEDED" in text and "FAILED" not in text.replace("0 failed", "")
    assert "SUCCEEDED" in text.splitlines()[-1]
    assert CoordinatorJob.objects.get(pk=ids[1]).status == JobStatus.SUSPENDED
