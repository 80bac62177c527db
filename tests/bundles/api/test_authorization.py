"""Who may suspend, kill, change and rerun a bundle, through the native API, the Oozie API and the CLI: owner, ACL users and groups, admins; nobody else."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from bundles.choices import BundleStatus as B
from bundles.models import BundleJob
from coordinators.models import CoordinatorJob
from tests.bundles.api.factories import bundle_app, finish, running_bundle
from tests.bundles.factories import window
from tests.coordinators.api.factories import api, user
from tests.oozieapi.client import Oozie, error_of
from tests.support.bundles import settle
from xcommands.models import Command

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]

VERBS = ("suspend", "kill", "change", "rerun")
PAUSE = "2099-01-01T00:00Z"


def native(account: User, bundle_id: str, verb: str) -> tuple[bool, str]:
    body = {"change": {"pausetime": PAUSE}, "rerun": {"coordinators": "daily"}}.get(verb, {})
    response = api(account).post(f"/api/v1/bundle-jobs/{bundle_id}/{verb}/", body, format="json")
    assert response.status_code in (202, 403), response.content
    return response.status_code == 202, response.content.decode()


def oozie(account: User, bundle_id: str, verb: str) -> tuple[bool, str]:
    params = {"change": {"value": f"pausetime={PAUSE}"}, "rerun": {"coord-scope": "daily"}}.get(verb, {})
    action = "bundle-rerun" if verb == "rerun" else verb
    status, code, message = error_of(Oozie(account).put(f"job/{bundle_id}", action=action, **params))
    assert status in (200, 403), message
    if status == 403:
        assert code == "E0509" and f"User [{account.username}] not authorized for Coord job [{bundle_id}]" in message
    return status == 200, message


def cli(account: User, bundle_id: str, verb: str) -> tuple[bool, str]:
    extra = {"change": ["-value", f"pausetime={PAUSE}"], "rerun": ["-coordinator", "daily"]}.get(verb, [])
    try:
        call_command("job", f"-{verb}", bundle_id, "-user", account.username, *extra, stdout=io.StringIO())
    except CommandError as exc:
        return False, str(exc)
    return True, ""


INTERFACES: dict[str, Callable[[User, str, str], tuple[bool, str]]] = {"native": native, "oozie": oozie, "cli": cli}


@pytest.fixture
def bundle(ann: User, tmp_path: Path) -> BundleJob:
    """ann's running bundle, ACL `ops, dave`; daily's actions finished (so it can be rerun)."""
    started = running_bundle(ann, tmp_path, acl="ops, dave")
    finish(started, "daily")
    return started


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("interface", INTERFACES)
def test_another_user_cannot_act_on_the_bundle(bundle: BundleJob, bob: User, interface: str, verb: str) -> None:
    """bob is neither owner, nor in the ACL, nor admin: refused (403 / E0509 / CLI error naming him), nothing queued."""
    commands = Command.objects.count()
    done, message = INTERFACES[interface](bob, bundle.id, verb)
    assert not done
    assert "bob" in message and bundle.id in message
    assert Command.objects.count() == commands
    settle()
    after = BundleJob.objects.get(pk=bundle.pk)
    assert (after.status, after.pause_time) == (B.RUNNING, None)


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("interface", INTERFACES)
@pytest.mark.parametrize("who", ["acl-user", "acl-group", "admin", "owner"])
def test_owner_acl_and_admins_may_act(
    bundle: BundleJob, ann: User, carol: User, admin: User, who: str, interface: str, verb: str,
) -> None:
    """The owner, a user named in oozie.job.acl, a member of a group named there, and an admin may; the verb reaches the coordinators."""
    account = {"acl-user": lambda: user("dave"), "acl-group": lambda: carol, "admin": lambda: admin, "owner": lambda: ann}[who]()
    commands = Command.objects.count()
    done, message = INTERFACES[interface](account, bundle.id, verb)
    assert done, message
    assert Command.objects.count() == commands + 1
    settle()
    after = BundleJob.objects.get(pk=bundle.pk)
    coordinators = CoordinatorJob.objects.filter(bundle_id=bundle.id)
    if verb == "suspend":
        assert after.status == B.SUSPENDED
    elif verb == "kill":
        assert after.status == B.KILLED and {c.status for c in coordinators} == {"KILLED"}
    elif verb == "change":
        assert after.pause_time is not None and all(c.pause_time == after.pause_time for c in coordinators)
    else:
        daily = coordinators.get(bundle_action__coord_name="daily")
        assert daily.actions.filter(run_count=1).exists()


def test_a_submission_as_someone_else_needs_an_admin(ann: User, admin: User, tmp_path: Path) -> None:
    """user.name naming another user: refused for ann (403 / E0500), accepted from an admin; the owner is the caller."""
    xml = bundle_app(tmp_path)
    properties = {**window(), "user.name": "bob", "oozie.bundle.application.path": str(xml)}
    assert api(ann).post("/api/v1/bundle-jobs/", {"properties": properties}, format="json").status_code == 403
    assert error_of(Oozie(ann).submit(properties))[:2] == (403, "E0500")
    assert not BundleJob.objects.exists()
    response = api(admin).post("/api/v1/bundle-jobs/", {"properties": properties}, format="json")
    assert response.status_code == 201 and response.json()["user"] == admin.username
    created = Oozie(admin).submit(properties)
    assert created.status_code == 201 and BundleJob.objects.get(pk=created.json()["id"]).owner == admin
