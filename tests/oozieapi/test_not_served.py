"""What the README lists as not served is refused cleanly (a 4xx with Oozie's error headers), and changes nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from coordinators.models import CoordinatorJob
from tests.oozieapi.client import Oozie, error_of
from tests.oozieapi.test_workflow_jobs import action_of, launch
from workflows.models import WorkflowJob

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]


@pytest.mark.parametrize("show", ["auditlog", "graph", "jmsinfo"])
def test_unserved_shows_are_e0303_on_coordinators_and_runs(ann: User, show: str) -> None:
    job = launch(ann)
    workflow = action_of(job).external_id
    for job_id in (job.id, workflow):
        status, code, message = error_of(Oozie(ann).get(f"job/{job_id}", show=show))
        assert (status, code) == (400, "E0303"), (job_id, status, code, message)
        assert show in message


@pytest.mark.parametrize("resource", ["os-env", "java-sys-properties", "jmsinfo", "list_sharelib", "update_sharelib", "purge"])
def test_unserved_admin_resources_are_e0301(ann: User, resource: str) -> None:
    status, code, message = error_of(Oozie(ann).get(f"admin/{resource}"))
    assert (status, code) == (400, "E0301") and resource in message


def test_a_workflow_application_outside_the_roots_is_refused_and_nothing_stored(ann: User) -> None:
    before = (CoordinatorJob.objects.count(), WorkflowJob.objects.count())
    response = Oozie(ann).submit({"user.name": "ann", "oozie.wf.application.path": "file:///srv/apps/wf"})
    assert error_of(response)[:2] == (400, "E0710")  # /srv/apps is not under COORD_APPLICATION_ROOTS
    assert (CoordinatorJob.objects.count(), WorkflowJob.objects.count()) == before


def test_the_sla_servlet_and_protocol_v0_are_not_found(ann: User) -> None:
    assert Oozie(ann).client.get("/oozie/v2/sla", headers=Oozie(ann).headers).status_code == 404
    assert Oozie(ann).client.get("/oozie/v0/jobs", headers=Oozie(ann).headers).status_code == 404


def test_changing_a_status_to_ignored_is_refused(ann: User) -> None:
    job = launch(ann)
    response = Oozie(ann).put(f"job/{job.id}", action="change", value="status=IGNORED")
    assert error_of(response)[0] == 400
    assert CoordinatorJob.objects.get(pk=job.pk).status == job.status
