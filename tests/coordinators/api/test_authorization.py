"""Who may suspend, kill and rerun a job, through every interface (native API, Oozie API, CLI, admin): owner, ACL users and groups, admins; nobody else."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from coordinators.choices import ActionStatus, JobStatus
from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.services import submit_coordinator
from kernel.permissions import can_modify
from tests.coordinators.api.factories import api, coordinator_xml, user, window
from tests.oozieapi.client import Oozie, error_of
from tests.support.engine import run_pending_commands
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)

VERBS = ("suspend", "kill", "rerun")


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Commands run in process, doorbells go to the private Redis."""


def native(account: User, job_id: str, verb: str) -> tuple[bool, str]:
    body = {"type": "action", "scope": "1"} if verb == "rerun" else {}
    response = api(account).post(f"/api/v1/coordinator-jobs/{job_id}/{verb}/", body, format="json")
    assert response.status_code in (202, 403), response.content
    return response.status_code == 202, response.content.decode()


def oozie(account: User, job_id: str, verb: str) -> tuple[bool, str]:
    params = {"type": "action", "scope": "1"} if verb == "rerun" else {}
    response = Oozie(account).put(f"job/{job_id}", action="coord-rerun" if verb == "rerun" else verb, **params)
    status, code, message = error_of(response)
    assert status in (200, 403), message
    if status == 403:
        assert code == "E0509" and f"User [{account.username}] not authorized for Coord job [{job_id}]" in message
    return status == 200, message


def cli(account: User, job_id: str, verb: str) -> tuple[bool, str]:
    args = [f"-{verb}", job_id, "-user", account.username] + (["-action", "1"] if verb == "rerun" else [])
    try:
        call_command("job", *args, stdout=io.StringIO())
    except CommandError as exc:
        return False, str(exc)
    return True, ""


INTERFACES: dict[str, Callable[[User, str, str], tuple[bool, str]]] = {"native": native, "oozie": oozie, "cli": cli}


@pytest.fixture
def job(ann: User) -> CoordinatorJob:
    """ann's running job, ACL `ops,dave`, action 1 FAILED (so it can be rerun)."""
    submitted = submit_coordinator(coordinator_xml(), {**window(), "oozie.job.acl": "ops, dave"}, owner=ann)
    run_pending_commands()
    CoordinatorAction.objects.filter(pk=f"{submitted.id}@1").update(status=ActionStatus.FAILED)
    return CoordinatorJob.objects.get(pk=submitted.pk)


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("interface", INTERFACES)
def test_another_user_cannot_act_on_the_job(job: CoordinatorJob, bob: User, interface: str, verb: str) -> None:
    """bob is neither owner, nor in the ACL, nor admin: refused (403 / E0509 / CLI error), nothing queued."""
    commands = Command.objects.count()
    done, message = INTERFACES[interface](bob, job.id, verb)
    assert not done
    assert "bob" in message and job.id in message
    assert Command.objects.count() == commands
    run_pending_commands()
    assert CoordinatorJob.objects.get(pk=job.pk).status == JobStatus.RUNNING
    assert CoordinatorAction.objects.get(pk=f"{job.id}@1").status == ActionStatus.FAILED


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("interface", INTERFACES)
@pytest.mark.parametrize("who", ["acl-user", "acl-group", "admin", "owner"])
def test_owner_acl_and_admins_may_act(job: CoordinatorJob, ann: User, carol: User, admin: User, who: str, interface: str, verb: str) -> None:
    """The owner, a user named in oozie.job.acl, a member of a group named there, and an admin may."""
    account = {"acl-user": lambda: user("dave"), "acl-group": lambda: carol, "admin": lambda: admin, "owner": lambda: ann}[who]()
    commands = Command.objects.count()
    done, message = INTERFACES[interface](account, job.id, verb)
    assert done, message
    assert Command.objects.count() == commands + 1
    run_pending_commands()
    after = CoordinatorJob.objects.get(pk=job.pk).status
    expected = {"suspend": JobStatus.SUSPENDED, "kill": JobStatus.KILLED, "rerun": JobStatus.RUNNING}[verb]
    assert after == expected


ADMIN_JOBS = "/admin/coordinators/coordinatorjob/"


@pytest.mark.parametrize("verb", ["suspend", "kill"])
def test_admin_actions_are_for_admins_only(job: CoordinatorJob, bob: User, verb: str) -> None:
    """Through the admin, a plain user (not staff) and a staff user with view-only rights queue nothing.

    The admin has no rerun action (rerun goes through the APIs and the CLI); staff with change rights
    (coordinators.change_coordinatorjob) are admins for job permissions (kernel.permissions.is_admin) and may act on every job.
    """
    viewer = user("viewer")  # staff with view rights only: not a job admin
    viewer.is_staff = True
    viewer.save(update_fields=["is_staff"])
    viewer.user_permissions.add(Permission.objects.get(codename="view_coordinatorjob"))
    editor = user("editor", staff=True)
    editor.user_permissions.add(*Permission.objects.filter(codename__in=["view_coordinatorjob", "change_coordinatorjob"]))
    form = {"action": f"{verb}_jobs", "_selected_action": [job.pk]}
    commands = Command.objects.count()
    for account in (bob, viewer):
        browser = Client()
        browser.force_login(account)
        response = browser.post(ADMIN_JOBS, form)
        assert response.status_code in (200, 302, 403), account
        assert Command.objects.count() == commands, account
    assert CoordinatorJob.objects.get(pk=job.pk).status == JobStatus.RUNNING
    browser = Client()
    browser.force_login(editor)
    page = browser.post(ADMIN_JOBS, form, follow=True).content.decode()
    assert f"queued for 1 job(s): {job.pk}" in page
    assert Command.objects.count() == commands + 1


def test_an_owners_check_reads_no_permission_and_an_admins_reads_them(job: CoordinatorJob, ann: User) -> None:
    """The owner is known from the job (no query: a bulk verb checks a thousand jobs); an admin by its permissions."""
    owner = User.objects.get(pk=ann.pk)  # fresh: no permission cache
    with CaptureQueriesContext(connection) as queries:
        assert can_modify(owner, job)
    assert not queries.captured_queries
    granted = user("granted")
    granted.user_permissions.add(Permission.objects.get(codename="change_coordinatorjob"))
    fresh = User.objects.get(pk=granted.pk)
    with CaptureQueriesContext(connection) as queries:
        assert can_modify(fresh, job)
    assert queries.captured_queries, "an admin is known by its permissions"
    assert not can_modify(User.objects.get(pk=user("stranger").pk), job)
